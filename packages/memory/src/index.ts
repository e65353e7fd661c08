export * from "./compaction/index.js";
export * from "./summarizer/index.js";
