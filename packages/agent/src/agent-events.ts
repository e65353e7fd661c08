import {
  type ChatResponse,
  describeError,
  type Logger,
  type Message,
  type ToolCallBlock,
  type ToolResultBlock,
  type Usage,
} from "@almanac/core";

/** How a run ended: the model gave a final answer, or the step limit stopped it. */
export type AgentStopReason = "final" | "max_iterations";

/** The outcome of one {@link Agent} run. */
export interface AgentRunResult {
  /** The last assistant message, already appended to memory. */
  readonly reply: Message;
  /** Reasoning steps taken (model calls). */
  readonly iterations: number;
  readonly stopReason: AgentStopReason;
  /** Usage of each model call that reported one, in order. */
  readonly usage: readonly Usage[];
}

/**
 * Progress of a run, for streaming UIs and logs. Without streaming, a step's whole text arrives
 * as one `text-delta` after the model answered. `tool-start` is not sent for calls a hook skipped.
 */
export type AgentEvent =
  | { readonly type: "reasoning-start"; readonly iteration: number }
  | { readonly type: "text-delta"; readonly iteration: number; readonly text: string }
  | { readonly type: "reasoning-end"; readonly iteration: number; readonly response: ChatResponse }
  | { readonly type: "tool-start"; readonly iteration: number; readonly call: ToolCallBlock }
  | {
      readonly type: "tool-end";
      readonly iteration: number;
      readonly call: ToolCallBlock;
      readonly result: ToolResultBlock;
      /** True when a `preActing` hook answered the call instead of the tool. */
      readonly skipped: boolean;
      readonly durationMs: number;
    }
  | { readonly type: "run-end"; readonly result: AgentRunResult };

/** Sends one event to the run's listener. */
export type EmitAgentEvent = (event: AgentEvent) => void;

/**
 * Wraps the caller's listener. A listener is an observer: if it throws, the error is logged and the run
 * goes on, because stopping halfway would leave tool calls unanswered for a UI glitch.
 */
export function createEventEmitter(
  onEvent: ((event: AgentEvent) => void) | undefined,
  logger: Logger,
): EmitAgentEvent {
  if (onEvent === undefined) return () => {};
  return (event) => {
    try {
      onEvent(event);
    } catch (error) {
      logger.error({ event: event.type, error: describeError(error) }, "agent event listener threw");
    }
  };
}
