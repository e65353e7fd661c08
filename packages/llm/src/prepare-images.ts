import { type ContentBlock, imageAsText, type Message, withContent } from "@almanac/core";

/**
 * Turns an image reference a message holds (e.g. `almanac-file:inbox/…`) into a URL the provider can read (a `data:`
 * URL), at request time only; undefined when it cannot (the file is gone, or is no image): the model then reads the
 * image's text note instead.
 */
export type ImageResolver = (url: string, signal?: AbortSignal) => Promise<string | undefined>;

/** How image parts reach the model (see {@link prepareImages}). */
export interface ImageOptions {
  /** False for a text-only model: every image part travels as its text note (`[image: inbox/…]`). Default true. */
  readonly vision?: boolean;
  /** Resolves references that are not `http(s)`/`data:` URLs; without one such a reference travels as its note. */
  readonly resolveImage?: ImageResolver;
}

/** A text-only model's copy of each message with images, made once per message (messages are immutable). */
const textOnlyCopies = new WeakMap<Message, Message>();

function hasImage(message: Message): boolean {
  return message.role === "user" && message.content.some((block) => block.type === "image");
}

function isProviderReadable(url: string): boolean {
  return url.startsWith("data:") || url.startsWith("https://") || url.startsWith("http://");
}

/** The message with every image part as its text note; frozen, so the wire JSON of it is cached like any message. */
function textOnlyCopy(message: Message): Message {
  let copy = textOnlyCopies.get(message);
  if (copy === undefined) {
    copy = withContent(
      message,
      message.content.map(
        (block): ContentBlock =>
          block.type === "image" ? { type: "text", text: imageAsText(block) } : block,
      ),
    );
    textOnlyCopies.set(message, copy);
  }
  return copy;
}

/**
 * The messages of one request as the model should get them: unchanged when none has an image part (the same
 * array, so nothing is copied for an ordinary request); for a text-only model, images as text notes; for a vision
 * model, references resolved to `data:` URLs in copies that live only as long as the request (not frozen, so the
 * wire JSON cache never keeps the bytes).
 */
export async function prepareImages(
  messages: readonly Message[],
  options: ImageOptions,
  signal?: AbortSignal,
): Promise<readonly Message[]> {
  if (!messages.some(hasImage)) return messages;
  if (options.vision === false)
    return messages.map((message) => (hasImage(message) ? textOnlyCopy(message) : message));
  const resolve = options.resolveImage;
  return Promise.all(
    messages.map(async (message) => {
      if (!hasImage(message)) return message;
      if (message.content.every((block) => block.type !== "image" || isProviderReadable(block.url)))
        return message;
      const content = await Promise.all(
        message.content.map(async (block): Promise<ContentBlock> => {
          if (block.type !== "image" || isProviderReadable(block.url)) return block;
          const url = resolve === undefined ? undefined : await resolve(block.url, signal);
          if (url === undefined) return { type: "text", text: imageAsText(block) };
          return block.detail === undefined
            ? { type: "image", url }
            : { type: "image", url, detail: block.detail };
        }),
      );
      // A plain object, not createMessage's frozen one: its JSON must not be cached (see toOpenAIMessagesJson).
      return { ...message, content };
    }),
  );
}
