import { createToolkit, type Toolkit } from "@almanac/agent";
import { type ChatModel, silentLogger } from "@almanac/core";
import { OWNER_SCOPE } from "@almanac/memory-files";
import { createTokenCounter } from "@almanac/tokenizer";
import { SessionManager } from "../src/runtime/session-manager.js";
import { type TurnDependencies, TurnRunner } from "../src/runtime/turn-runner.js";
import { createLaneScheduler } from "../src/sessions/lane-scheduler.js";
import { createSessionStore } from "../src/sessions/session-store.js";

/** The real turn runner (compaction included) over a model fake, with small defaults. Tests only. */
export function createTestRunner(
  chatModel: ChatModel,
  overrides: Partial<TurnDependencies> & { readonly toolkit?: () => Toolkit } = {},
): TurnRunner {
  const { toolkit, ...rest } = overrides;
  const make = toolkit ?? (() => createToolkit([]));
  return new TurnRunner({
    model: chatModel,
    compactionModel: chatModel,
    tools: { toolkit: make, specs: () => make().specs() },
    scopeOf: () => OWNER_SCOPE,
    basePrompt: "test",
    memoryGuide: "",
    tokenCounter: createTokenCounter(),
    compaction: { contextWindow: 128_000, maxOutputTokens: 4_096, thresholds: {}, notifyUser: true },
    maxIterations: 16,
    turnTimeoutMs: 10_000,
    journal: async () => {},
    clock: Date.now,
    logger: silentLogger,
    ...rest,
  });
}

/** A real SessionManager on files in `dir` with small limits, for unit tests. */
export function createTestSessionManager(options: {
  readonly model: ChatModel;
  readonly dir: string;
  readonly sessionsDir?: string;
  readonly queueLimit?: number;
  readonly clock?: () => number;
  /** The turns' tools (default: none). */
  readonly tools?: TurnDependencies["tools"];
}): SessionManager {
  return new SessionManager({
    store: createSessionStore({ dir: options.sessionsDir ?? options.dir }),
    scheduler: createLaneScheduler({ maxConcurrent: 4, laneCapacity: options.queueLimit ?? 4 }),
    runner: createTestRunner(options.model, options.tools === undefined ? {} : { tools: options.tools }),
    missingModelSettings: [],
    tokenCounter: createTokenCounter(),
    limits: { maxMessageChars: 1000, idleUnloadMs: 60_000, contextWindow: 10_000 },
    ...(options.clock ? { clock: options.clock } : {}),
  });
}
