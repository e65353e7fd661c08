import { InternalError, splitMessage } from "@almanac/core";

/** Feishu's limit for the request body of a post or card message (text messages may take 150 KB). */
export const FEISHU_POST_BODY_LIMIT_BYTES = 30 * 1024;

/** Room kept for the body's other fields (`receive_id`, `msg_type`, `uuid`, `reply_in_thread`, braces). */
export const BODY_OVERHEAD_BYTES = 1024;
const MIN_CHUNK_CHARACTERS = 32;

/**
 * Wraps Markdown as the `content` of a post with one `md` element, which Feishu renders as Markdown
 * (bold, links, lists, quotes, code blocks) in an ordinary chat bubble that can be replied to and threaded.
 */
export function toPostContent(markdown: string): string {
  return JSON.stringify({
    zh_cn: { title: "", content: [[{ tag: "md", text: withoutMentionTags(markdown) }]] },
  });
}

/**
 * The text with Feishu's mention tags (`<at id=all></at>`, `<at user_id="ou_…"></at>`) broken by a zero-width
 * space, so they show as typed instead of pinging: what the model writes (or a tool's arguments it repeats) never
 * notifies a whole group. Posts and cards both render these tags; Discord's equivalent is `allowed_mentions`.
 */
export function withoutMentionTags(markdown: string): string {
  return markdown.replace(/<(\/?)at\b/gi, "<$1\u200Bat");
}

/** Bytes a `content` string takes inside the JSON request body, where it is escaped a second time. */
export function encodedContentBytes(content: string): number {
  return Buffer.byteLength(JSON.stringify(content), "utf8");
}

/**
 * Converts a Markdown answer into post contents whose request bodies stay within `maxBodyBytes`.
 * Splits with core's `splitMessage` (code fences are never left open), first at a character budget equal to the
 * byte budget, then again, tighter, for any chunk whose escaped UTF-8 is still too big (CJK text, quotes,
 * backslashes and newlines all take more than one byte once encoded twice).
 */
export function markdownToPostContents(
  markdown: string,
  maxBodyBytes = FEISHU_POST_BODY_LIMIT_BYTES,
): string[] {
  return splitMarkdownToFit(markdown, (chunk) => toPostContent(chunk), maxBodyBytes).map(toPostContent);
}

/**
 * Splits Markdown into chunks whose `content`, as `wrap` builds it, keeps the request body within `maxBodyBytes`.
 * The one splitting rule for posts and cards (see {@link markdownToPostContents}).
 */
export function splitMarkdownToFit(
  markdown: string,
  wrap: (chunk: string) => string,
  maxBodyBytes = FEISHU_POST_BODY_LIMIT_BYTES,
): string[] {
  const budget = maxBodyBytes - BODY_OVERHEAD_BYTES;
  if (budget < 1024) throw new RangeError("splitMarkdownToFit: maxBodyBytes must be at least 2048");
  const chunks: string[] = [];
  const place = (text: string, characterLimit: number): void => {
    for (const chunk of splitMessage(text, characterLimit)) {
      const size = encodedContentBytes(wrap(chunk));
      if (size <= budget) {
        chunks.push(chunk);
        continue;
      }
      const scaled = Math.floor(((chunk.length * budget) / size) * 0.95);
      const tighter = Math.min(scaled, chunk.length - 1);
      if (tighter < MIN_CHUNK_CHARACTERS) {
        throw new InternalError("feishu.split_failed", `Cannot fit ${chunk.length} characters into a post.`);
      }
      place(chunk, tighter);
    }
  };
  place(markdown, budget);
  return chunks;
}
