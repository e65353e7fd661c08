import type { WorkingMemory } from "@almanac/agent";
import type { TokenCounter } from "@almanac/core";
import { createContextMeter, type OriginalsLookup } from "@almanac/memory";
import type { AgentRuntime, AgentSession } from "./agent-runtime.js";

/**
 * What a loaded session owns besides its memory and stats: its system prompt, the agent side (compactor and
 * meter) and the count every report shows. Created once when the session is loaded, dropped when it is
 * unloaded or reset.
 */
export interface SessionRuntime {
  /** Fixed for the session's life in memory, so the prompt prefix stays stable (and cacheable). */
  readonly systemPrompt: string;
  /** Absent when no model is configured (commands still work). */
  readonly agent: AgentSession | undefined;
  /**
   * Prompt tokens of the session's next request (system prompt, summary, active messages, tool specs,
   * framing), corrected by the provider ratio: the number compaction triggers on, and the one `/status`,
   * `/compact`, `/history`, the admin API and the metrics show.
   */
  contextTokens(memory: WorkingMemory): number;
}

/** Options of {@link createSessionRuntime}. */
export interface SessionRuntimeOptions {
  readonly sessionKey: string;
  readonly systemPrompt: string;
  readonly runtime: AgentRuntime | undefined;
  /** Used only without a model (no tools then); with one, the agent's compactor measures. */
  readonly tokenCounter: TokenCounter;
  /** Where the journal finds originals of messages shortened before this load: the session transcript. */
  readonly originals: OriginalsLookup;
}

/** Creates the per-session runtime; see {@link SessionRuntime}. */
export function createSessionRuntime(options: SessionRuntimeOptions): SessionRuntime {
  const { sessionKey, systemPrompt, runtime } = options;
  if (runtime) {
    const agent = runtime.openSession({ sessionKey, systemPrompt, originals: options.originals });
    return { systemPrompt, agent, contextTokens: (memory) => agent.contextTokens(memory) };
  }
  const meter = createContextMeter(options.tokenCounter);
  return {
    systemPrompt,
    agent: undefined,
    contextTokens: (memory) => meter.measure(memory, { systemPrompt, tools: [] }).promptTokens,
  };
}
