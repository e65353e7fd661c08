export * from "./memory-index/index.js";
export * from "./summarizer/index.js";
