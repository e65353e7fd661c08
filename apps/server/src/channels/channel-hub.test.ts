import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChannelStatus,
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  createMessage,
  type InboundMessage,
  type OutboundMessage,
  type TypingIndicatorAdapter,
} from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSessionManager } from "../../test/test-session-manager.js";
import type { SessionManager } from "../runtime/session-manager.js";
import type { AccessPolicy } from "./access-policy.js";
import { createChannelHub } from "./channel-hub.js";
import { createDedupStore } from "./dedup-store.js";

/** An in-memory adapter at the ChannelAdapter interface: tests push messages, replies are recorded. */
class MemoryAdapter implements TypingIndicatorAdapter {
  readonly name = "memory";
  readonly sent: OutboundMessage[] = [];
  typing = 0;
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
  async startTyping() {
    this.typing += 1;
    return async () => {};
  }
  status(): ChannelStatus {
    return { channel: this.name, state: "ready" };
  }
  async stop() {}
}

class EchoModel implements ChatModel {
  readonly modelName = "echo";
  readonly contextWindow = 10_000;
  async complete(request: ChatRequest): Promise<ChatResponse> {
    const last = request.messages.at(-1);
    const text = last?.content.map((block) => (block.type === "text" ? block.text : "")).join("") ?? "";
    return {
      message: createMessage({ role: "assistant", content: `echo: ${text}` }),
      finishReason: "stop",
      usage: undefined,
      model: "echo",
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
  groups: ["g1"],
  requireMention: true,
  noMentionGroups: [],
};

function dm(sender: string, id: string, text: string): InboundMessage {
  return {
    sessionKey: `memory:default:dm:${sender}`,
    channel: "memory",
    id,
    account: "default",
    conversation: { kind: "dm", id: sender },
    sender: { id: sender },
    mentioned: true,
    text,
    receivedAt: Date.now(),
  };
}

let dir: string;
let sessions: SessionManager;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-hub-"));
  sessions = createTestSessionManager({ model: new EchoModel(), dir, sessionsDir: join(dir, "sessions") });
});
afterEach(async () => {
  sessions.close();
  await rm(dir, { recursive: true, force: true });
});

async function until(condition: () => boolean) {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("channel hub", () => {
  it("answers an allowed DM in its conversation, with a typing indicator", async () => {
    const adapter = new MemoryAdapter();
    const hub = createChannelHub({
      channels: [{ adapter, policy }],
      disabled: ["discord"],
      dedup: await createDedupStore({ file: join(dir, "dedup.jsonl"), retentionMs: 3_600_000 }),
      sessions,
    });
    await hub.start();
    adapter.push(dm("alice", "e1", "hello"));
    await until(() => adapter.sent.length === 1);
    expect(adapter.sent[0]).toMatchObject({ sessionKey: "memory:default:dm:alice", text: "echo: hello" });
    expect(adapter.sent[0]?.inReplyTo?.id).toBe("e1");
    expect(adapter.typing).toBe(1);
    expect(hub.statuses()).toEqual([
      { channel: "memory", state: "ready" },
      { channel: "discord", state: "disabled", detail: "not configured" },
    ]);
  });

  it("gives a refused sender no answer at all", async () => {
    const adapter = new MemoryAdapter();
    const hub = createChannelHub({
      channels: [{ adapter, policy }],
      disabled: [],
      dedup: await createDedupStore({ file: join(dir, "dedup.jsonl"), retentionMs: 3_600_000 }),
      sessions,
    });
    await hub.start();
    adapter.push(dm("mallory", "e2", "let me in"));
    adapter.push(dm("alice", "e3", "after"));
    await until(() => adapter.sent.length === 1);
    expect(adapter.sent.map((message) => message.text)).toEqual(["echo: after"]);
  });

  it("answers a redelivered event once, even after a restart", async () => {
    const file = join(dir, "dedup.jsonl");
    const adapter = new MemoryAdapter();
    const hub = createChannelHub({
      channels: [{ adapter, policy }],
      disabled: [],
      dedup: await createDedupStore({ file, retentionMs: 3_600_000 }),
      sessions,
    });
    await hub.start();
    adapter.push(dm("alice", "e4", "once"));
    adapter.push(dm("alice", "e4", "once"));
    await until(() => adapter.sent.length >= 1);
    const restarted = new MemoryAdapter();
    const hubAfterRestart = createChannelHub({
      channels: [{ adapter: restarted, policy }],
      disabled: [],
      dedup: await createDedupStore({ file, retentionMs: 3_600_000 }),
      sessions,
    });
    await hubAfterRestart.start();
    restarted.push(dm("alice", "e4", "once"));
    restarted.push(dm("alice", "e5", "new one"));
    await until(() => restarted.sent.length === 1);
    expect(adapter.sent).toHaveLength(1);
    expect(restarted.sent.map((message) => message.text)).toEqual(["echo: new one"]);
  });
});
