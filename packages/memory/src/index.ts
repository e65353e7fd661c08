export { createMemory, type Memory, type MemoryIndexChoice, type MemoryOptions } from "./create-memory.js";
