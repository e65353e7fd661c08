/**
 * Whether a large attachment in one conversation holds up the turns of another (not part of the test run). Two
 * parts, each measuring conversation A's turn latency alone, then while conversation B sends 20 MB files one after
 * another:
 *
 * 1. Chat apps: the channel hub in this process with a fake adapter that downloads B's file from a local server at
 *    about 20 MB/s (streamed, size-capped, as an adapter's `downloadAttachment` does), the real attachment intake
 *    (type check, inbox write with fsync) and a real session manager over the scripted model. A's turns go through
 *    the same hub.
 * 2. The OpenAI-compatible endpoint: the whole server in this process; B posts the file as a base64 `data:` URL (a
 *    27 MB body that is parsed, decoded, checked and saved on the server), A sends plain text turns.
 *
 * Printed: A's p50 and p99 turn latency without and with B's transfers, the event loop's longest stall in each
 * phase (what one transfer holds up everything else for at worst), and how long one of B's 20 MB messages took.
 *
 * Run: node --import tsx bench/attachments.ts [--turns 200] [--mb 20] [--json <file>]
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import {
  type AttachmentDownloadAdapter,
  AttachmentTooLargeError,
  type ChannelStatus,
  type DownloadedAttachment,
  type DownloadLimits,
  type InboundAttachment,
  type InboundMessage,
  type OutboundMessage,
} from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { OWNER_SCOPE } from "@almanac/memory-files";
import { script, startScriptedLlm } from "@almanac/testkit";
import { AttachmentIntake } from "../apps/server/src/attachments/attachment-intake.js";
import { createChannelHub } from "../apps/server/src/channels/channel-hub.js";
import { createDedupStore } from "../apps/server/src/channels/dedup-store.js";
import { createTestSessionManager } from "../apps/server/test/test-session-manager.js";
import { Figures, jsonOption } from "./figures.js";
import { BENCH_TOKEN, startInProcessServer } from "./in-process-server.js";
import { percentile } from "./sample-stats.js";

const { values } = parseArgs({
  options: {
    turns: { type: "string", default: "200" },
    mb: { type: "string", default: "20" },
    ...jsonOption,
  },
});
const TURNS = Number(values.turns);
const FILE_BYTES = Math.round(Number(values.mb) * 1_048_576);
const figures = new Figures(values.json);

/** A PNG signature and header followed by noise: accepted as an image by its content, never decoded (vision off). */
function bigImage(bytes: number): Buffer {
  const file = randomBytes(bytes);
  Buffer.from("89504e470d0a1a0a0000000d49484452", "hex").copy(file, 0);
  return file;
}
const FILE = bigImage(FILE_BYTES);

/** What one phase measured: A's turn latencies, B's transfers, the longest event-loop stall (ms). */
interface Phase {
  readonly turns: number[];
  readonly transfers: number[];
  readonly maxStallMs: number;
}

function report(part: string, alone: Phase, during: Phase): void {
  const line = (label: string, samples: number[]) =>
    `${label.padEnd(30)} p50 ${percentile(samples, 50).toFixed(2).padStart(7)} ms  p99 ${percentile(samples, 99).toFixed(2).padStart(7)} ms  (${samples.length} turns)`;
  const { transfers } = during;
  console.log(`\n${part}`);
  console.log(`${line("A alone", alone.turns)}  longest stall ${alone.maxStallMs.toFixed(0)} ms`);
  console.log(
    `${line(`A while B sends ${values.mb} MB files`, during.turns)}  longest stall ${during.maxStallMs.toFixed(0)} ms`,
  );
  console.log(
    `B: ${transfers.length} messages of ${values.mb} MB back to back, each ${percentile(transfers, 50).toFixed(0)} ms (p50) from sent to answered`,
  );
  const name = part.startsWith("1") ? "channel" : "api";
  figures.add(`${name}-turn-alone-p50`, percentile(alone.turns, 50), "ms");
  figures.add(`${name}-turn-alone-p99`, percentile(alone.turns, 99), "ms");
  figures.add(`${name}-turn-during-transfer-p50`, percentile(during.turns, 50), "ms");
  figures.add(`${name}-turn-during-transfer-p99`, percentile(during.turns, 99), "ms");
  figures.add(`${name}-event-loop-stall-during-transfer-max`, during.maxStallMs, "ms");
  figures.add(`${name}-transfer-p50`, percentile(transfers, 50), "ms");
}

/** Transfers of B that A's turns run beside at least. */
const MIN_TRANSFERS = 5;

/**
 * Runs A's turns alone, then while B's transfers run back to back (at least {@link MIN_TRANSFERS} of them), with
 * the event loop's delay watched in each phase.
 */
async function measure(
  turnOfA: () => Promise<number>,
  transferOfB: () => Promise<number>,
): Promise<[Phase, Phase]> {
  for (let warm = 0; warm < 20; warm += 1) await turnOfA();
  await transferOfB();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const alone: number[] = [];
  for (let index = 0; index < TURNS; index += 1) alone.push(await turnOfA());
  const aloneStall = loop.max / 1e6;
  loop.reset();
  const transfers: number[] = [];
  let running = true;
  const sender = (async () => {
    while (running) transfers.push(await transferOfB());
  })();
  const during: number[] = [];
  while (during.length < TURNS || transfers.length < MIN_TRANSFERS) during.push(await turnOfA());
  running = false;
  await sender;
  const duringStall = loop.max / 1e6;
  loop.disable();
  return [
    { turns: alone, transfers: [], maxStallMs: aloneStall },
    { turns: during, transfers, maxStallMs: duringStall },
  ];
}

// ---- 1. Chat apps: the hub, a downloading adapter, the intake --------------------------------------------------

/** Serves the file at about 20 MB/s in 256 KB pieces, as a platform's file server might. */
async function startFileServer(): Promise<{ url: string; close(): Promise<void> }> {
  const piece = 256 * 1024;
  const server = createServer(async (_request, response) => {
    response.writeHead(200, { "content-type": "image/png", "content-length": String(FILE.length) });
    for (let start = 0; start < FILE.length; start += piece) {
      if (!response.write(FILE.subarray(start, start + piece)))
        await new Promise((resolve) => response.once("drain", resolve));
      await new Promise((resolve) => setTimeout(resolve, 12));
    }
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/file.png`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Downloads by URL within the limits (what Discord's adapter does with its CDN), replies recorded. */
class DownloadingAdapter implements AttachmentDownloadAdapter {
  readonly name = "bench";
  readonly waiting = new Map<string, () => void>();
  #deliver: ((message: InboundMessage) => void) | undefined;
  async start(onMessage: (message: InboundMessage) => void) {
    this.#deliver = onMessage;
  }
  /** Sends a message and resolves when its reply was sent. */
  say(message: InboundMessage): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.set(message.id, resolve);
      this.#deliver?.(message);
    });
  }
  async send(message: OutboundMessage) {
    const id = message.inReplyTo?.id ?? "";
    this.waiting.get(id)?.();
    this.waiting.delete(id);
  }
  async downloadAttachment(
    _message: InboundMessage,
    attachment: InboundAttachment,
    limits: DownloadLimits,
  ): Promise<DownloadedAttachment> {
    const response = await fetch(attachment.url ?? "", { signal: limits.signal });
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = response.body?.getReader();
    for (let read = await reader?.read(); read !== undefined && !read.done; read = await reader?.read()) {
      const chunk = read.value;
      size += chunk.length;
      if (size > limits.maxBytes) throw new AttachmentTooLargeError(limits.maxBytes, size);
      chunks.push(chunk);
    }
    return {
      bytes: Buffer.concat(chunks),
      ...(attachment.name === undefined ? {} : { name: attachment.name }),
    };
  }
  status(): ChannelStatus {
    return { channel: this.name, state: "ready" };
  }
  async stop() {}
}

async function channelPart(): Promise<void> {
  const llm = await startScriptedLlm({});
  llm.setFallback(() => script.text("ok"));
  const files = await startFileServer();
  const dir = await mkdtemp(join(tmpdir(), "almanac-bench-attachments-"));
  const model = createOpenAIChatModel({
    baseURL: llm.baseURL,
    apiKey: "",
    model: "scripted-model",
    maxRetries: 0,
  });
  const sessions = createTestSessionManager({
    model,
    dir,
    sessionsDir: join(dir, "sessions"),
    queueLimit: 64,
  });
  const adapter = new DownloadingAdapter();
  const hub = createChannelHub({
    channels: [
      {
        adapter,
        policy: {
          dmPolicy: "open",
          allowFrom: [],
          groupPolicy: "disabled",
          groups: [],
          requireMention: true,
          noMentionGroups: [],
        },
      },
    ],
    disabled: [],
    dedup: await createDedupStore({ file: join(dir, "dedup.jsonl"), retentionMs: 3_600_000 }),
    sessions,
    attachments: new AttachmentIntake({
      workspace: join(dir, "workspace"),
      scopeOf: () => OWNER_SCOPE,
      timeZone: "UTC",
      maxBytes: FILE_BYTES + 1024,
      timeoutMs: 60_000,
      vision: false,
    }),
  });
  await hub.start();
  let sent = 0;
  const message = (who: string, attachments?: InboundAttachment[]): InboundMessage => {
    sent += 1;
    return {
      sessionKey: `bench:default:dm:${who}`,
      channel: "bench",
      id: `m${sent}`,
      account: "default",
      conversation: { kind: "dm", id: who },
      sender: { id: who },
      mentioned: true,
      text: "hello",
      ...(attachments === undefined ? {} : { attachments }),
      receivedAt: Date.now(),
    };
  };
  const timed = async (inbound: InboundMessage) => {
    const started = performance.now();
    await adapter.say(inbound);
    return performance.now() - started;
  };
  try {
    const [alone, during] = await measure(
      () => timed(message("a")),
      () => timed(message("b", [{ kind: "image", url: files.url, name: "photo.png" }])),
    );
    report("1. Chat apps (hub, adapter download at ~20 MB/s, intake)", alone, during);
  } finally {
    await hub.stop(1_000);
    await sessions.close();
    await files.close();
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// ---- 2. The OpenAI-compatible endpoint: the whole server, data URLs --------------------------------------------

async function apiPart(): Promise<void> {
  const server = await startInProcessServer("warn");
  const body = (user: string, content: unknown) =>
    JSON.stringify({ model: "almanac", user, messages: [{ role: "user", content }] });
  const post = async (payload: string) => {
    const started = performance.now();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${BENCH_TOKEN}`, "content-type": "application/json" },
      body: payload,
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    await response.json();
    return performance.now() - started;
  };
  const big = body("b", [
    { type: "text", text: "here" },
    { type: "image_url", image_url: { url: `data:image/png;base64,${FILE.toString("base64")}` } },
  ]);
  try {
    const [alone, during] = await measure(
      () => post(body("a", "hello")),
      () => post(big),
    );
    report("2. OpenAI endpoint (whole server, base64 data URL)", alone, during);
  } finally {
    await server.close();
  }
}

await channelPart();
await apiPart();
figures.write();
