import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  createMessage,
  type InboundMessage,
} from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSessionManager } from "../testing/test-session-manager.js";
import type { SessionManager } from "./session-manager.js";

/** A model at the interface: answers with the number of user messages it was shown, after an optional gate. */
class CountingModel implements ChatModel {
  readonly modelName = "counting";
  readonly contextWindow = 10_000;
  gate: Promise<void> = Promise.resolve();
  async complete(request: ChatRequest): Promise<ChatResponse> {
    await this.gate;
    const users = request.messages.filter((message) => message.role === "user").length;
    return {
      message: createMessage({ role: "assistant", content: `seen ${users}` }),
      finishReason: "stop",
      usage: { promptTokens: 10, completionTokens: 2, totalTokens: 12 },
      model: this.modelName,
      attempts: 1,
    };
  }
  // biome-ignore lint/correctness/useYield: the manager never streams in these tests
  async *stream(): AsyncIterable<never> {
    throw new Error("not used");
  }
}

let dir: string;
let now: number;
let model: CountingModel;
let manager: SessionManager;

function inbound(id: string, text: string): InboundMessage {
  return {
    sessionKey: `api:default:api:${id}`,
    channel: "api",
    id: `${id}-${now}`,
    account: "default",
    conversation: { kind: "api", id },
    sender: { id },
    mentioned: true,
    text,
    receivedAt: now,
  };
}

function createManager(queueLimit = 4): SessionManager {
  return createTestSessionManager({ model, dir, queueLimit, clock: () => now });
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-manager-"));
  now = 1_000_000;
  model = new CountingModel();
  manager = createManager();
});
afterEach(async () => {
  manager.close();
  await rm(dir, { recursive: true, force: true });
});

describe("SessionManager", () => {
  it("unloads idle sessions and reloads them from disk with their history", async () => {
    await manager.handle({ inbound: inbound("a", "one") });
    expect(manager.loadedCount()).toBe(1);
    now += 30_000;
    expect(manager.unloadIdle()).toBe(0);
    now += 31_000;
    expect(manager.unloadIdle()).toBe(1);
    expect(manager.loadedCount()).toBe(0);
    const reply = await manager.handle({ inbound: inbound("a", "two") });
    expect(reply.text).toBe("seen 2");
  });

  it("answers with session.busy when a conversation already has too many waiting messages, and loses none it accepted", async () => {
    manager.close();
    manager = createManager(1);
    let open: () => void = () => {};
    model.gate = new Promise((resolve) => {
      open = resolve;
    });
    const running = manager.handle({ inbound: inbound("b", "first") });
    const waiting = manager.handle({ inbound: inbound("b", "second") });
    await expect(manager.handle({ inbound: inbound("b", "third") })).rejects.toMatchObject({
      code: "session.busy",
    });
    open();
    expect((await running).text).toBe("seen 1");
    expect((await waiting).text).toBe("seen 2");
  });

  it("rebuilds a session from its transcript when the snapshot is corrupt", async () => {
    await manager.handle({ inbound: inbound("c", "remember me") });
    const { writeFile } = await import("node:fs/promises");
    const { sessionKeyToFileStem } = await import("@almanac/core");
    await writeFile(join(dir, `${sessionKeyToFileStem("api:default:api:c")}.json`), "{ not json");
    manager.close();
    manager = createManager();
    const reply = await manager.handle({ inbound: inbound("c", "still there?") });
    expect(reply.text).toBe("seen 2");
  });
});
