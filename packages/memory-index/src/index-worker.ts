// The index worker's entry (see chunk-preparer.ts): prepares memory files' chunks off the main thread, which
// meanwhile writes the previous ones to the index. Bundled as its own entry into the server build
// (apps/server/scripts/build.mjs); loaded from this TypeScript source under tsx and vitest.
import { parentPort, workerData } from "node:worker_threads";
import { InternalError } from "@almanac/core/errors";
import type { ChunkMarkdownOptions } from "./chunk-markdown.js";
import {
  type IndexWorkerReply,
  isIndexWorkerRequest,
  isIndexWorkerSettings,
  toWireChunk,
} from "./index-worker-protocol.js";
import { prepareIndexChunks } from "./prepare-index-chunks.js";

const port = parentPort;
if (port === null)
  throw new InternalError("index.worker_misused", "index-worker.ts runs as a worker thread only");
const settings: unknown = workerData;
const chunking: ChunkMarkdownOptions = isIndexWorkerSettings(settings) ? settings : {};

const reply = (message: IndexWorkerReply): void => port.postMessage(message);

// Loads the token counter's table and the segmenter before saying ready: the main thread prepares files
// itself until then instead of waiting. Options chunkMarkdown refuses fail here too: each file reports it.
try {
  prepareIndexChunks("warm-up.md", Buffer.from("# Warm-up\n\nwarm-up 预热。\n"), chunking);
} catch {}

port.on("message", (message: unknown) => {
  if (!isIndexWorkerRequest(message)) return;
  try {
    reply({
      kind: "prepared",
      id: message.id,
      chunks: prepareIndexChunks(message.path, message.bytes, chunking).map(toWireChunk),
    });
  } catch {
    // The main thread prepares the file again itself, so the error it reports is the one it always has.
    reply({ kind: "failed", id: message.id });
  }
});
reply({ kind: "ready" });
