import { randomBytes } from "node:crypto";
import { appendFile, mkdtemp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  createMessage,
  type InboundMessage,
  sessionKeyToFileStem,
} from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestRunner, createTestSessionManager } from "../../test/test-session-manager.js";
import { createLaneScheduler } from "../sessions/lane-scheduler.js";
import { createSessionStore } from "../sessions/session-store.js";
import { SessionManager } from "./session-manager.js";

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
  it("restores the turn a crash cut short from the transcript lines past the snapshot", async () => {
    await manager.handle({ inbound: inbound("k", "one") });
    // What a turn does before calling the model (the user's message appended); then the process was killed.
    const key = "api:default:api:k";
    // (Closed so its open transcript is not left to the garbage collector; the line is in the file either way.)
    const killed = createSessionStore({ dir });
    await killed.appendTranscript(key, [createMessage({ role: "user", content: "two", timestamp: now })]);
    await killed.close();
    manager.close();
    manager = createManager();
    const reply = await manager.handle({ inbound: inbound("k", "three") });
    expect(reply.text).toBe("seen 3");
    const transcript = (await readFile(join(dir, `${sessionKeyToFileStem(key)}.jsonl`), "utf8"))
      .trim()
      .split("\n")
      .map(
        (line) => (JSON.parse(line) as { message: { content: { text: string }[] } }).message.content[0]?.text,
      );
    expect(transcript).toEqual(["one", "seen 1", "two", "three", "seen 3"]);
  });

  it("writes the snapshot as a checkpoint: turns that only append go to the transcript, a restart replays them", async () => {
    const key = "api:default:api:cp";
    const snapshotPath = join(dir, `${sessionKeyToFileStem(key)}.json`);
    const snapshotMessages = async () =>
      (JSON.parse(await readFile(snapshotPath, "utf8")) as { memory: { messages: unknown[] } }).memory
        .messages.length;
    for (const text of ["one", "two", "three"]) await manager.handle({ inbound: inbound("cp", text) });
    // A new session's first turns only append: its empty state needs no snapshot.
    await expect(readFile(snapshotPath, "utf8")).rejects.toMatchObject({ code: "ENOENT" });
    manager.close();
    manager = createManager();
    expect((await manager.handle({ inbound: inbound("cp", "four") })).text).toBe("seen 4");
    // Loading rebuilt it from the transcript and wrote a checkpoint; the session counts every turn.
    expect(await snapshotMessages()).toBe(6);
    expect((await manager.get(key))?.stats.turns).toBe(4);
    now += 61_000;
    expect(manager.unloadIdle()).toBe(1);
    await expect.poll(snapshotMessages).toBe(8);
    for (let turn = 5; turn <= 20; turn += 1)
      await manager.handle({ inbound: inbound("cp", `turn ${turn}`) });
    expect(await snapshotMessages()).toBe(40);
  });

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

  it("makes a conversation's compactor and system prompt once when it is loaded, not per turn or command", async () => {
    const opened: string[] = [];
    const runner = createTestRunner(model);
    const compactorFor = runner.compactorFor.bind(runner);
    runner.compactorFor = (sessionKey, originals) => {
      opened.push(sessionKey);
      return compactorFor(sessionKey, originals);
    };
    manager.close();
    manager = new SessionManager({
      store: createSessionStore({ dir }),
      scheduler: createLaneScheduler({ maxConcurrent: 4, laneCapacity: 4 }),
      runner,
      missingModelSettings: [],
      tokenCounter: createTokenCounter(),
      limits: { maxMessageChars: 1000, idleUnloadMs: 60_000, contextWindow: 10_000 },
      clock: () => now,
    });
    for (const text of ["one", "two", "/status", "/compact", "three"])
      await manager.handle({ inbound: inbound("r", text) });
    expect(opened).toEqual(["api:default:api:r"]);
    now += 61_000;
    expect(manager.unloadIdle()).toBe(1);
    await manager.handle({ inbound: inbound("r", "four") });
    expect(opened).toEqual(["api:default:api:r", "api:default:api:r"]);
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

/** Ways a snapshot file gets lost or damaged (a crash, a full disk, a careless hand, another tool). */
const damages: ReadonlyArray<[string, (file: string) => Promise<void>]> = [
  ["truncated", async (file) => truncate(file, Math.floor((await readFile(file)).length / 2))],
  ["zero bytes", (file) => writeFile(file, "")],
  ["random bytes", (file) => writeFile(file, randomBytes(512))],
  ["valid JSON of the wrong shape", (file) => writeFile(file, JSON.stringify({ hello: ["world"] }))],
  [
    "a valid envelope whose working memory has the wrong shape",
    async (file) => {
      const snapshot: unknown = JSON.parse(await readFile(file, "utf8"));
      await writeFile(file, JSON.stringify({ ...(snapshot as object), memory: { messages: "none" } }));
    },
  ],
  [
    "another session's snapshot",
    async (file) => {
      const snapshot: unknown = JSON.parse(await readFile(file, "utf8"));
      await writeFile(file, JSON.stringify({ ...(snapshot as object), key: "api:default:api:other" }));
    },
  ],
  ["deleted, with the transcript still there", (file) => rm(file)],
];

describe("a session whose snapshot is lost or damaged", () => {
  const key = "api:default:api:h";
  const snapshotFile = () => join(dir, `${sessionKeyToFileStem(key)}.json`);

  it.each(damages)("is rebuilt from its transcript when the snapshot is %s", async (_name, damage) => {
    const startedAt = now;
    await manager.handle({ inbound: inbound("h", "one") });
    now += 1_000;
    await manager.handle({ inbound: inbound("h", "two") });
    // A new session's first snapshot comes with its first checkpoint: unloading it when idle writes one.
    now += 61_000;
    expect(manager.unloadIdle()).toBe(1);
    await expect
      .poll(() =>
        readFile(snapshotFile(), "utf8").then(
          () => true,
          () => false,
        ),
      )
      .toBe(true);
    manager.close();
    await damage(snapshotFile());
    manager = createManager();

    // The admin API sees the whole history, with the stats the transcript tells.
    const detail = await manager.get(key);
    expect(detail?.messages.map((message) => message.content)).toEqual([
      [{ type: "text", text: "one" }],
      [{ type: "text", text: "seen 1" }],
      [{ type: "text", text: "two" }],
      [{ type: "text", text: "seen 2" }],
    ]);
    expect(detail?.stats).toMatchObject({ turns: 2, channel: "api", messageCount: 4 });
    expect((await manager.list()).map((summary) => [summary.key, summary.createdAt])).toEqual([
      [key, startedAt],
    ]);
    // The conversation goes on with all of it: the model is shown both earlier user messages.
    now += 1_000;
    expect((await manager.handle({ inbound: inbound("h", "three") })).text).toBe("seen 3");
    // The damaged file was kept for a person to look at, never overwritten.
    const kept = (await readdir(dir)).filter((name) => name.includes(".corrupt-"));
    expect(kept).toHaveLength(_name.startsWith("deleted") ? 0 : 1);
  });

  it("keeps every readable transcript line when a line in the middle is garbage and the last one is torn", async () => {
    await manager.handle({ inbound: inbound("h", "one") });
    await appendFile(join(dir, `${sessionKeyToFileStem(key)}.jsonl`), "\u0000\u0000garbage{\n");
    await manager.handle({ inbound: inbound("h", "two") });
    await appendFile(join(dir, `${sessionKeyToFileStem(key)}.jsonl`), '{"key":"api:default:api:h","mess');
    manager.close();
    await writeFile(snapshotFile(), "{");
    manager = createManager();
    expect((await manager.handle({ inbound: inbound("h", "three") })).text).toBe("seen 3");
    expect((await manager.get(key))?.messages).toHaveLength(6);
  });

  it("is not invented for a key that never had a transcript", async () => {
    expect(await manager.get("api:default:api:nobody")).toBeUndefined();
    expect(await manager.list()).toEqual([]);
  });
});
