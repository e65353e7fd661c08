export * from "./summarizer/index.js";
export * from "./compaction/index.js";
