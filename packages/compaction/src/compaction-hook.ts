import type { BeforeModelCall } from "@almanac/agent";
import { describeError, type Logger } from "@almanac/core";
import type { CheckInput, Compactor } from "./compactor.js";

/**
 * The step before every model call that checks the context and compacts when due. It never
 * fails the run: a failed compaction is logged (and reported as a `compaction-end` event with outcome
 * `failed`) and the step goes ahead; if the prompt then overflows, `runWithOverflowRecovery` gets its turn.
 * Cancellation is left to the agent's own abort check.
 *
 * In order:
 * 1. automatic compaction when the prompt is over the threshold, unless paused after repeated strikes;
 * 2. an emergency compaction (`overflow`: a small kept tail, always summarizes) when the prompt would still
 *    not fit the window, paused or not: a request the provider would refuse is never sent first.
 */
export function createCompactionStep(compactor: Compactor, logger: Logger): BeforeModelCall {
  return async (context) => {
    const input: CheckInput = {
      systemPrompt: context.systemPrompt,
      tools: context.tools,
      lastUsage: context.lastUsage,
    };
    const check = compactor.check(context.memory, input);
    if (!check.due) return;
    const compact = async (reason: "auto" | "overflow"): Promise<boolean> => {
      try {
        await compactor.compact(context.memory, { ...input, reason, signal: context.signal });
        return true;
      } catch (error) {
        if (context.signal?.aborted) return false;
        logger.error(
          { error: describeError(error), reason },
          "compaction before a model call failed; the step goes ahead",
        );
        return false;
      }
    };
    if (check.suspended) {
      logger.debug(
        { tokens: check.promptTokens, threshold: check.threshold, strikes: check.strikes },
        "compaction due but paused after repeated strikes",
      );
    } else if (!(await compact("auto"))) {
      return;
    }
    const now = compactor.measure(context.memory, input).promptTokens;
    if (now > check.limit) await compact("overflow");
  };
}
