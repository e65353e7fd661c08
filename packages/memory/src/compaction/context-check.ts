import { buildPrompt, type RollingSummary, systemPromptMessageId } from "@almanac/agent";
import type { Message, TokenCounter, ToolSpec, Usage } from "@almanac/core";

/** What one request would contain: exactly what the agent passes to `buildPrompt`, plus the tool specs. */
export interface PromptParts {
  readonly systemPrompt: string;
  readonly summary: RollingSummary | undefined;
  /** The uncompacted messages, in order. */
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
}

/** Counts the tokens of a would-be request with our tokenizer (no provider correction). */
export interface PromptMeter {
  count(parts: PromptParts): number;
}

/** How far the provider's count may be from ours before we stop believing it. */
export interface RatioBounds {
  readonly min: number;
  readonly max: number;
}

/** Default bounds of the provider/our-count ratio: a provider that reports half or double is believed, no more. */
export const defaultRatioBounds: RatioBounds = Object.freeze({ min: 0.5, max: 2 });

/**
 * Creates a meter over core's cached counter. Messages are cached per content array by the counter; the
 * system message (rebuilt for every request) is cached here by its text, and the tool specs by identity,
 * so a check on an unchanged 1,000-message session costs only lookups.
 */
export function createPromptMeter(counter: TokenCounter): PromptMeter {
  let lastSystemText: string | undefined;
  let lastSystemTokens = 0;
  const toolTokens = new WeakMap<readonly ToolSpec[], number>();

  const countSystem = (message: Message): number => {
    const block = message.content[0];
    const text = message.content.length === 1 && block?.type === "text" ? block.text : undefined;
    if (text !== undefined && text === lastSystemText) return lastSystemTokens;
    const tokens = counter.countMessage(message);
    if (text !== undefined) {
      lastSystemText = text;
      lastSystemTokens = tokens;
    }
    return tokens;
  };

  const countTools = (tools: readonly ToolSpec[]): number => {
    if (tools.length === 0) return 0;
    let tokens = toolTokens.get(tools);
    if (tokens === undefined) {
      tokens = counter.countText(JSON.stringify(tools));
      toolTokens.set(tools, tokens);
    }
    return tokens;
  };

  return {
    count(parts) {
      const prompt = buildPrompt({
        systemPrompt: parts.systemPrompt,
        memory: { summary: parts.summary, activeMessages: () => parts.messages },
      });
      let total = countTools(parts.tools);
      for (const message of prompt) {
        total += message.id === systemPromptMessageId ? countSystem(message) : counter.countMessage(message);
      }
      return total;
    },
  };
}

/**
 * The correction learnt from the provider: its reported prompt tokens divided by our count of the same
 * request, clamped to `bounds`. Returns `previous` when there is nothing usable to learn from.
 */
export function updateTokenRatio(
  previous: number,
  usage: Usage | undefined,
  countedTokens: number | undefined,
  bounds: RatioBounds = defaultRatioBounds,
): number {
  if (usage === undefined || countedTokens === undefined || countedTokens <= 0) return previous;
  if (!Number.isFinite(usage.promptTokens) || usage.promptTokens <= 0) return previous;
  const ratio = usage.promptTokens / countedTokens;
  return Math.min(bounds.max, Math.max(bounds.min, ratio));
}

/** Our count scaled by the learnt ratio, rounded up (a prompt is never estimated smaller than it is). */
export function correctTokens(countedTokens: number, ratio: number): number {
  return Math.ceil(countedTokens * ratio);
}
