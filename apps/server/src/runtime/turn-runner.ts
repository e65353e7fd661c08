import { type Agent, createAgent, createHookRegistry, type HookRegistry, type Toolkit } from "@almanac/agent";
import {
  type CompactedBatch,
  type CompactionEvent,
  type Compactor,
  createCompactor,
  fixedPromptBudget,
  formatCompactionNotice,
  type OriginalsLookup,
  resolveThreshold,
  runWithOverflowRecovery,
  type ThresholdOptions,
} from "@almanac/compaction";
import {
  type ChatModel,
  createMessage,
  InternalError,
  type Logger,
  linkAbortSignals,
  type Message,
  ProviderError,
  type TokenCounter,
  type ToolSpec,
  type Usage,
  withMark,
} from "@almanac/core";
import type { MemoryScope } from "@almanac/memory-files";
import { countToolTokens } from "@almanac/tokenizer";
import type { Conversation } from "./conversation.js";
import type { TurnRequest, TurnResult } from "./session-types.js";
import { SCHEDULED_MARK, userMessageOf } from "./turn-input.js";

/** The tools a turn may use, by memory scope: every source (memory, workspace files, MCP, …) behind one question. */
export interface ToolSource {
  /**
   * A toolkit for one turn in `scope`. Built per turn (tools may keep per-turn state, such as the versions of
   * files read); a shared chat's toolkit has no tool over the owner's private memory.
   */
  toolkit(scope: MemoryScope, sessionKey: string): Toolkit;
  /** The specs a turn in `scope` hands the model: the same array every turn while the tools are unchanged. */
  specs(scope: MemoryScope): readonly ToolSpec[];
}

/** A call that needs the owner's approval, as the gate is asked about it. */
export interface ApprovalRequest {
  readonly sessionKey: string;
  readonly tool: string;
  readonly arguments: string;
  readonly callId: string;
}

/**
 * Where a turn waits for the owner's approval of a call: resolves once they answered (or the approval expired or
 * was closed), with the text the model reads when the call is not run.
 */
export type ApprovalGate = (
  request: ApprovalRequest,
  options: {
    readonly signal: AbortSignal;
    /** Says something in the conversation now, mid-turn (the question), where its channel can. */
    readonly notify?: TurnRequest["notify"];
  },
) => Promise<{
  readonly approved: boolean;
  /** What the model reads as the call's result when it is not run. */
  readonly text: string;
  /** Put on the call's tool message: the decision as the transcript records it (`approval:K7QD:approved:…`). */
  readonly mark: string;
}>;

/** How compaction is sized for the chat model. */
export interface CompactionSettings {
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  readonly thresholds: ThresholdOptions;
  /** Put one line ("Context compacted: …") at the top of a reply whose turn compacted. */
  readonly notifyUser: boolean;
}

/**
 * Everything a turn depends on, as one typed record built at the composition root (the sessions plugin): the
 * models, the tools for a scope, whose memory a session reaches, the system prompt's parts, where compacted
 * messages are journaled and where compaction events go.
 */
export interface TurnDependencies {
  readonly model: ChatModel;
  /** Writes compaction summaries (may be a cheaper model); the chat model is the fallback. */
  readonly compactionModel: ChatModel;
  readonly tools: ToolSource;
  /** Asks the owner about calls of tools that need approval; without it such calls are refused. */
  readonly approvals?: ApprovalGate;
  /** Whose memory a session reaches, from its key. */
  readonly scopeOf: (sessionKey: string) => MemoryScope;
  readonly basePrompt: string;
  /** Fixed text between the base prompt and a session's memory section (the server leaves it empty). */
  readonly memoryGuide?: string;
  readonly tokenCounter: TokenCounter;
  readonly compaction: CompactionSettings;
  /** Reasoning steps per turn before the agent stops and says so. */
  readonly maxIterations: number;
  readonly turnTimeoutMs: number;
  /** Journals compacted messages for the daily logs; awaited before a compaction commits. */
  readonly journal: (batch: CompactedBatch & { readonly sessionKey: string }) => Promise<void>;
  /** Every compaction event, with the session it belongs to. */
  readonly onCompaction?: (event: CompactionEvent, sessionKey: string) => void;
  /** Stamps messages the runner writes itself (a stopped reply). */
  readonly clock: () => number;
  readonly logger: Logger;
}

/** What stops a turn: the lane closing (shutdown), the admin's Stop, the caller going away. */
export interface TurnSignals {
  readonly lane: AbortSignal;
  /** Means "stop this reply": the turn then ends normally with the partial reply kept. */
  readonly stop: AbortSignal;
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

/** How many distinct system prompts (one per memory excerpt: the owner's, each shared chat's) are kept to share. */
const SHARED_PROMPTS = 32;

/**
 * Runs turns: every turn — a person's message now, a fired task or a heartbeat later — enters here with its
 * conversation and inbound message. One per server (absent when no model is configured). It also makes what a
 * conversation needs from the model side when it is loaded: its system prompt and its compactor.
 */
export class TurnRunner {
  readonly #deps: TurnDependencies;
  /** System prompts by memory excerpt: conversations loaded while the excerpt is the same share one string. */
  readonly #prompts = new Map<string, string>();
  /** The compaction notice collector of each running turn, by session key (a session runs one turn at a time). */
  readonly #noticeCollectors = new Map<string, (event: CompactionEvent) => void>();
  readonly #fixedBudget: number;
  readonly #basePromptTokens: number;
  /** Tokens of a scope's tool specs (one array per scope): counted once, not for every conversation loaded. */
  readonly #toolTokens = new WeakMap<readonly ToolSpec[], number>();

  constructor(deps: TurnDependencies) {
    this.#deps = deps;
    const { compaction } = deps;
    this.#fixedBudget = fixedPromptBudget(
      resolveThreshold(compaction.contextWindow, compaction.maxOutputTokens, compaction.thresholds),
    );
    this.#basePromptTokens = deps.tokenCounter.countText(
      [deps.basePrompt, deps.memoryGuide ?? ""].join("\n\n"),
    );
  }

  get modelName(): string {
    return this.#deps.model.modelName;
  }

  /** The tool specs of a session's scope (the same array every turn's toolkit gives, so meters' caches hit). */
  toolSpecs(sessionKey: string): readonly ToolSpec[] {
    return this.#deps.tools.specs(this.#deps.scopeOf(sessionKey));
  }

  /** The system prompt of a conversation, given the memory section loaded when it started. */
  systemPrompt(memoryContext: string): string {
    const known = this.#prompts.get(memoryContext);
    if (known !== undefined) return known;
    const prompt = [this.#deps.basePrompt, this.#deps.memoryGuide ?? "", memoryContext]
      .filter((part) => part !== "")
      .join("\n\n");
    if (this.#prompts.size >= SHARED_PROMPTS) {
      const oldest = this.#prompts.keys().next();
      if (oldest.done !== true) this.#prompts.delete(oldest.value);
    }
    this.#prompts.set(memoryContext, prompt);
    return prompt;
  }

  /**
   * Tokens a session's memory section (guide and excerpt) may take: the fixed part of the prompt gets a share of
   * the compaction threshold (`fixedPromptBudget`), less the base prompt and the scope's tool specs.
   */
  memoryRoom(sessionKey: string): number {
    const specs = this.toolSpecs(sessionKey);
    let tools = this.#toolTokens.get(specs);
    if (tools === undefined) {
      tools = countToolTokens(this.#deps.tokenCounter, specs);
      this.#toolTokens.set(specs, tools);
    }
    return Math.max(0, this.#fixedBudget - this.#basePromptTokens - tools);
  }

  /** A conversation's compactor: made once when it is loaded, kept until it is unloaded or reset. */
  compactorFor(sessionKey: string, originals: OriginalsLookup): Compactor {
    const deps = this.#deps;
    const { compaction } = deps;
    return createCompactor({
      tokenCounter: deps.tokenCounter,
      contextWindow: compaction.contextWindow,
      maxOutputTokens: compaction.maxOutputTokens,
      thresholds: compaction.thresholds,
      summaryModel: deps.compactionModel,
      fallbackModel: deps.model,
      journal: (batch) => deps.journal({ sessionKey, ...batch }),
      originals,
      notifyUser: compaction.notifyUser,
      onEvent: (event) => {
        this.#noticeCollectors.get(sessionKey)?.(event);
        deps.onCompaction?.(event, sessionKey);
      },
      logger: deps.logger.child({ sessionKey }), // the compactor binds component "compaction" itself
    });
  }

  /**
   * One turn of the agent on `conversation`: the inbound message becomes the user message (written to the
   * transcript before any model time is spent), then reasoning and acting until an answer. Before each model
   * call, in this order: the new messages go to the transcript as they were said, then compaction runs when due.
   * What the turn added is kept whatever happens (answer, model error, abort, stop).
   */
  async run(conversation: Conversation, request: TurnRequest, signals: TurnSignals): Promise<TurnResult> {
    const { compactor, memory, key } = conversation;
    if (compactor === undefined)
      throw new InternalError("session.no_model", `Session ${key} cannot run a turn without a model.`);
    const deps = this.#deps;
    const said = userMessageOf(request.inbound, request.attachments);
    conversation.addUserMessage(request.scheduled === true ? withMark(said, SCHEDULED_MARK) : said);
    // Open the turn before any model time is spent: the user's words survive a crash of the process from here
    // on, and a power loss once fsynced (shortly after, or with the turn's end; see `AppendDurability`). Messages
    // an earlier full disk kept out of the transcript go first; if this fails too, the input joins them (kept in
    // memory, written by the next turn) and the caller gets the storage error.
    await conversation.transcribe();

    const scope = deps.scopeOf(key);
    const toolkit = deps.tools.toolkit(scope, key);
    const turnSignal = linkAbortSignals([signals.lane, signals.stop, request.signal], deps.turnTimeoutMs);
    const agent: Agent = createAgent({
      model: deps.model,
      toolkit,
      hooks: this.#approvalHooks(conversation, toolkit, turnSignal, request.notify),
      // Before every model call, in this order: the transcript gets every new message as it was said, then
      // compaction may shorten or summarize them.
      beforeModelCall: [() => conversation.transcribe(), compactor.beforeModelCall],
      systemPrompt: conversation.systemPrompt,
      maxIterations: deps.maxIterations,
      logger: deps.logger.child({ sessionKey: key }),
    });
    // The turn's compactions make one notice: the first one's "before", the last one's "after".
    let compacted: { readonly before: number; readonly after: number } | undefined;
    this.#noticeCollectors.set(key, (event) => {
      if (event.type === "compaction-end" && event.outcome !== "failed" && event.notice)
        compacted = { before: compacted?.before ?? event.tokensBefore, after: event.tokensAfter };
    });
    // The text of the reasoning step in progress: what a stop keeps (finished steps are in memory).
    let stepText = "";
    let stepStart = 0;
    let modelMs = 0;
    let completed = false;
    try {
      const result = await runWithOverflowRecovery(
        () =>
          agent.run({
            memory,
            signal: turnSignal.signal,
            ...(request.stream ? { stream: true } : {}),
            onEvent: (event) => {
              if (event.type === "reasoning-start") stepStart = performance.now();
              else if (event.type === "reasoning-end") modelMs += performance.now() - stepStart;
              if (event.type === "reasoning-start" || event.type === "reasoning-end") stepText = "";
              if (event.type !== "text-delta") return;
              stepText += event.text;
              request.onTextDelta?.(event.text);
            },
          }),
        () =>
          compactor.compact(memory, {
            systemPrompt: conversation.systemPrompt,
            tools: toolkit.specs(),
            reason: "overflow",
            signal: turnSignal.signal,
          }),
      );
      // The last step's usage reaches no later check in this turn: learn the provider ratio from it now.
      compactor.observe(memory, result.usage.at(-1));
      conversation.countTurn();
      completed = true;
      const answer = result.reply.content
        .flatMap((block) => (block.type === "text" ? [block.text] : []))
        .join("\n");
      const notice =
        compacted === undefined ? undefined : formatCompactionNotice(compacted.before, compacted.after);
      return {
        sessionKey: key,
        kind: "reply",
        text: notice === undefined ? answer : `_${notice}_\n\n${answer}`,
        usage: sumUsage(result.usage),
        modelMs,
      };
    } catch (error) {
      if (signals.stop.aborted) {
        // Stopped: whatever was cut (model call, tool, compaction), the agent left memory valid; the partial
        // reply closes the turn like an answer would.
        const reply = stoppedReply(stepText, deps.clock());
        memory.append(reply);
        conversation.countTurn();
        completed = true;
        deps.logger.info({ sessionKey: key, partialChars: stepText.length }, "reply stopped on request");
        const text = reply.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
        return { sessionKey: key, kind: "reply", text, usage: sumUsage([]), modelMs, stopped: true };
      }
      if (turnSignal.timedOut()) {
        throw new ProviderError(
          "turn.timeout",
          `The turn took longer than ${deps.turnTimeoutMs} ms (ALMANAC_TURN_TIMEOUT_MS) and was cancelled.`,
          { isRetryable: true, cause: error },
        );
      }
      throw error;
    } finally {
      this.#noticeCollectors.delete(key);
      turnSignal.dispose();
      // A turn that failed is checkpointed, so a transcript ending in a user message on load means a crash,
      // not an error.
      await conversation.persist(!completed);
    }
  }

  /**
   * The turn's hooks: a call of a tool that needs approval waits for the owner. The transcript gets the call
   * first (so the question has its context on disk), and the turn's timeout is paused while a person decides.
   * A refusal answers the call with the reason; the model reads it and goes on.
   */
  #approvalHooks(
    conversation: Conversation,
    toolkit: Toolkit,
    turnSignal: ReturnType<typeof linkAbortSignals>,
    notify: TurnRequest["notify"],
  ): HookRegistry {
    const hooks = createHookRegistry();
    const gate = this.#deps.approvals;
    hooks.on("preActing", async ({ call }) => {
      if (!toolkit.requiresApproval(call.name)) return undefined;
      if (gate === undefined)
        return {
          skip: {
            content: `${call.name} needs the owner's approval, and nobody can approve calls here; it was not run.`,
            isError: true,
          },
        };
      await conversation.transcribe();
      turnSignal.pauseTimer();
      try {
        const decision = await gate(
          { sessionKey: conversation.key, tool: call.name, arguments: call.arguments, callId: call.id },
          { signal: turnSignal.signal, notify },
        );
        const marks = [decision.mark];
        return decision.approved ? { marks } : { skip: { content: decision.text, isError: true }, marks };
      } finally {
        if (!turnSignal.signal.aborted) turnSignal.restartTimer();
      }
    });
    return hooks;
  }
}

function sumUsage(usage: readonly Usage[]): TurnResult["usage"] {
  let promptTokens = 0;
  let completionTokens = 0;
  for (const entry of usage) {
    promptTokens += entry.promptTokens;
    completionTokens += entry.completionTokens;
  }
  return { promptTokens, completionTokens };
}
