import type { HookHandler } from "@almanac/agent";
import { describeError, type Logger } from "@almanac/core";
import type { Compactor } from "./compactor.js";

/**
 * The `preReasoning` handler: checks the context before every model call and compacts when due, unless
 * automatic compaction is paused by strikes. It never fails the run: a failed compaction is logged (and
 * reported as a `compaction-end` event with outcome `failed`) and the step goes ahead; if the prompt then
 * overflows, `runWithOverflowRecovery` gets its turn. Cancellation is left to the agent's own abort check.
 */
export function createCompactionHook(compactor: Compactor, logger: Logger): HookHandler<"preReasoning"> {
  return async (context) => {
    const input = {
      systemPrompt: context.systemPrompt,
      tools: context.tools,
      lastUsage: context.lastUsage,
    };
    const check = compactor.check(context.memory, input);
    if (!check.due) return;
    if (check.suspended) {
      logger.debug(
        { tokens: check.promptTokens, threshold: check.threshold, strikes: check.strikes },
        "compaction due but paused after repeated strikes",
      );
      return;
    }
    try {
      await compactor.compact(context.memory, { ...input, reason: "auto", signal: context.signal });
    } catch (error) {
      if (context.signal?.aborted) return;
      logger.error({ error: describeError(error) }, "automatic compaction failed; the step goes ahead");
    }
  };
}
