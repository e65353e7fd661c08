import {
  type Agent,
  createAgent,
  createHookRegistry,
  type Toolkit,
  type WorkingMemory,
} from "@almanac/agent";
import {
  type CompactedBatch,
  type CompactionEvent,
  createCompactor,
  fixedPromptBudget,
  formatCompactionNotice,
  type OriginalsLookup,
  resolveThreshold,
  runWithOverflowRecovery,
} from "@almanac/compaction";
import {
  type ChatModel,
  countToolTokens,
  createMessage,
  type Logger,
  type Message,
  type TokenCounter,
  type ToolSpec,
  type Usage,
} from "@almanac/core";
import type { MemoryScope } from "@almanac/memory-files";
import { compactionWindow } from "../config/compaction-window.js";
import type { AlmanacConfig } from "../config/config-schema.js";

/** One turn of a session: its memory, how to stream, and how to keep the transcript complete. */
export interface TurnRun {
  readonly memory: WorkingMemory;
  readonly signal?: AbortSignal;
  /**
   * Part of `signal` that means "stop this reply" (the admin's Stop): when it fired, the turn ends normally
   * with the partial reply kept (see {@link stoppedReply}) instead of failing.
   */
  readonly stopSignal?: AbortSignal;
  readonly stream?: boolean;
  readonly onTextDelta?: (text: string) => void;
  /** Writes new messages to the transcript; runs before every reasoning step, ahead of compaction. */
  readonly transcribe?: () => Promise<void>;
}

/** `/compact [focus]` on a session's memory. */
export interface CompactRun {
  readonly memory: WorkingMemory;
  readonly focus?: string;
  readonly signal?: AbortSignal;
}

/** What a turn produced. */
export interface TurnOutcome {
  readonly reply: Message;
  readonly usage: readonly Usage[];
  /** One-line notices for the user (e.g. "Context compacted: …"), when configured. */
  readonly notices: readonly string[];
  /** True when the stop signal ended the turn: `reply` is then the partial reply with its mark. */
  readonly stopped?: boolean;
  /**
   * Milliseconds the turn's reasoning steps waited on the model (their calls, from the request's building to the
   * parsed answer; retries included). A call that failed or was stopped is not counted.
   */
  readonly modelMs: number;
}

/** The mark (on the message, and at the end of its text) of a reply cut short by a stop request. */
export const STOPPED_MARK = "stopped";

/**
 * The assistant message that ends a stopped turn: the text the model had streamed in the step that was cut
 * (earlier steps are in memory already), followed by `[stopped]`, so the model, the transcript and every
 * reader see that the answer was interrupted. Tool calls of that step were never appended, so no pair is split.
 */
export function stoppedReply(partialText: string, timestamp: number): Message {
  const text = partialText.trimEnd();
  return createMessage({
    role: "assistant",
    timestamp,
    content: text === "" ? "[stopped]" : `${text}\n\n[stopped]`,
    marks: [STOPPED_MARK],
  });
}

/** What the agent side of a session is made from, once, when the session is loaded. */
export interface AgentSessionOptions {
  readonly sessionKey: string;
  /** Fixed for the session's life in memory, so the prompt prefix stays stable (and cacheable). */
  readonly systemPrompt: string;
  /** Originals of messages shortened before this session was loaded (the server reads the transcript). */
  readonly originals?: OriginalsLookup;
}

/**
 * The agent side of one loaded session: its compactor (which keeps the originals of the tool outputs it
 * shortened, for the journal) and its meter. Made when the session is loaded, dropped when it is unloaded
 * or reset: per-session state must not be rebuilt per turn.
 */
export interface AgentSession {
  /** Prompt tokens of the session's next request: the count compaction decides on (see docs/compaction.md). */
  contextTokens(memory: WorkingMemory): number;
  runTurn(turn: TurnRun): Promise<TurnOutcome>;
  /** `/compact [focus]`: compacts now and says what happened in one line. */
  compact(run: CompactRun): Promise<string>;
}

/** The agent side of the server: one per model configuration. Absent when no model is configured. */
export interface AgentRuntime {
  readonly modelName: string;
  /** The system prompt of a session, given the memory excerpt loaded when the session started. */
  systemPrompt(memoryContext: string): string;
  /**
   * Tokens a session's memory section (guide and excerpt) may take: the fixed part of the prompt gets a share
   * of the compaction threshold (`fixedPromptBudget`), less the base prompt and the scope's tool specs.
   */
  memoryRoom(sessionKey: string): number;
  /** Creates the agent side of a session; call once per loaded session. */
  openSession(options: AgentSessionOptions): AgentSession;
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
  /** Stamps messages the runtime writes itself (a stopped reply); `Date.now` unless a test injects one. */
  readonly clock?: () => number;
  /**
   * Fixed text between the base prompt and the session's memory context. The server leaves it empty: the
   * memory guide depends on the session's scope, so it comes with the session's memory context.
   */
  readonly memoryGuide?: string;
  /** Journals compacted messages for the daily logs; awaited before a compaction commits. */
  readonly journal: (batch: CompactedBatch & { readonly sessionKey: string }) => Promise<void>;
  /** Every compaction event, with the session it belongs to. */
  readonly onCompaction?: (event: CompactionEvent, sessionKey: string) => void;
  readonly logger: Logger;
}

/**
 * Wires the agent with the compaction hook for every turn: compaction runs before every reasoning step,
 * a provider "context too long" triggers one emergency compaction and a retry, and compacted messages are
 * journaled for the summarizer (with the session key) before they leave the prompt.
 */
export function createAgentRuntime(options: AgentRuntimeOptions): AgentRuntime {
  const { config, model, tokenCounter, logger } = options;
  const clock = options.clock ?? Date.now;
  // Tool specs (JSON Schemas) per scope, built once: toolkits are made per turn for their per-turn state, but
  // a scope's tool definitions never change, and rebuilding their schemas cost ~1 ms per turn. One entry per
  // scope (the owner, and each shared chat): a few KB each.
  const specsByScope = new Map<string, readonly ToolSpec[]>();
  const specsFor = (scope: MemoryScope, made?: Toolkit): readonly ToolSpec[] => {
    const key = JSON.stringify(scope);
    let specs = specsByScope.get(key);
    if (specs === undefined) {
      specs = (made ?? options.toolkit(scope)).specs();
      specsByScope.set(key, specs);
    }
    return specs;
  };
  const toolkit = (scope: MemoryScope): Toolkit => {
    const made = options.toolkit(scope);
    const specs = specsFor(scope, made);
    return {
      specs: () => specs,
      has: (name) => made.has(name),
      execute: (call, context) => made.execute(call, context),
    };
  };

  const openSession = (session: AgentSessionOptions): AgentSession => {
    const { sessionKey, systemPrompt } = session;
    const scope = options.scopeOf(sessionKey);
    const sessionLogger = logger.child({ sessionKey });
    // What the running turn's compactions did, for its one notice (first before → last after); turns of one
    // session never overlap (the lane scheduler).
    let compacted: { readonly before: number; readonly after: number } | undefined;
    const notices = (): string[] =>
      compacted === undefined ? [] : [formatCompactionNotice(compacted.before, compacted.after)];
    const compactor = createCompactor({
      tokenCounter,
      ...compactionWindow(config),
      summaryModel: options.compactionModel,
      fallbackModel: model,
      journal: (batch) => options.journal({ sessionKey, ...batch }),
      ...(session.originals ? { originals: session.originals } : {}),
      notifyUser: config.compaction.notify,
      onEvent: (event) => {
        if (event.type === "compaction-end" && event.outcome !== "failed" && event.notice)
          compacted = { before: compacted?.before ?? event.tokensBefore, after: event.tokensAfter };
        options.onCompaction?.(event, sessionKey);
      },
      logger: sessionLogger, // the compactor binds component "compaction" itself
    });
    // Specs for measuring between turns: the same array a turn's toolkit gives (so the meter's cache hits).
    const measuringSpecs = (): readonly ToolSpec[] => specsFor(scope);

    return {
      contextTokens: (memory) =>
        compactor.measure(memory, { systemPrompt, tools: measuringSpecs() }).promptTokens,
      async runTurn(turn) {
        compacted = undefined;
        const turnToolkit = toolkit(scope);
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
          systemPrompt,
          maxIterations: config.agent.maxIterations,
          logger: sessionLogger,
        });
        // The text of the reasoning step in progress: what a stop keeps (finished steps are in memory).
        let stepText = "";
        let stepStart = 0;
        let modelMs = 0;
        let result: Awaited<ReturnType<Agent["run"]>>;
        try {
          result = await runWithOverflowRecovery(
            () =>
              agent.run({
                memory: turn.memory,
                ...(turn.signal ? { signal: turn.signal } : {}),
                ...(turn.stream ? { stream: true } : {}),
                onEvent: (event) => {
                  if (event.type === "reasoning-start") stepStart = performance.now();
                  else if (event.type === "reasoning-end") modelMs += performance.now() - stepStart;
                  if (event.type === "reasoning-start" || event.type === "reasoning-end") stepText = "";
                  if (event.type !== "text-delta") return;
                  stepText += event.text;
                  turn.onTextDelta?.(event.text);
                },
              }),
            () =>
              compactor.compact(turn.memory, {
                systemPrompt,
                tools,
                reason: "overflow",
                ...(turn.signal ? { signal: turn.signal } : {}),
              }),
          );
        } catch (error) {
          if (!turn.stopSignal?.aborted) throw error;
          // Stopped: whatever was cut (model call, tool, compaction), the agent left memory valid; the partial
          // reply closes the turn like an answer would.
          const reply = stoppedReply(stepText, clock());
          turn.memory.append(reply);
          logger.info({ sessionKey, partialChars: stepText.length }, "reply stopped on request");
          return { reply, usage: [], notices: [], stopped: true, modelMs };
        }
        // The last step's usage reaches no later check in this turn: learn the provider ratio from it now.
        compactor.observe(turn.memory, result.usage.at(-1));
        return { reply: result.reply, usage: result.usage, notices: notices(), modelMs };
      },
      async compact(run) {
        const result = await compactor.compact(run.memory, {
          systemPrompt,
          tools: measuringSpecs(),
          reason: "command",
          ...(run.focus ? { focus: run.focus } : {}),
          ...(run.signal ? { signal: run.signal } : {}),
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
  };

  // System prompts by memory excerpt: sessions loaded while the excerpt is the same share one string (~5 KB
  // each otherwise, for as long as the session stays loaded). Bounded: an edited MEMORY.md makes a new entry,
  // and sessions still holding an evicted prompt keep their own reference.
  const prompts = new Map<string, string>();
  const systemPrompt = (memoryContext: string): string => {
    const known = prompts.get(memoryContext);
    if (known !== undefined) return known;
    const prompt = [options.basePrompt, options.memoryGuide ?? "", memoryContext]
      .filter((part) => part !== "")
      .join("\n\n");
    if (prompts.size >= SHARED_PROMPTS) {
      const oldest = prompts.keys().next();
      if (oldest.done !== true) prompts.delete(oldest.value);
    }
    prompts.set(memoryContext, prompt);
    return prompt;
  };

  const fixedBudget = fixedPromptBudget(
    resolveThreshold(
      config.model.contextWindow,
      config.model.maxOutputTokens,
      compactionWindow(config).thresholds,
    ),
  );
  const basePromptTokens = tokenCounter.countText(
    [options.basePrompt, options.memoryGuide ?? ""].join("\n\n"),
  );
  const memoryRoom = (sessionKey: string): number =>
    Math.max(
      0,
      fixedBudget - basePromptTokens - countToolTokens(tokenCounter, specsFor(options.scopeOf(sessionKey))),
    );

  return { modelName: model.modelName, systemPrompt, memoryRoom, openSession };
}

/** How many distinct system prompts (one per memory excerpt: the owner's, each shared chat's) are kept to share. */
const SHARED_PROMPTS = 32;
