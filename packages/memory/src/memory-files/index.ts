// Memory files: which workspace paths are memory (one rule) and how to find them (one walker).
export { listMemoryFiles } from "./list-memory-files.js";
export {
  isInMemoryDirectory,
  isInSharedDirectory,
  isMemoryFilePath,
  isPrivateMemoryPath,
  isSharedMemoryPath,
  MEMORY_DIRECTORY,
  MEMORY_FILE,
  SHARED_DIRECTORY,
  toRelativePath,
} from "./memory-paths.js";
