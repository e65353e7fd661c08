export * from "./summarizer/index.js";
