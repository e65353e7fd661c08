import { createHash, randomUUID } from "node:crypto";
import {
  type InboundMessage,
  type Logger,
  type MessageButton,
  type OutboundMessage,
  parseSessionKey,
  UserError,
} from "@almanac/core";
import { z } from "zod";
import {
  type CardPlace,
  cardMessageOf,
  LONGEST_PLACE,
  markdownToCardMessage,
  toCardContent,
} from "./convert-card.js";
import { FEISHU_CHANNEL } from "./convert-inbound.js";
import {
  BODY_OVERHEAD_BYTES,
  encodedContentBytes,
  FEISHU_POST_BODY_LIMIT_BYTES,
  markdownToPostContents,
} from "./convert-outbound.js";
import { FeishuApiError } from "./errors.js";
import type { FeishuApi, MessageTarget, OutgoingMessage } from "./feishu-api.js";
import { RecentMap } from "./recent-map.js";
import type { CardStreamTransport } from "./reply-stream.js";

/** Feishu's code for "the message is recalled" (a reply to it fails). */
const RECALLED_CODE = 230011;
/** Threads remembered for sends without `inReplyTo` (thread id → a message in it). */
const MAX_REMEMBERED_THREADS = 1000;
/** Cards with buttons in direct chats remembered, to show them again without buttons once one is pressed. */
const MAX_REMEMBERED_CARDS = 1000;
/** Feishu's limit on a message `uuid`, in characters. */
const MAX_UUID_LENGTH = 50;

/** Where a message goes: a reply (in the topic when `threadId` is set) or a new message in a chat. */
type Destination =
  | {
      readonly kind: "reply";
      readonly messageId: string;
      /** The chat of the message replied to, when known. */
      readonly chatId: string | undefined;
      readonly threadId: string | undefined;
    }
  | { readonly kind: "send"; readonly target: MessageTarget };

/** One message of an answer: a Markdown post, or the card with the buttons. */
type Piece =
  | { readonly kind: "post"; readonly content: string }
  | { readonly kind: "card"; readonly markdown: string };

/** Dependencies of {@link OutboundSender}. */
export interface OutboundSenderOptions {
  readonly api: FeishuApi;
  /** The adapter's account name: session keys of other accounts are refused. */
  readonly account: string;
  readonly logger: Logger;
}

/**
 * The adapter's way out: where an answer goes (a reply to the question or the pressed card, into its topic, or a
 * new message in the session's chat), how it is cut into posts and a card, and what is remembered for later (the
 * latest message of each topic, the Markdown of cards with buttons in direct chats).
 */
export class OutboundSender {
  readonly #api: FeishuApi;
  readonly #account: string;
  readonly #logger: Logger;
  readonly #threadMessages = new RecentMap<string, string>(MAX_REMEMBERED_THREADS);
  /** Card message id → its Markdown, for cards with buttons sent to direct chats. */
  readonly #cardTexts = new RecentMap<string, string>(MAX_REMEMBERED_CARDS);

  constructor(options: OutboundSenderOptions) {
    this.#api = options.api;
    this.#account = options.account;
    this.#logger = options.logger;
  }

  /**
   * Sends Markdown as one or more posts (≤ 30 KB each), as replies to `inReplyTo` when given. With `buttons`, the
   * last piece is an interactive card showing them. Each piece carries a `uuid`: random, or from
   * `idempotencyKey` so that sending the same message again within Feishu's hour posts nothing new.
   */
  async send(message: OutboundMessage): Promise<void> {
    if (message.text.trim() === "") return;
    let destination = this.#destinationOf(message);
    const buttons = message.buttons ?? [];
    const direct = parseSessionKey(message.sessionKey).kind === "dm";
    for (const [index, piece] of piecesOf(message.text, buttons).entries()) {
      const uuid =
        message.idempotencyKey === undefined ? randomUUID() : pieceUuid(message.idempotencyKey, index);
      const render = (where: Destination): OutgoingMessage =>
        piece.kind === "post"
          ? { msgType: "post", content: piece.content, uuid }
          : {
              msgType: "interactive",
              content: toCardContent(piece.markdown, buttons, cardPlace(direct, where)),
              uuid,
            };
      const sent = await this.#deliver(destination, render, message.sessionKey);
      destination = sent.destination;
      if (piece.kind === "card" && direct) this.#cardTexts.set(sent.messageId, piece.markdown);
    }
  }

  /**
   * How a streamed answer to `message` goes out: cards (without buttons) where {@link send} would post the answer,
   * each after the previous one, edited in place; the fallback goes out like {@link send}.
   */
  cardStreamTransport(message: OutboundMessage): CardStreamTransport {
    const direct = parseSessionKey(message.sessionKey).kind === "dm";
    let destination: Destination | undefined;
    const place = (): CardPlace => cardPlace(direct, destination ?? this.#destinationOf(message));
    return {
      sendCard: async (markdown) => {
        const uuid = randomUUID();
        const sent = await this.#deliver(
          destination ?? this.#destinationOf(message),
          (where) => ({
            msgType: "interactive",
            content: toCardContent(markdown, [], cardPlace(direct, where)),
            uuid,
          }),
          message.sessionKey,
        );
        destination = sent.destination;
        return sent.messageId;
      },
      patchCard: (messageId, markdown) =>
        this.#api.patchCard(messageId, toCardContent(markdown, [], place())),
      recall: (messageId) => this.#api.recall(messageId),
      sendText: (markdown) =>
        this.send({
          sessionKey: message.sessionKey,
          text: markdown,
          ...(message.inReplyTo === undefined ? {} : { inReplyTo: message.inReplyTo }),
        }),
      fits: (markdown) =>
        encodedContentBytes(toCardContent(markdown, [], LONGEST_PLACE)) <=
        FEISHU_POST_BODY_LIMIT_BYTES - BODY_OVERHEAD_BYTES,
    };
  }

  /**
   * Sends one message of an uploaded image or file (`msgType` `image`, `file` or `audio`) where {@link send} would
   * post an answer in `sessionKey` (a reply to `inReplyTo` when given).
   */
  async sendUploaded(
    target: { readonly sessionKey: string; readonly inReplyTo?: InboundMessage | undefined },
    msgType: "image" | "file" | "audio",
    content: string,
  ): Promise<void> {
    const uuid = randomUUID();
    await this.#deliver(this.#destinationOf(target), () => ({ msgType, content, uuid }), target.sessionKey);
  }

  /** Notes the latest message seen in a topic, so answers without `inReplyTo` still go into it. */
  rememberThread(threadId: string | undefined, messageId: string): void {
    if (threadId !== undefined) this.#threadMessages.set(threadId, messageId);
  }

  /** The Markdown of a card with buttons sent to a direct chat, forgotten as it is taken (its buttons go). */
  takeCardText(cardMessageId: string): string | undefined {
    const markdown = this.#cardTexts.get(cardMessageId);
    this.#cardTexts.delete(cardMessageId);
    return markdown;
  }

  /** Sends one piece to `destination`; a reply to a recalled message goes to the session's chat instead. */
  async #deliver(
    destination: Destination,
    render: (where: Destination) => OutgoingMessage,
    sessionKey: string,
  ): Promise<{ readonly messageId: string; readonly destination: Destination }> {
    if (destination.kind === "send") {
      return { messageId: await this.#api.send(destination.target, render(destination)), destination };
    }
    try {
      const inThread = destination.threadId !== undefined;
      const messageId = await this.#api.reply(destination.messageId, render(destination), inThread);
      return { messageId, destination };
    } catch (error) {
      if (!(error instanceof FeishuApiError) || error.platformCode !== RECALLED_CODE) throw error;
      // The user withdrew the question while the turn ran: answer in the conversation instead.
      const fallback = this.#destinationOfSession(sessionKey, false);
      if (fallback.kind === "reply") throw error;
      return { messageId: await this.#api.send(fallback.target, render(fallback)), destination: fallback };
    }
  }

  /** Where an answer goes: a reply to the Feishu message it answers, or else into the session's chat. */
  #destinationOf(message: {
    readonly sessionKey: string;
    readonly inReplyTo?: InboundMessage | undefined;
  }): Destination {
    const inbound = message.inReplyTo;
    return inbound !== undefined && inbound.channel === FEISHU_CHANNEL
      ? replyDestination(inbound)
      : this.#destinationOfSession(message.sessionKey);
  }

  /** Where an answer for a session goes when there is no message to reply to (or `useThread` is false). */
  #destinationOfSession(sessionKey: string, useThread = true): Destination {
    const parts = parseSessionKey(sessionKey);
    if (parts.channel !== FEISHU_CHANNEL || parts.account !== this.#account) {
      throw new UserError(
        "feishu.session_key_invalid",
        `Session key ${JSON.stringify(sessionKey)} is not for Feishu account "${this.#account}".`,
      );
    }
    if (parts.thread !== undefined && useThread) {
      // Replying in the thread to any of its messages keeps the answer in the thread.
      const anchor =
        this.#threadMessages.get(parts.thread) ?? (parts.thread.startsWith("om_") ? parts.thread : undefined);
      if (anchor !== undefined) {
        const chatId = parts.kind === "dm" ? undefined : parts.id;
        return { kind: "reply", messageId: anchor, chatId, threadId: parts.thread };
      }
      this.#logger.info({ thread: parts.thread }, "Feishu thread unknown; posting to its chat instead");
    }
    return {
      kind: "send",
      target:
        parts.kind === "dm"
          ? { receiveIdType: "open_id", receiveId: parts.id }
          : { receiveIdType: "chat_id", receiveId: parts.id },
    };
  }
}

/**
 * The `uuid` of piece `index` of a message with an idempotency key: `{key}-{index}` when that fits Feishu's 50
 * characters in plain ASCII (a firing id does), else the SHA-256 of both in hex, cut to 50. The two forms cannot
 * meet: the readable one always has a `-`, the hex one never.
 */
export function pieceUuid(idempotencyKey: string, index: number): string {
  const readable = `${idempotencyKey}-${index}`;
  if (readable.length <= MAX_UUID_LENGTH && /^[\w-]+$/.test(readable)) return readable;
  return createHash("sha256").update(`${idempotencyKey}\n${index}`).digest("hex").slice(0, MAX_UUID_LENGTH);
}

const threadedRaw = z.object({ threadId: z.string() });

/** The topic a message was in (group threads, and topics inside a direct chat). */
function threadOf(message: InboundMessage): string | undefined {
  if (message.conversation.kind === "thread") return message.conversation.id;
  const parsed = threadedRaw.safeParse(message.raw);
  return parsed.success ? parsed.data.threadId : undefined;
}

/** A reply to `inbound`: to the message itself, or to the card when it was a button press. */
function replyDestination(inbound: InboundMessage): Destination {
  const { conversation } = inbound;
  return {
    kind: "reply",
    messageId: cardMessageOf(inbound) ?? inbound.id,
    chatId: conversation.kind === "thread" ? conversation.parentId : conversation.id,
    threadId: threadOf(inbound),
  };
}

/** The pieces of an answer: posts, and with buttons a card last. */
function piecesOf(markdown: string, buttons: readonly MessageButton[]): Piece[] {
  if (buttons.length === 0) {
    return markdownToPostContents(markdown).map((content) => ({ kind: "post", content }));
  }
  const { posts, cardMarkdown } = markdownToCardMessage(markdown, buttons);
  return [
    ...posts.map((content): Piece => ({ kind: "post", content })),
    { kind: "card", markdown: cardMarkdown },
  ];
}

/** What a card's buttons say about where it went (see `CardPlace`). */
function cardPlace(direct: boolean, destination: Destination): CardPlace {
  const chatType = direct ? "p2p" : "group";
  if (destination.kind === "reply") {
    return { chatType, chatId: destination.chatId, threadId: destination.threadId };
  }
  const { receiveIdType, receiveId } = destination.target;
  return { chatType, chatId: receiveIdType === "chat_id" ? receiveId : undefined };
}
