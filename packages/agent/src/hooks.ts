import {
  type ChatResponse,
  describeError,
  type MessageMark,
  type ToolCallBlock,
  type ToolResultBlock,
  type ToolSpec,
  type Usage,
} from "@almanac/core";
import { AgentError } from "./errors.js";
import type { WorkingMemory } from "./working-memory.js";

/** What each step before a model call gets; the prompt is built after the steps, so memory rewrites count. */
export interface BeforeModelCallContext {
  readonly memory: WorkingMemory;
  /** 1-based step number within the run. */
  readonly iteration: number;
  readonly systemPrompt: string;
  readonly tools: readonly ToolSpec[];
  /** Usage the provider reported for the previous step of this run, if any. */
  readonly lastUsage?: Usage;
  readonly signal?: AbortSignal;
}

/** After the model answered; the assistant message is already in memory. */
export interface PostReasoningContext {
  readonly memory: WorkingMemory;
  readonly iteration: number;
  readonly response: ChatResponse;
}

/** Before one tool call runs. */
export interface PreActingContext {
  readonly memory: WorkingMemory;
  readonly iteration: number;
  readonly call: ToolCallBlock;
}

/** After one tool call's result is in memory. */
export interface PostActingContext {
  readonly memory: WorkingMemory;
  readonly iteration: number;
  readonly call: ToolCallBlock;
  readonly result: ToolResultBlock;
}

/**
 * A `preActing` outcome: `skip` answers the call without running the tool; `marks` go on the call's tool message
 * either way (e.g. who approved it), recorded in the transcript without changing what the model reads.
 */
export type SkipToolCall =
  | {
      readonly skip: { readonly content: string; readonly isError?: boolean };
      readonly marks?: readonly MessageMark[];
    }
  | { readonly skip?: undefined; readonly marks: readonly MessageMark[] };

/**
 * One step the agent runs before every model call, in the order of {@link AgentOptions.beforeModelCall}
 * (e.g. write the new messages to the transcript, then compact when due). A step that throws fails the run
 * with `agent.step_failed`.
 */
export type BeforeModelCall = (context: BeforeModelCallContext) => void | Promise<void>;

/** Each hook event with the context its handlers get and the value they may return (`undefined`: none). */
export interface HookEvents {
  postReasoning: { context: PostReasoningContext; outcome: undefined };
  preActing: { context: PreActingContext; outcome: SkipToolCall | undefined };
  postActing: { context: PostActingContext; outcome: undefined };
}

/** The name of a hook event. */
export type HookEvent = keyof HookEvents;

/** A handler of one hook event. */
export type HookHandler<E extends HookEvent> = (
  context: HookEvents[E]["context"],
) => HookEvents[E]["outcome"] | void | Promise<HookEvents[E]["outcome"]> | Promise<void>;

/** Where the agent's phases call out to plug-ins such as context compaction. */
export interface HookRegistry {
  /** Adds a handler; returns a function that removes it again. */
  on<E extends HookEvent>(event: E, handler: HookHandler<E>): () => void;
  /**
   * Runs the event's handlers in registration order, each awaited. The first handler that returns
   * a value (only `preActing` has one: a skip) ends the run and its value is returned.
   * A throwing handler becomes an `AgentError` with code `agent.hook_failed` (cause kept).
   */
  run<E extends HookEvent>(event: E, context: HookEvents[E]["context"]): Promise<HookEvents[E]["outcome"]>;
}

type HandlerSets = { readonly [E in HookEvent]: Set<HookHandler<E>> };

/** Creates an empty hook registry. */
export function createHookRegistry(): HookRegistry {
  const handlers: HandlerSets = {
    postReasoning: new Set(),
    preActing: new Set(),
    postActing: new Set(),
  };

  return {
    on(event, handler) {
      // A wrapper gives every registration its own identity, so the same function can be added twice.
      const registered: typeof handler = (context) => handler(context);
      handlers[event].add(registered);
      return () => {
        handlers[event].delete(registered);
      };
    },

    async run<E extends HookEvent>(event: E, context: HookEvents[E]["context"]) {
      // Iterate a copy: a handler added or removed while the event runs takes effect from the next run.
      const current = [...handlers[event]];
      for (const [index, handler] of current.entries()) {
        let outcome: HookEvents[E]["outcome"];
        try {
          outcome = (await handler(context)) ?? undefined;
        } catch (error) {
          throw new AgentError(
            "agent.hook_failed",
            `The ${event} hook #${index + 1} failed: ${describeError(error)}`,
            { cause: error },
          );
        }
        if (outcome !== undefined) return outcome;
      }
      return undefined;
    },
  };
}
