import {
  createMessage,
  type Logger,
  type MessageMark,
  type ToolCallBlock,
  type ToolResultBlock,
} from "@almanac/core";
import type { EmitAgentEvent } from "./agent-events.js";
import type { HookRegistry } from "./hooks.js";
import type { Toolkit } from "./toolkit.js";
import type { WorkingMemory } from "./working-memory.js";

/** Input of {@link runActingStep}: the tool calls of one assistant message. */
export interface ActingStepInput {
  readonly memory: WorkingMemory;
  readonly calls: readonly ToolCallBlock[];
  readonly iteration: number;
  readonly toolkit: Toolkit;
  readonly hooks: HookRegistry;
  readonly signal: AbortSignal | undefined;
  readonly clock: () => number;
  readonly emit: EmitAgentEvent;
  readonly logger: Logger;
}

interface Answered {
  readonly call: ToolCallBlock;
  readonly result: ToolResultBlock;
  readonly finishedAt: number;
  readonly marks: readonly MessageMark[];
}

/**
 * Answers every call: `preActing` hooks in call order (a hook may skip a call), then all remaining
 * calls run concurrently, then one tool message per result is appended in the calls' order, then
 * `postActing` hooks run in call order. The toolkit never throws, so only a hook can interrupt this.
 */
export async function runActingStep(input: ActingStepInput): Promise<void> {
  const { memory, iteration, hooks, clock, emit } = input;
  const plans: Array<{
    readonly call: ToolCallBlock;
    readonly skip: ToolResultBlock | undefined;
    readonly marks: readonly MessageMark[];
  }> = [];
  for (const call of input.calls) {
    const outcome = await hooks.run("preActing", { memory, iteration, call });
    const skip: ToolResultBlock | undefined =
      outcome?.skip === undefined
        ? undefined
        : {
            type: "tool_result",
            callId: call.id,
            content: outcome.skip.content,
            ...(outcome.skip.isError === true ? { isError: true } : {}),
          };
    plans.push({ call, skip, marks: outcome?.marks ?? [] });
  }

  const answered = await Promise.all(
    plans.map(async ({ call, skip, marks }): Promise<Answered> => {
      const startedAt = clock();
      if (skip !== undefined) {
        emit({ type: "tool-end", iteration, call, result: skip, skipped: true, durationMs: 0 });
        return { call, result: skip, finishedAt: startedAt, marks };
      }
      emit({ type: "tool-start", iteration, call });
      const result = await input.toolkit.execute(call, {
        logger: input.logger,
        ...(input.signal === undefined ? {} : { signal: input.signal }),
      });
      const finishedAt = clock();
      emit({ type: "tool-end", iteration, call, result, skipped: false, durationMs: finishedAt - startedAt });
      return { call, result, finishedAt, marks };
    }),
  );

  memory.append(
    ...answered.map(({ result, finishedAt, marks }) =>
      createMessage({ role: "tool", timestamp: finishedAt, content: [result], marks }),
    ),
  );
  for (const { call, result } of answered) {
    await hooks.run("postActing", { memory, iteration, call, result });
  }
}
