import { createToolkit } from "@almanac/agent";
import { type ChatModel, createTokenCounter, silentLogger } from "@almanac/core";
import { OWNER_SCOPE } from "@almanac/memory-files";
import { loadConfig } from "../src/config/load-config.js";
import { type AgentRuntime, createAgentRuntime } from "../src/runtime/agent-runtime.js";
import { SessionManager } from "../src/runtime/session-manager.js";
import { createLaneScheduler } from "../src/sessions/lane-scheduler.js";
import { createSessionStore } from "../src/sessions/session-store.js";

/** The real agent runtime (compaction included) over a model fake, with an empty configuration. Tests only. */
export function createTestRuntime(chatModel: ChatModel, home: string): AgentRuntime {
  return createAgentRuntime({
    config: loadConfig({ env: {}, cwd: home, dotenv: false }).config,
    model: chatModel,
    compactionModel: chatModel,
    scopeOf: () => OWNER_SCOPE,
    toolkit: () => createToolkit([]),
    tokenCounter: createTokenCounter(),
    basePrompt: "test",
    memoryGuide: "",
    journal: async () => {},
    logger: silentLogger,
  });
}

/** A real SessionManager on files in `dir` with small limits, for unit tests. */
export function createTestSessionManager(options: {
  readonly model: ChatModel;
  readonly dir: string;
  readonly sessionsDir?: string;
  readonly queueLimit?: number;
  readonly clock?: () => number;
}): SessionManager {
  return new SessionManager({
    store: createSessionStore({ dir: options.sessionsDir ?? options.dir }),
    scheduler: createLaneScheduler({ maxConcurrent: 4, laneCapacity: options.queueLimit ?? 4 }),
    runtime: createTestRuntime(options.model, options.dir),
    missingModelSettings: [],
    tokenCounter: createTokenCounter(),
    limits: { maxMessageChars: 1000, turnTimeoutMs: 10_000, idleUnloadMs: 60_000, contextWindow: 10_000 },
    ...(options.clock ? { clock: options.clock } : {}),
  });
}
