/**
 * A child process for the crash test: runs the durable queue and the summarizer against a scripted
 * model server owned by the test, reporting progress as JSON lines on stdout. The test kills it with
 * SIGKILL at chosen moments and starts it again over the same directories.
 *
 * Configuration comes as JSON in `ALMANAC_QUEUE_CHILD` (validated): directories, the model URL,
 * messages to enqueue, and `killOnCommit` (die by SIGKILL right after the first commit record is
 * journaled, before any file is changed).
 */
import { createMessage } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { createMemoryFileStore, type MemoryFileStore } from "@almanac/memory-files";
import { createTokenCounter } from "@almanac/tokenizer";
import { z } from "zod";
import { createSummarizer } from "../src/summarizer.js";
import { createSummaryQueue } from "../src/summary-queue.js";

const configSchema = z.object({
  workspace: z.string(),
  stateDir: z.string(),
  baseURL: z.string(),
  enqueue: z.array(z.object({ text: z.string(), timestamp: z.number() })),
  killOnCommit: z.boolean(),
});

function report(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

const config = configSchema.parse(JSON.parse(process.env.ALMANAC_QUEUE_CHILD ?? "{}"));
const model = createOpenAIChatModel({
  baseURL: config.baseURL,
  apiKey: "test-key",
  model: "scripted-model",
  timeoutMs: 60_000,
  maxRetries: 0,
});
const realStore = createMemoryFileStore({ workspace: config.workspace, stateDir: config.stateDir });
const store: MemoryFileStore = config.killOnCommit
  ? {
      ...realStore,
      async write() {
        report({ event: "dying-at-commit" });
        process.kill(process.pid, "SIGKILL");
        return new Promise(() => {});
      },
    }
  : realStore;
const run = createSummarizer({
  model,
  workspace: config.workspace,
  stateDir: config.stateDir,
  store,
  timeZone: "UTC",
  tokenCounter: createTokenCounter(),
});
const queue = createSummaryQueue({ stateDir: config.stateDir, run, backoff: () => 0, maxAttempts: 5 });

for (const item of config.enqueue) {
  const info = await queue.enqueue({
    sessionKey: "web:local:dm:crash-test",
    reason: "auto",
    messages: [createMessage({ role: "user", content: item.text, timestamp: item.timestamp })],
    createdAt: item.timestamp,
  });
  report({ event: "enqueued", id: info.id });
}
await queue.start();
report({ event: "started" });
await queue.idle();
report({ event: "idle", stats: await queue.stats() });
await queue.stop({ deadlineMs: 1_000 });
