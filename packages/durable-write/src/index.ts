export {
  type DurableWriteOptions,
  fsyncDirectory,
  isDurableWriteTempFile,
  makeDirectoriesBelow,
  makeDirectoryIn,
  PRIVATE_DIRECTORY_MODE,
  PRIVATE_FILE_MODE,
  removeStaleTempFiles,
  type StagedFile,
  stageFileDurably,
  writeFileDurably,
} from "./durable-write.js";
