import {
  type Agent,
  createAgent,
  createHookRegistry,
  type Toolkit,
  type WorkingMemory,
} from "@almanac/agent";
import type { ChatModel, Logger, Message, TokenCounter, Usage } from "@almanac/core";
import {
  type CompactionEvent,
  createCompactor,
  type MemoryScope,
  runWithOverflowRecovery,
} from "@almanac/memory";
import type { AlmanacConfig } from "../config/config-schema.js";

/** One turn or command, as the session manager hands it to the runtime. */
export interface TurnContext {
  readonly sessionKey: string;
  readonly systemPrompt: string;
  readonly memory: WorkingMemory;
  readonly signal?: AbortSignal;
}

/** A turn: the context plus how to stream and how to keep the transcript complete. */
export interface TurnRun extends TurnContext {
  readonly stream?: boolean;
  readonly onTextDelta?: (text: string) => void;
  /** Writes new messages to the transcript; runs before every reasoning step, ahead of compaction. */
  readonly transcribe?: () => Promise<void>;
}

/** What a turn produced. */
export interface TurnOutcome {
  readonly reply: Message;
  readonly usage: readonly Usage[];
  /** One-line notices for the user (e.g. "Context compacted: …"), when configured. */
  readonly notices: readonly string[];
}

/** The agent side of a session: running turns and compacting on request. Absent when no model is configured. */
export interface AgentRuntime {
  readonly modelName: string;
  /** The system prompt of a session, given the memory excerpt loaded when the session started. */
  systemPrompt(memoryContext: string): string;
  runTurn(turn: TurnRun): Promise<TurnOutcome>;
  /** `/compact [focus]`: compacts now and says what happened in one line. */
  compact(turn: TurnContext & { readonly focus?: string }): Promise<string>;
}

/** Options of {@link createAgentRuntime}. */
export interface AgentRuntimeOptions {
  readonly config: AlmanacConfig;
  readonly model: ChatModel;
  readonly compactionModel: ChatModel;
  /** Whose memory a session reaches, from its key (see `resolveMemoryScope`). */
  readonly scopeOf: (sessionKey: string) => MemoryScope;
  /**
   * A toolkit for one turn in a scope: a shared chat's toolkit has no tool over the owner's private memory.
   * Built per turn (tools may keep per-turn state, such as the versions of files read).
   */
  readonly toolkit: (scope: MemoryScope) => Toolkit;
  readonly tokenCounter: TokenCounter;
  readonly basePrompt: string;
  /**
   * Fixed text between the base prompt and the session's memory context. The server leaves it empty: the
   * memory guide depends on the session's scope, so it comes with the session's memory context.
   */
  readonly memoryGuide?: string;
  /** Journals compacted messages for the daily logs; awaited before a compaction commits. */
  readonly journal: (
    sessionKey: string,
    reason: "auto" | "command" | "overflow",
    messages: readonly Message[],
    summary: string,
  ) => Promise<void>;
  readonly onCompaction?: (event: CompactionEvent) => void;
  readonly logger: Logger;
}

/**
 * Wires the agent with the compaction hook for every turn: compaction runs before every reasoning step,
 * a provider "context too long" triggers one emergency compaction and a retry, and compacted messages are
 * journaled for the summarizer (with the session key) before they leave the prompt.
 */
export function createAgentRuntime(options: AgentRuntimeOptions): AgentRuntime {
  const { config, model, toolkit, tokenCounter, logger } = options;
  const compactorFor = (sessionKey: string, notices: string[]) =>
    createCompactor({
      tokenCounter,
      contextWindow: config.model.contextWindow,
      maxOutputTokens: config.model.maxOutputTokens,
      thresholds: {
        ceiling: config.compaction.ceilingTokens,
        ...(config.compaction.share === undefined ? {} : { share: config.compaction.share }),
      },
      summaryModel: options.compactionModel,
      fallbackModel: model,
      journal: (batch) => options.journal(sessionKey, batch.reason, batch.messages, batch.summary),
      notifyUser: config.compaction.notify,
      onEvent: (event) => {
        if (event.type === "compaction-end" && event.outcome !== "failed" && event.notice)
          notices.push(event.notice);
        options.onCompaction?.(event);
      },
      logger: logger.child({ sessionKey, component: "compaction" }),
    });

  return {
    modelName: model.modelName,
    systemPrompt: (memoryContext) =>
      [options.basePrompt, options.memoryGuide ?? "", memoryContext]
        .filter((part) => part !== "")
        .join("\n\n"),
    async runTurn(turn) {
      const notices: string[] = [];
      const compactor = compactorFor(turn.sessionKey, notices);
      const turnToolkit = toolkit(options.scopeOf(turn.sessionKey));
      const tools = turnToolkit.specs();
      const hooks = createHookRegistry();
      // Registration order is run order: the transcript sees every message before compaction can shorten it.
      const transcribe = turn.transcribe;
      if (transcribe) hooks.on("preReasoning", async () => transcribe());
      compactor.attach(hooks);
      const agent: Agent = createAgent({
        model,
        toolkit: turnToolkit,
        hooks,
        systemPrompt: turn.systemPrompt,
        maxIterations: config.agent.maxIterations,
        logger: logger.child({ sessionKey: turn.sessionKey }),
      });
      const result = await runWithOverflowRecovery(
        () =>
          agent.run({
            memory: turn.memory,
            ...(turn.signal ? { signal: turn.signal } : {}),
            ...(turn.stream ? { stream: true } : {}),
            onEvent: (event) => {
              if (event.type === "text-delta") turn.onTextDelta?.(event.text);
            },
          }),
        () =>
          compactor.compact(turn.memory, {
            systemPrompt: turn.systemPrompt,
            tools,
            reason: "overflow",
            ...(turn.signal ? { signal: turn.signal } : {}),
          }),
      );
      return { reply: result.reply, usage: result.usage, notices };
    },
    async compact(turn) {
      const notices: string[] = [];
      const result = await compactorFor(turn.sessionKey, notices).compact(turn.memory, {
        systemPrompt: turn.systemPrompt,
        tools: toolkit(options.scopeOf(turn.sessionKey)).specs(),
        reason: "command",
        ...(turn.focus ? { focus: turn.focus } : {}),
        ...(turn.signal ? { signal: turn.signal } : {}),
      });
      const counts = `${result.tokensBefore.toLocaleString("en-US")} → ${result.tokensAfter.toLocaleString("en-US")} tokens`;
      if (result.outcome === "summarized") {
        return `Compacted ${result.compactedMessages} messages into the rolling summary (${counts}, summary by ${result.summarizer}).`;
      }
      if (result.outcome === "compressed")
        return `Shortened old tool output without summarizing (${counts}).`;
      return `Nothing to compact yet (${counts}).`;
    },
  };
}
