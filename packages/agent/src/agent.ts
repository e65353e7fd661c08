import {
  type ChatModel,
  createMessage,
  describeError,
  type Logger,
  type Message,
  silentLogger,
  toolCallsOf,
  type Usage,
} from "@almanac/core";
import { runActingStep } from "./acting-step.js";
import { type AgentEvent, type AgentRunResult, createEventEmitter } from "./agent-events.js";
import { AgentError } from "./errors.js";
import { type BeforeModelCall, createHookRegistry, type HookRegistry } from "./hooks.js";
import { positiveInteger } from "./positive-integer.js";
import { buildPrompt } from "./prompt.js";
import { runReasoningStep, throwIfAborted } from "./reasoning-step.js";
import { answerOpenToolCalls } from "./tool-call-pairing.js";
import { createToolkit, type Toolkit } from "./toolkit.js";
import type { WorkingMemory } from "./working-memory.js";

/** Configuration of {@link createAgent}. */
export interface AgentOptions {
  readonly model: ChatModel;
  /** Tools the model may call; none by default (calls are then answered as unknown tools). */
  readonly toolkit?: Toolkit;
  /**
   * What runs before every model call, in this order (e.g. write the new messages to the transcript, then
   * compact when due): an ordered list in code, not an order of registration.
   */
  readonly beforeModelCall?: readonly BeforeModelCall[];
  /** Extension points after a model call and around each tool call. */
  readonly hooks?: HookRegistry;
  /** The system prompt, or a function read before every reasoning step (e.g. to include the date). */
  readonly systemPrompt: string | (() => string);
  /** Most reasoning steps (model calls) per run. Default 16. */
  readonly maxIterations?: number;
  /**
   * Output cap sent with every reasoning step (`maxOutputTokens`), so prompt + answer fit the window.
   * Default: none from the agent (the model's own default cap applies).
   */
  readonly maxOutputTokens?: number;
  readonly logger?: Logger;
  /** Milliseconds since the epoch; stamps the messages the run adds. Default `Date.now`. */
  readonly clock?: () => number;
}

/** One run of the loop over a conversation's memory. */
export interface AgentRunOptions {
  /** Updated in place: the input, every assistant and tool message, and the reply are appended. */
  readonly memory: WorkingMemory;
  /** The new message (usually the user's); omitted to let the model continue from memory as it is. */
  readonly input?: Message;
  /** Stops the run between steps; passed to the model and the tools. */
  readonly signal?: AbortSignal;
  /** Use the model's streaming call (text arrives as `text-delta` events while it is generated). */
  readonly stream?: boolean;
  readonly onEvent?: (event: AgentEvent) => void;
}

/** A ReAct agent: reason, act with tools, repeat until the model answers without tool calls. */
export interface Agent {
  /**
   * Runs until a final answer or the step limit. Model errors propagate as thrown, hook failures as
   * `agent.hook_failed`, cancellation as `agent.aborted`; in every case memory stays valid for the
   * next run (no tool call is left without a result).
   */
  run(options: AgentRunOptions): Promise<AgentRunResult>;
}

function stepLimitMessage(maxIterations: number): string {
  return (
    `I stopped because I reached the limit of ${maxIterations} steps for one request before I could finish. ` +
    'The work so far is kept: say "continue" and I will pick up where I left off, or narrow the request.'
  );
}

/** Creates an agent; the entry point only wires the phases (prompt, reasoning, acting). */
export function createAgent(options: AgentOptions): Agent {
  const { model } = options;
  const toolkit = options.toolkit ?? createToolkit([]);
  const hooks = options.hooks ?? createHookRegistry();
  const beforeModelCall = options.beforeModelCall ?? [];
  const maxIterations = positiveInteger(options.maxIterations, 16, "createAgent: maxIterations");
  const logger = (options.logger ?? silentLogger).child({ component: "agent" });
  const clock = options.clock ?? Date.now;
  const maxOutputTokens =
    options.maxOutputTokens === undefined
      ? undefined
      : positiveInteger(options.maxOutputTokens, 1, "createAgent: maxOutputTokens");
  const { systemPrompt: systemPromptOption } = options;
  const resolveSystemPrompt =
    typeof systemPromptOption === "string" ? () => systemPromptOption : systemPromptOption;

  return {
    async run({ memory, input, signal, stream = false, onEvent }) {
      throwIfAborted(signal);
      const emit = createEventEmitter(onEvent, logger);
      const usage: Usage[] = [];
      const finish = (reply: Message, iterations: number, stopReason: AgentRunResult["stopReason"]) => {
        const result: AgentRunResult = { reply, iterations, stopReason, usage };
        emit({ type: "run-end", result });
        return result;
      };

      // A previous run that crashed mid-tools may have left calls unanswered; repair before going on.
      if (memory.repairToolPairs()) {
        logger.warn({}, "memory had unpaired tool calls or results; repaired before the run");
      }
      if (input !== undefined) memory.append(input);
      try {
        let lastUsage: Usage | undefined;
        for (let iteration = 1; iteration <= maxIterations; iteration += 1) {
          throwIfAborted(signal);
          const systemPrompt = resolveSystemPrompt();
          const tools = toolkit.specs();
          const context = {
            memory,
            iteration,
            systemPrompt,
            tools,
            ...(lastUsage === undefined ? {} : { lastUsage }),
            ...(signal === undefined ? {} : { signal }),
          };
          for (const [index, step] of beforeModelCall.entries()) {
            try {
              await step(context);
            } catch (error) {
              throw new AgentError(
                "agent.step_failed",
                `Step ${index + 1} before the model call failed: ${describeError(error)}`,
                { cause: error },
              );
            }
          }
          throwIfAborted(signal);
          // Built after the steps, so a compaction that rewrote memory shapes this very request.
          const messages = buildPrompt({ systemPrompt, memory });
          const response = await runReasoningStep({
            model,
            messages,
            tools,
            maxOutputTokens,
            iteration,
            stream,
            signal,
            emit,
            logger,
          });
          if (response.usage !== undefined) {
            usage.push(response.usage);
            lastUsage = response.usage;
          }
          const assistant: Message = Object.freeze({ ...response.message, timestamp: clock() });
          memory.append(assistant);
          const stepResponse = { ...response, message: assistant };
          emit({ type: "reasoning-end", iteration, response: stepResponse });
          await hooks.run("postReasoning", { memory, iteration, response: stepResponse });

          const calls = toolCallsOf(assistant);
          logger.debug(
            { iteration, toolCalls: calls.length, finishReason: response.finishReason },
            "reasoning step done",
          );
          if (calls.length === 0) return finish(assistant, iteration, "final");
          await runActingStep({ memory, calls, iteration, toolkit, hooks, signal, clock, emit, logger });
        }
        logger.warn({ maxIterations }, "run stopped at the step limit");
        const reply = createMessage({
          role: "assistant",
          timestamp: clock(),
          content: stepLimitMessage(maxIterations),
        });
        memory.append(reply);
        return finish(reply, maxIterations, "max_iterations");
      } catch (error) {
        answerOpenToolCalls(
          memory,
          `This tool call was not run: the run stopped first (${describeError(error)}).`,
          clock(),
        );
        throw error;
      }
    },
  };
}
