import type { Message } from "./message.js";

/**
 * BPE encodings a {@link TokenCounter} can count with. `@almanac/tokenizer` implements them over the rank
 * tables in its `data/` folder.
 */
export type TokenEncoding = "o200k_base" | "cl100k_base";

/**
 * How a count was obtained. `bpe:*` is a real tokenizer; `estimate` is the labelled
 * fallback (characters per token heuristic) and must never be mistaken for a real count.
 */
export type TokenCountMethod = `bpe:${TokenEncoding}` | "estimate";

/**
 * Counts tokens of text and messages, caching per message.
 * The interface only: `createTokenCounter` in `@almanac/tokenizer` makes one, so core loads no tokenizer.
 */
export interface TokenCounter {
  readonly method: TokenCountMethod;
  /** Tokens of a bare string. */
  countText(text: string): number;
  /** Tokens one message costs in a chat prompt, including the per-message framing. */
  countMessage(message: Message): number;
  /** Sum of {@link countMessage} over the messages. */
  countMessages(messages: readonly Message[]): number;
  /** Cache statistics, for benchmarks and metrics. */
  stats(): { readonly hits: number; readonly misses: number };
}
