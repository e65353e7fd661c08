// The index worker's entry (see chunk-preparer.ts): analyses chunks' texts into index terms off the main thread,
// which meanwhile counts tokens, cuts the next files into chunks and writes the previous ones to the index.
// Bundled as its own entry into the server build (apps/server/scripts/build.mjs); loaded from this TypeScript
// source under tsx and vitest.
import { parentPort } from "node:worker_threads";
import { InternalError } from "@almanac/core/errors";
import { type IndexWorkerReply, isIndexWorkerRequest, toWireAnalysis } from "./index-worker-protocol.js";
import { analyzeChunkText } from "./text-analysis.js";

const port = parentPort;
if (port === null)
  throw new InternalError("index.worker_misused", "index-worker.ts runs as a worker thread only");

const reply = (message: IndexWorkerReply): void => port.postMessage(message);

// Loads the segmenter before saying ready: the main thread analyses chunks itself until then instead of waiting.
analyzeChunkText("memory/warm-up.md\nWarm-up\n\nwarm-up 预热项目。");

port.on("message", (message: unknown) => {
  if (!isIndexWorkerRequest(message)) return;
  try {
    reply({
      kind: "analysed",
      id: message.id,
      analyses: message.texts.map((text) => {
        const { terms, length } = analyzeChunkText(text);
        return toWireAnalysis(terms, length);
      }),
    });
  } catch {
    // The main thread analyses the chunks again itself, so the error it reports is the one it always has.
    reply({ kind: "failed", id: message.id });
  }
});
reply({ kind: "ready" });
