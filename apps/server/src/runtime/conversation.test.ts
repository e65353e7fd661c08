import { WorkingMemory } from "@almanac/agent";
import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  createMessage,
  type InboundMessage,
  type Message,
  silentLogger,
} from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { beforeEach, describe, expect, it } from "vitest";
import {
  createMemorySessionState,
  createMemorySessionStore,
  type MemorySessionState,
} from "../../test/support/memory-session-store.js";
import { createTestRunner } from "../../test/test-session-manager.js";
import { openSession, type SessionStore } from "../sessions/session.js";
import { Conversation, originalsFromTranscript } from "./conversation.js";
import type { TurnRequest, TurnResult } from "./session-types.js";
import type { TurnSignals } from "./turn-runner.js";

const KEY = "api:default:api:runtime";

/** Answers with the number of user messages it was shown. */
const countingModel: ChatModel = {
  modelName: "counting",
  contextWindow: 10_000,
  async complete(request: ChatRequest): Promise<ChatResponse> {
    const users = request.messages.filter((message) => message.role === "user").length;
    return {
      message: createMessage({ role: "assistant", content: `seen ${users}` }),
      finishReason: "stop",
      usage: { promptTokens: 10, completionTokens: 2, totalTokens: 12 },
      model: "counting",
      attempts: 1,
    };
  },
  // biome-ignore lint/correctness/useYield: these turns never stream
  async *stream(): AsyncIterable<never> {
    throw new Error("not used");
  },
};

function inbound(text: string): InboundMessage {
  return {
    sessionKey: KEY,
    channel: "api",
    id: text,
    account: "default",
    conversation: { kind: "api", id: "runtime" },
    sender: { id: "runtime" },
    mentioned: true,
    text,
    receivedAt: 1_000,
  };
}

const signals = { lane: new AbortController().signal, stop: new AbortController().signal };

let state: MemorySessionState;
let store: SessionStore;
/** When set, every write to the store fails as a full disk would. */
let diskFull: boolean;
/** The store's writes in order: `written n` / `synced n` appends and `commit n`, n messages each. */
let writes: string[];

/** The counting model, filling the disk while it answers when `fillDiskOnCall` is set. */
let fillDiskOnCall = false;
const diskFillingModel: ChatModel = {
  ...countingModel,
  async complete(request) {
    const response = await countingModel.complete(request);
    if (fillDiskOnCall) diskFull = true;
    fillDiskOnCall = false;
    return response;
  },
};

/** A model that answers only when the call is aborted: it rejects with the abort's reason, as a client does. */
const hangingModel: ChatModel = {
  ...countingModel,
  complete: (request) =>
    new Promise((_resolve, reject) => {
      const { signal } = request;
      if (signal === undefined) throw new Error("the hanging model needs a signal");
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    }),
};

/** A conversation over the in-memory store, and its turns run by a real turn runner. */
type TestConversation = Conversation & {
  runTurn(request: TurnRequest, signals: TurnSignals): Promise<TurnResult>;
};

function openRuntime(
  options: {
    withModel?: boolean;
    memory?: WorkingMemory;
    model?: ChatModel;
    turnTimeoutMs?: number;
    checkpointed?: boolean;
  } = {},
): TestConversation {
  const runner =
    options.withModel === false
      ? undefined
      : createTestRunner(options.model ?? countingModel, { turnTimeoutMs: options.turnTimeoutMs ?? 10_000 });
  const session = openSession(store, KEY);
  const conversation = new Conversation({
    session,
    state: {
      createdAt: 1_000,
      memory: options.memory ?? new WorkingMemory(),
      stats: { turns: 0, compactions: 0, lastActivity: 1_000 },
    },
    checkpointed: options.checkpointed ?? false,
    systemPrompt: "test",
    compactor: runner?.compactorFor(KEY, (ids) => originalsFromTranscript(session, ids)),
    toolSpecs: runner?.toolSpecs(KEY) ?? [],
    tokenCounter: createTokenCounter(),
    contextWindow: 10_000,
    clock: () => 2_000,
    logger: silentLogger,
  });
  return Object.assign(conversation, {
    runTurn: (request: TurnRequest, turnSignals: TurnSignals) =>
      (runner ?? createTestRunner(countingModel)).run(conversation, request, turnSignals),
  });
}

async function transcriptTexts(): Promise<string[]> {
  const texts: string[] = [];
  for await (const message of store.readTranscript(KEY)) texts.push(textOf(message));
  return texts;
}

function textOf(message: Message): string {
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

beforeEach(() => {
  state = createMemorySessionState();
  const memory = createMemorySessionStore(state);
  diskFull = false;
  writes = [];
  const refuse = <T>(write: () => Promise<T>): Promise<T> =>
    diskFull
      ? Promise.reject(Object.assign(new Error("ENOSPC: no space left"), { code: "ENOSPC" }))
      : write();
  store = {
    ...memory,
    save: (snapshot) => refuse(() => memory.save(snapshot)),
    commit: (snapshot, messages) => {
      writes.push(`commit ${messages.length}`);
      return refuse(() => memory.commit(snapshot, messages));
    },
    appendTranscript: (key, messages, durability = "synced") => {
      writes.push(`${durability} ${messages.length}`);
      return refuse(() => memory.appendTranscript(key, messages, durability));
    },
  };
});

describe("a conversation over the in-memory store", () => {
  it("keeps a message the storage refused and writes it, in order, before the next turn's", async () => {
    const runtime = openRuntime();
    diskFull = true;
    await expect(runtime.runTurn({ inbound: inbound("one") }, signals)).rejects.toThrow(/ENOSPC/);
    expect(runtime.memory.messages.map(textOf)).toEqual(["one"]);
    diskFull = false;
    const reply = await runtime.runTurn({ inbound: inbound("two") }, signals);
    expect(reply.text).toBe("seen 2");
    expect(await transcriptTexts()).toEqual(["one", "two", "seen 2"]);
  });

  it("keeps a reply the storage refused after the model answered, and writes it before the next turn's", async () => {
    const runtime = openRuntime({ model: diskFillingModel });
    await runtime.runTurn({ inbound: inbound("zero") }, signals);
    fillDiskOnCall = true;
    await expect(runtime.runTurn({ inbound: inbound("one") }, signals)).rejects.toThrow(/ENOSPC/);
    expect(runtime.memory.messages.map(textOf)).toEqual(["zero", "seen 1", "one", "seen 2"]);
    expect(await transcriptTexts()).toEqual(["zero", "seen 1", "one"]);
    diskFull = false;
    await runtime.runTurn({ inbound: inbound("two") }, signals);
    expect(await transcriptTexts()).toEqual(["zero", "seen 1", "one", "seen 2", "two", "seen 3"]);
  });

  it("cancels a turn that outlasts the turn timeout with turn.timeout, keeping the user's message", async () => {
    const runtime = openRuntime({ model: hangingModel, turnTimeoutMs: 30 });
    await expect(runtime.runTurn({ inbound: inbound("one") }, signals)).rejects.toMatchObject({
      code: "turn.timeout",
    });
    expect(await transcriptTexts()).toEqual(["one"]);
  });

  it("ends a turn whose stop signal fires as stopped, and cancels one whose lane is aborted, with the lane's reason", async () => {
    const stop = new AbortController();
    const stopping = openRuntime({ model: hangingModel }).runTurn(
      { inbound: inbound("one") },
      { lane: new AbortController().signal, stop: stop.signal },
    );
    setTimeout(() => stop.abort(new Error("stopped on request")), 10);
    expect(await stopping).toMatchObject({ stopped: true });

    const lane = new AbortController();
    const shutdown = new Error("the server is shutting down");
    const draining = openRuntime({ model: hangingModel }).runTurn(
      { inbound: inbound("two") },
      { lane: lane.signal, stop: new AbortController().signal },
    );
    setTimeout(() => lane.abort(shutdown), 10);
    await expect(draining).rejects.toMatchObject({ code: "agent.aborted", cause: shutdown });
  });

  it("writes the user's message before the model call without an fsync, and ends each turn with a synced write", async () => {
    let writesAtModelCall: string[] | undefined;
    const runtime = openRuntime({
      model: {
        ...countingModel,
        complete: (request) => {
          writesAtModelCall ??= [...writes];
          return countingModel.complete(request);
        },
      },
    });
    await runtime.runTurn({ inbound: inbound("one") }, signals);
    expect(writesAtModelCall).toEqual(["written 1"]);
    await runtime.runTurn({ inbound: inbound("two") }, signals);
    // The first turn checkpoints (no snapshot yet); the second only appends its reply, synced with its input.
    expect(writes).toEqual(["written 1", "commit 1", "written 1", "synced 1"]);
  });

  it("writes the snapshot with the first turn, then only appends until the 16th turn since it", async () => {
    const runtime = openRuntime();
    const unseen = async () => {
      const loaded = await store.load(KEY);
      return loaded.status === "ok" ? loaded.unseen.length : -1;
    };
    await runtime.runTurn({ inbound: inbound("turn 1") }, signals);
    expect(await unseen()).toBe(0);
    for (let turn = 2; turn <= 16; turn += 1)
      await runtime.runTurn({ inbound: inbound(`turn ${turn}`) }, signals);
    expect(runtime.turnsSinceCheckpoint).toBe(15);
    expect(await unseen()).toBe(30);
    await runtime.runTurn({ inbound: inbound("turn 17") }, signals);
    expect(runtime.turnsSinceCheckpoint).toBe(0);
    expect(await unseen()).toBe(0);
    expect(runtime.stats.turns).toBe(17);
  });

  it("records its first message as the session's title at its first turn, and keeps it in its snapshots", async () => {
    const runtime = openRuntime();
    await runtime.runTurn({ inbound: inbound("  How do\n tides work?") }, signals);
    expect(runtime.stats.title).toBe("How do tides work?");
    const first = await store.load(KEY);
    expect(first.status === "ok" && first.snapshot.stats.title).toBe("How do tides work?");
    await runtime.runTurn({ inbound: inbound("And the sun?") }, signals);
    expect(runtime.stats.title).toBe("How do tides work?");
    await runtime.save();
    const later = await store.load(KEY);
    expect(later.status === "ok" && later.snapshot.stats.title).toBe("How do tides work?");
  });

  it("titles a session stored without a title (an earlier version) from its first user message at its next turn, and its next snapshot keeps it", async () => {
    const memory = new WorkingMemory();
    memory.append(
      createMessage({ role: "user", content: "What did we say about sails?" }),
      createMessage({ role: "assistant", content: "Reef early." }),
    );
    // Loaded from its snapshot: the turn only appends; the title is in its stats, then in the next snapshot.
    const runtime = openRuntime({ memory, checkpointed: true });
    expect(runtime.stats.title).toBeUndefined();
    await runtime.runTurn({ inbound: inbound("And knots?") }, signals);
    expect(runtime.stats.title).toBe("What did we say about sails?");
    await runtime.save();
    const stored = await store.load(KEY);
    expect(stored.status === "ok" && stored.snapshot.stats.title).toBe("What did we say about sails?");
  });

  it("writes messages the transcript lacked at load before the next turn's when the disk refused them then", async () => {
    const fromSnapshot = [
      createMessage({ role: "user", content: "zero", timestamp: 1_000 }),
      createMessage({ role: "assistant", content: "seen 1", timestamp: 1_001 }),
    ];
    const runtime = openRuntime({ memory: new WorkingMemory({ messages: fromSnapshot }) });
    diskFull = true;
    await expect(runtime.catchUp([], [])).rejects.toThrow(/ENOSPC/);
    diskFull = false;
    await runtime.runTurn({ inbound: inbound("one") }, signals);
    expect(await transcriptTexts()).toEqual(["zero", "seen 1", "one", "seen 2"]);
  });

  it("catches up with turns the transcript has past the snapshot, and saves the result", async () => {
    const runtime = openRuntime();
    await runtime.runTurn({ inbound: inbound("one") }, signals);
    const later = [
      createMessage({ role: "user", content: "two", timestamp: 3_000 }),
      createMessage({ role: "assistant", content: "seen 2", timestamp: 3_001 }),
      createMessage({ role: "user", content: "three", timestamp: 3_002 }),
    ];
    await store.appendTranscript(KEY, later);
    const reloaded = openRuntime({ memory: runtime.memory });
    await reloaded.catchUp(later, undefined);
    expect(reloaded.memory.messages.map(textOf)).toEqual(["one", "seen 1", "two", "seen 2", "three"]);
    expect(reloaded.stats.turns).toBe(1);
    const loaded = await store.load(KEY);
    expect(loaded.status === "ok" && loaded.unseen).toEqual([]);
    expect(loaded.status === "ok" && loaded.snapshot.stats.messageCount).toBe(5);
  });

  it("without a model, measures with the token counter and shows that one number everywhere", async () => {
    const runtime = openRuntime({ withModel: false });
    runtime.memory.append(createMessage({ role: "user", content: "hello there", timestamp: 1_000 }));
    const tokens = runtime.contextTokens();
    expect(tokens).toBeGreaterThan(0);
    expect(runtime.figures().contextTokens).toBe(tokens);
    expect(runtime.report().contextTokens).toBe(tokens);
    expect(await runtime.compact(undefined)).toBeUndefined();
    // A runner refuses a conversation that has no compactor (no model when it was loaded).
    await expect(
      createTestRunner(countingModel).run(runtime, { inbound: inbound("x") }, signals),
    ).rejects.toMatchObject({
      code: "session.no_model",
    });
  });
});
