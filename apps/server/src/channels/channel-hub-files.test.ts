import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createToolkit } from "@almanac/agent";
import {
  type ChannelAdapter,
  type ChannelStatus,
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  createMessage,
  type FileSendingAdapter,
  type InboundMessage,
  InternalError,
  type OutboundFile,
  type OutboundMessage,
  toolResultsOf,
  UserError,
} from "@almanac/core";
import { OWNER_SCOPE } from "@almanac/memory-files";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSessionManager } from "../../test/test-session-manager.js";
import type { SentFile } from "../events/event-bus.js";
import type { SessionManager } from "../runtime/session-manager.js";
import { sendFileToolSource } from "../tools/send-file-tool.js";
import type { AccessPolicy } from "./access-policy.js";
import { type ChannelHub, createChannelHub } from "./channel-hub.js";
import { createDedupStore } from "./dedup-store.js";

/** An in-memory adapter without uploads: messages pushed by the test, replies recorded. */
class TextAdapter implements ChannelAdapter {
  readonly sent: OutboundMessage[] = [];
  #deliver: ((message: InboundMessage) => void) | undefined;
  constructor(readonly name: string) {}
  async start(onMessage: (message: InboundMessage) => void) {
    this.#deliver = onMessage;
  }
  push(message: InboundMessage) {
    this.#deliver?.(message);
  }
  async send(message: OutboundMessage) {
    this.sent.push(message);
  }
  status(): ChannelStatus {
    return { channel: this.name, state: "ready" };
  }
  async stop() {}
}

/** The same with the platform's upload: files recorded, refused over `limitBytes` as an adapter does. */
class UploadingAdapter extends TextAdapter implements FileSendingAdapter {
  readonly files: OutboundFile[] = [];
  limitBytes = 1_048_576;
  async sendFile(file: OutboundFile) {
    if (file.bytes.length > this.limitBytes)
      throw new UserError("request.too_large", `This platform takes files of at most ${this.limitBytes} B.`);
    if (file.name === "down.txt") throw new InternalError("turn.failed", "the platform is down");
    this.files.push(file);
  }
}

/** A model that asks for `send_file` once, then answers with what the tool said. */
class SendingModel implements ChatModel {
  readonly modelName = "sender";
  readonly contextWindow = 10_000;
  async complete(request: ChatRequest): Promise<ChatResponse> {
    const last = request.messages.at(-1);
    const result = last === undefined ? undefined : toolResultsOf(last)[0];
    const message =
      result === undefined
        ? createMessage({
            role: "assistant",
            content: [
              {
                type: "tool_call",
                id: "call-1",
                name: "send_file",
                arguments: JSON.stringify({ path: "notes/list.txt", caption: "your list" }),
              },
            ],
          })
        : createMessage({ role: "assistant", content: `tool said: ${result.content}` });
    return {
      message,
      finishReason: result === undefined ? "tool_calls" : "stop",
      usage: undefined,
      model: "sender",
      attempts: 1,
    };
  }
  // biome-ignore lint/correctness/useYield: not streamed in these tests
  async *stream(): AsyncIterable<never> {
    throw new Error("not used");
  }
}

const policy: AccessPolicy = {
  dmPolicy: "allowlist",
  allowFrom: ["alice"],
  groupPolicy: "allowlist",
  groups: [],
  requireMention: true,
  noMentionGroups: [],
};

function dm(channel: string, id: string): InboundMessage {
  return {
    sessionKey: `${channel}:default:dm:alice`,
    channel,
    id,
    account: "default",
    conversation: { kind: "dm", id: "alice" },
    sender: { id: "alice" },
    mentioned: true,
    text: "send me my list",
    receivedAt: Date.now(),
  };
}

async function until(condition: () => boolean) {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let dir: string;
let sessions: SessionManager;
let hub: ChannelHub | undefined;
const recorded: SentFile[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-hub-files-"));
  const workspace = join(dir, "workspace");
  await mkdir(join(workspace, "notes"), { recursive: true });
  await writeFile(join(workspace, "notes", "list.txt"), "milk\neggs\n");
  recorded.length = 0;
  const source = sendFileToolSource({
    workspace,
    maxBytes: 1_048_576,
    sendToChat: (file) => {
      if (hub === undefined) throw new Error("no hub yet");
      return hub.sendFile(file);
    },
    onSent: (sent) => recorded.push(sent),
  });
  const toolkit = (scope = OWNER_SCOPE, key = "") => createToolkit(source.tools(scope, key));
  sessions = createTestSessionManager({
    model: new SendingModel(),
    dir,
    sessionsDir: join(dir, "sessions"),
    tools: { toolkit, specs: () => toolkit().specs() },
  });
});
afterEach(async () => {
  await hub?.stop(100);
  hub = undefined;
  sessions.close();
  await rm(dir, { recursive: true, force: true });
});

async function startHub(...adapters: TextAdapter[]): Promise<ChannelHub> {
  hub = createChannelHub({
    channels: adapters.map((adapter) => ({ adapter, policy })),
    disabled: [],
    dedup: await createDedupStore({ file: join(dir, "dedup.jsonl"), retentionMs: 3_600_000 }),
    sessions,
  });
  await hub.start();
  return hub;
}

describe("channel hub: files the assistant sends", () => {
  it("uploads send_file's file through the adapter of the turn's conversation, before the reply", async () => {
    const uploading = new UploadingAdapter("uploads");
    const other = new UploadingAdapter("other");
    await startHub(uploading, other);
    uploading.push(dm("uploads", "m1"));
    await until(() => uploading.sent.length === 1);
    expect(uploading.files).toHaveLength(1);
    expect(uploading.files[0]).toMatchObject({
      sessionKey: "uploads:default:dm:alice",
      name: "list.txt",
      contentType: "text/plain",
      caption: "your list",
    });
    expect(Buffer.from(uploading.files[0]?.bytes ?? []).toString()).toBe("milk\neggs\n");
    expect(uploading.sent[0]?.text).toBe(
      "tool said: Sent notes/list.txt (text/plain, 10 B) to this conversation.",
    );
    expect(other.files).toEqual([]);
    expect(recorded.map((sent) => sent.sessionKey)).toEqual(["uploads:default:dm:alice"]);
  });

  it("tells the model when the chat's adapter cannot upload, or the platform refuses the size", async () => {
    const text = new TextAdapter("text");
    const small = new UploadingAdapter("small");
    small.limitBytes = 4;
    await startHub(text, small);
    text.push(dm("text", "m1"));
    small.push(dm("small", "m2"));
    await until(() => text.sent.length === 1 && small.sent.length === 1);
    expect(text.sent[0]?.text).toMatch(/^tool said: This chat \(text\) cannot receive files from me/);
    expect(small.sent[0]?.text).toBe(
      'tool said: "notes/list.txt" (text/plain, 10 B) was not sent: This platform takes files of at most 4 B.',
    );
    expect(small.files).toEqual([]);
    expect(recorded).toEqual([]);
  });

  it("routes by session key, says so for a conversation on no channel of this hub, and passes failures on", async () => {
    const uploading = new UploadingAdapter("uploads");
    const started = await startHub(uploading);
    const file = { name: "a.txt", bytes: new Uint8Array([97]), contentType: "text/plain" };
    await expect(started.sendFile({ ...file, sessionKey: "uploads:default:group:g1" })).resolves.toBe("sent");
    await expect(started.sendFile({ ...file, sessionKey: "telegram:default:dm:bob" })).resolves.toBe(
      "no-channel",
    );
    // The adapter's failures reach the caller (the tool reports them to the model).
    await expect(
      started.sendFile({ ...file, name: "down.txt", sessionKey: "uploads:default:dm:alice" }),
    ).rejects.toThrow("the platform is down");
    expect(uploading.files.map((sent) => sent.sessionKey)).toEqual(["uploads:default:group:g1"]);
  });
});
