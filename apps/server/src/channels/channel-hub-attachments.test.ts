import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AttachmentDownloadAdapter,
  AttachmentTooLargeError,
  type ChannelStatus,
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type ChatStreamEvent,
  createMessage,
  type DownloadedAttachment,
  type DownloadLimits,
  type InboundAttachment,
  type InboundMessage,
  type OutboundMessage,
  ProviderError,
  type ReplyStream,
  type StreamingReplyAdapter,
} from "@almanac/core";
import { createOpenAITranscriber } from "@almanac/llm";
import { OWNER_SCOPE } from "@almanac/memory-files";
import { type ScriptedLlm, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSessionManager } from "../../test/test-session-manager.js";
import { AttachmentIntake, type AttachmentIntakeOptions } from "../attachments/attachment-intake.js";
import type { SessionManager } from "../runtime/session-manager.js";
import type { AccessPolicy } from "./access-policy.js";
import { createChannelHub } from "./channel-hub.js";
import { createDedupStore } from "./dedup-store.js";

/** A platform that serves files and edits its replies: the two seams, in memory. */
class FilesAdapter implements AttachmentDownloadAdapter, StreamingReplyAdapter {
  readonly name = "files";
  readonly sent: OutboundMessage[] = [];
  /** Each streamed reply: every text shown, and the final one. */
  readonly streams: { shown: string[]; finished?: string }[] = [];
  /** Bytes by attachment id; a function answers when it likes. */
  readonly files = new Map<string, Uint8Array | ((limits: DownloadLimits) => Promise<Uint8Array>)>();
  #deliver: ((message: InboundMessage) => void) | undefined;
  async start(onMessage: (message: InboundMessage) => void) {
    this.#deliver = onMessage;
  }
  push(message: InboundMessage) {
    this.#deliver?.(message);
  }
  async send(message: OutboundMessage) {
    this.sent.push(message);
  }
  async downloadAttachment(
    _message: InboundMessage,
    attachment: InboundAttachment,
    limits: DownloadLimits,
  ): Promise<DownloadedAttachment> {
    const file = this.files.get(attachment.id ?? "");
    if (file === undefined) throw new Error("404");
    const bytes = typeof file === "function" ? await file(limits) : file;
    if (bytes.length > limits.maxBytes) throw new AttachmentTooLargeError(limits.maxBytes, bytes.length);
    return { bytes, ...(attachment.name === undefined ? {} : { name: attachment.name }) };
  }
  startReplyStream(): ReplyStream {
    const record: { shown: string[]; finished?: string } = { shown: [] };
    this.streams.push(record);
    return {
      update: (text) => {
        record.shown.push(text);
      },
      finish: async (text) => {
        record.finished = text;
      },
    };
  }
  status(): ChannelStatus {
    return { channel: this.name, state: "ready" };
  }
  async stop() {}
}

/** Answers `echo: <the user message's text parts>`, streamed in three pieces; records what it was shown. */
class EchoModel implements ChatModel {
  readonly modelName = "echo";
  readonly contextWindow = 100_000;
  readonly requests: ChatRequest[] = [];
  /** Milliseconds between streamed pieces. */
  pieceDelayMs = 0;
  failWith: Error | undefined;
  #reply(request: ChatRequest): string {
    this.requests.push(request);
    const last = request.messages.at(-1);
    const text = last?.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join(" | ");
    return `echo: ${text}`;
  }
  async complete(request: ChatRequest): Promise<ChatResponse> {
    if (this.failWith !== undefined) throw this.failWith;
    const text = this.#reply(request);
    return {
      message: createMessage({ role: "assistant", content: text }),
      finishReason: "stop",
      usage: undefined,
      model: "echo",
      attempts: 1,
    };
  }
  async *stream(request: ChatRequest): AsyncIterable<ChatStreamEvent> {
    const text = this.#reply(request);
    const third = Math.ceil(text.length / 3);
    for (let start = 0; start < text.length; start += third) {
      if (this.pieceDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.pieceDelayMs));
      if (request.signal?.aborted) throw request.signal.reason;
      yield { type: "text-delta", text: text.slice(start, start + third) };
      if (this.failWith !== undefined) throw this.failWith;
    }
    yield {
      type: "finish",
      response: {
        message: createMessage({ role: "assistant", content: text }),
        finishReason: "stop",
        usage: undefined,
        model: "echo",
        attempts: 1,
      },
    };
  }
}

const policy: AccessPolicy = {
  dmPolicy: "allowlist",
  allowFrom: ["alice", "bob"],
  groupPolicy: "disabled",
  groups: [],
  requireMention: true,
  noMentionGroups: [],
};

let counter = 0;
function dm(sender: string, text: string, attachments?: InboundAttachment[]): InboundMessage {
  counter += 1;
  return {
    sessionKey: `files:default:dm:${sender}`,
    channel: "files",
    id: `e${counter}`,
    account: "default",
    conversation: { kind: "dm", id: sender },
    sender: { id: sender },
    mentioned: true,
    text,
    ...(attachments === undefined ? {} : { attachments }),
    receivedAt: Date.now(),
  };
}

let dir: string;
let model: EchoModel;
let sessions: SessionManager;
let llm: ScriptedLlm | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-hub-files-"));
  // The workspace exists, as the server makes it at start: the inbox never makes it.
  await mkdir(join(dir, "workspace"));
  model = new EchoModel();
  sessions = createTestSessionManager({ model, dir, sessionsDir: join(dir, "sessions") });
});
afterEach(async () => {
  await sessions.close();
  await llm?.close();
  llm = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function until(condition: () => boolean) {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function startHub(
  adapter: FilesAdapter,
  options: { readonly stream?: boolean; readonly intake?: Partial<AttachmentIntakeOptions> } = {},
) {
  const hub = createChannelHub({
    channels: [{ adapter, policy }],
    disabled: [],
    dedup: await createDedupStore({ file: join(dir, "dedup.jsonl"), retentionMs: 3_600_000 }),
    sessions,
    attachments: new AttachmentIntake({
      workspace: join(dir, "workspace"),
      scopeOf: () => OWNER_SCOPE,
      timeZone: "UTC",
      maxBytes: 20 * 1_048_576,
      timeoutMs: 5_000,
      vision: false,
      ...options.intake,
    }),
    streamReplies: options.stream === true ? ["files"] : [],
  });
  await hub.start();
  return hub;
}

function lastUserTexts(request: ChatRequest | undefined): string[] {
  const user = request?.messages.findLast((message) => message.role === "user");
  return user?.content.flatMap((block) => (block.type === "text" ? [block.text] : [])) ?? [];
}

describe("attachments and streamed replies in the channel hub", () => {
  it("refuses a 30 MB file politely and answers the rest of the message", async () => {
    const adapter = new FilesAdapter();
    adapter.files.set("big", new Uint8Array(30 * 1_048_576));
    await startHub(adapter);
    adapter.push(
      dm("alice", "summarize the attached report", [{ kind: "file", id: "big", name: "report.zip" }]),
    );
    await until(() => adapter.sent.length === 1);
    const reply = adapter.sent[0]?.text ?? "";
    expect(
      reply.startsWith('_I could not take the file "report.zip": it is larger than 20 MB (30 MB)._\n\n'),
    ).toBe(true);
    expect(reply).toContain("echo: summarize the attached report");
    expect(lastUserTexts(model.requests.at(-1))).toEqual([
      "summarize the attached report",
      '[The person sent an attachment; files are saved in the workspace:]\n- file "report.zip": not saved, it is larger than 20 MB (30 MB); the person was told',
    ]);
  });

  it("saves a file in the inbox and tells the model its path", async () => {
    const adapter = new FilesAdapter();
    adapter.files.set("n", new TextEncoder().encode("milk, eggs"));
    await startHub(adapter);
    adapter.push(dm("alice", "", [{ kind: "file", id: "n", name: "list.txt" }]));
    await until(() => adapter.sent.length === 1);
    const day = new Date().toISOString().slice(0, 10);
    expect(adapter.sent[0]?.text).toContain(`saved as inbox/${day}/list.txt`);
    expect(await readFile(join(dir, "workspace", "inbox", day, "list.txt"), "utf8")).toBe("milk, eggs");
  });

  it("lets a slow download hold up neither another conversation nor the order of its own messages", async () => {
    const adapter = new FilesAdapter();
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    adapter.files.set("slow", async () => {
      await released;
      return new TextEncoder().encode("late");
    });
    await startHub(adapter);
    adapter.push(dm("alice", "first, with a file", [{ kind: "file", id: "slow", name: "slow.txt" }]));
    adapter.push(dm("alice", "second"));
    adapter.push(dm("bob", "meanwhile"));
    await until(() => adapter.sent.length === 1);
    expect(adapter.sent[0]?.text).toBe("echo: meanwhile");
    release();
    await until(() => adapter.sent.length === 3);
    expect(adapter.sent.slice(1).map((message) => message.text.split(" | ")[0])).toEqual([
      "echo: first, with a file",
      "echo: second",
    ]);
  });

  it("transcribes a voice message through the transcription endpoint and answers its words", async () => {
    llm = await startScriptedLlm();
    llm.enqueueTranscriptions({ type: "transcript", text: "what is on my list today" });
    const adapter = new FilesAdapter();
    const ogg = new Uint8Array([
      ...new TextEncoder().encode("OggS"),
      0,
      2,
      ...new Array(20).fill(0),
      1,
      19,
      ...new TextEncoder().encode("OpusHead"),
      1,
      1,
      0,
      0,
    ]);
    adapter.files.set("v", ogg);
    await startHub(adapter, {
      intake: {
        transcriber: createOpenAITranscriber({ baseURL: llm.baseURL, apiKey: "", model: "whisper-1" }),
      },
    });
    adapter.push(
      dm("alice", "", [
        { kind: "audio", voice: true, id: "v", name: "voice-message.ogg", durationMs: 3_000 },
      ]),
    );
    await until(() => adapter.sent.length === 1);
    expect(
      llm.transcriptionRequests().map((request) => [request.model, request.fileName, request.bytes.length]),
    ).toEqual([["whisper-1", "voice-message.ogg", ogg.length]]);
    expect(lastUserTexts(model.requests.at(-1))[0]).toBe("what is on my list today");
    expect(adapter.sent[0]?.text.startsWith("echo: what is on my list today | ")).toBe(true);
  });

  it("tells the person voice is not configured when no transcription endpoint is", async () => {
    const adapter = new FilesAdapter();
    adapter.files.set(
      "v",
      new Uint8Array([
        ...new TextEncoder().encode("OggS"),
        0,
        2,
        ...new Array(20).fill(0),
        1,
        19,
        ...new TextEncoder().encode("OpusHead"),
        1,
        1,
        0,
        0,
      ]),
    );
    await startHub(adapter);
    adapter.push(dm("alice", "", [{ kind: "audio", voice: true, id: "v" }]));
    await until(() => adapter.sent.length === 1);
    expect(adapter.sent[0]?.text).toMatch(
      /^_Voice messages cannot be transcribed here: no transcription service is configured/,
    );
  });

  it("streams a reply and finishes it with exactly the text a plain send would have posted", async () => {
    const adapter = new FilesAdapter();
    await startHub(adapter, { stream: true });
    adapter.push(dm("alice", "tell me a story"));
    await until(() => adapter.streams[0]?.finished !== undefined);
    const [stream] = adapter.streams;
    // The whole text so far each time, growing to the reply.
    expect(stream?.shown).toHaveLength(3);
    for (const shown of stream?.shown ?? []) expect("echo: tell me a story".startsWith(shown)).toBe(true);
    expect(stream?.shown.at(-1)).toBe("echo: tell me a story");
    expect(stream?.finished).toBe("echo: tell me a story");
    expect(adapter.sent).toEqual([]);
  });

  it("ends a stopped streamed reply with its mark, and a failed one with the failure's words", async () => {
    const adapter = new FilesAdapter();
    await startHub(adapter, { stream: true });
    model.pieceDelayMs = 100;
    adapter.push(dm("alice", "a long answer please"));
    await until(() => (adapter.streams[0]?.shown.length ?? 0) >= 1);
    expect(sessions.stop("files:default:dm:alice")).toBe(true);
    await until(() => adapter.streams[0]?.finished !== undefined);
    // What was shown when the stop came, marked: the reply as the history keeps it.
    const shown = adapter.streams[0]?.shown.at(-1) ?? "";
    expect(shown.startsWith("echo: a")).toBe(true);
    expect(adapter.streams[0]?.finished).toBe(`${shown.trimEnd()}\n\n[stopped]`);

    model.pieceDelayMs = 0;
    model.failWith = new ProviderError("llm.server", "upstream 500", { isRetryable: false });
    adapter.push(dm("alice", "again"));
    await until(() => adapter.streams[1]?.finished !== undefined);
    expect(adapter.streams[1]?.shown).toHaveLength(1);
    expect(adapter.streams[1]?.finished).toBe(
      "Sorry, I could not reach the language model just now. Please try again in a moment.",
    );
  });
});
