import type { Logger } from "@almanac/core";
import type * as lark from "@larksuiteoapi/node-sdk";
import { z } from "zod";
import { FeishuApiError } from "./errors.js";

/** Where a new message goes: a chat (`chat_id`) or a user's direct chat (`open_id`). */
export interface MessageTarget {
  readonly receiveIdType: "chat_id" | "open_id";
  readonly receiveId: string;
}

/** One message to post. `uuid` makes retries idempotent: Feishu drops a repeat within an hour. */
export interface OutgoingMessage {
  readonly msgType: "post" | "text" | "interactive" | "image" | "file" | "audio";
  readonly content: string;
  readonly uuid: string;
}

/** The calls the adapter makes, with Feishu's error conventions turned into {@link FeishuApiError}s. */
export interface FeishuApi {
  /** The bot's open_id, from `GET /open-apis/bot/v3/info`. */
  botOpenId(): Promise<string>;
  /** `POST /open-apis/im/v1/messages`; returns the new message id. */
  send(target: MessageTarget, message: OutgoingMessage): Promise<string>;
  /** `POST /open-apis/im/v1/messages/:id/reply`; returns the new message id. */
  reply(messageId: string, message: OutgoingMessage, replyInThread: boolean): Promise<string>;
  /** `PATCH /open-apis/im/v1/messages/:id`: the card the message shows becomes `content` (a shared card only). */
  patchCard(messageId: string, content: string): Promise<void>;
  /** `DELETE /open-apis/im/v1/messages/:id`: recalls a message the bot sent. */
  recall(messageId: string): Promise<void>;
  /** `POST /open-apis/im/v1/messages/:id/reactions`; returns the reaction id. */
  addReaction(messageId: string, emojiType: string): Promise<string>;
  /** `DELETE /open-apis/im/v1/messages/:id/reactions/:reaction_id`. */
  removeReaction(messageId: string, reactionId: string): Promise<void>;
}

/** Dependencies of {@link createFeishuApi}. */
export interface FeishuApiOptions {
  readonly client: lark.Client;
  readonly logger: Logger;
  readonly maxRetries: number;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Aborts waits between retries (the adapter stopping). */
  readonly signal: AbortSignal;
}

/** Feishu codes that mean "slow down": the gateway's limit and the IM per-chat limit. */
const RATE_LIMIT_CODES = new Set([99991400, 230020]);
const TOO_LARGE_CODE = 230025;
const BASE_RETRY_DELAY_MS = 1000;
const MAX_RETRY_DELAY_MS = 60_000;

const envelopeSchema = z.looseObject({
  code: z.number(),
  msg: z.string().optional(),
  data: z.unknown().optional(),
});
const messageDataSchema = z.object({ message_id: z.string().min(1) });
const reactionDataSchema = z.object({ reaction_id: z.string().min(1) });
const botInfoSchema = z.object({ bot: z.object({ open_id: z.string().min(1) }) });
const tokenFailure = /^failed to get tenant_access_token, code: (\d+), msg: (.*)$/s;

/** Wraps a `lark.Client` with response checks, error mapping and retries. */
export function createFeishuApi(options: FeishuApiOptions): FeishuApi {
  const { client, logger } = options;

  const call = async (
    operation: string,
    request: () => Promise<unknown>,
  ): Promise<Record<string, unknown>> => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await callOnce(operation, request);
      } catch (error) {
        const retryable = error instanceof FeishuApiError && error.isRetryable;
        if (!retryable || attempt >= options.maxRetries || options.signal.aborted) throw error;
        const delayMs = Math.min(
          error.retryAfterMs ?? BASE_RETRY_DELAY_MS * 2 ** attempt,
          MAX_RETRY_DELAY_MS,
        );
        logger.warn(
          { operation, attempt: attempt + 1, delayMs, code: error.code, platformCode: error.platformCode },
          "Feishu call failed; retrying",
        );
        await options.sleep(delayMs, options.signal);
      }
    }
  };

  const messageId = (operation: string, body: Record<string, unknown>): string => {
    const parsed = messageDataSchema.safeParse(body.data);
    if (!parsed.success) throw invalidResponse(operation);
    return parsed.data.message_id;
  };

  return {
    async botOpenId() {
      const operation = "GET /open-apis/bot/v3/info";
      const body = await call(operation, () =>
        client.request({ method: "GET", url: "/open-apis/bot/v3/info" }),
      );
      const parsed = botInfoSchema.safeParse(body);
      if (!parsed.success) throw invalidResponse(operation);
      return parsed.data.bot.open_id;
    },
    async send(target, message) {
      const operation = "POST /open-apis/im/v1/messages";
      const body = await call(operation, () =>
        client.im.message.create({
          params: { receive_id_type: target.receiveIdType },
          data: {
            receive_id: target.receiveId,
            msg_type: message.msgType,
            content: message.content,
            uuid: message.uuid,
          },
        }),
      );
      return messageId(operation, body);
    },
    async reply(id, message, replyInThread) {
      const operation = `POST /open-apis/im/v1/messages/${id}/reply`;
      const body = await call(operation, () =>
        client.im.message.reply({
          path: { message_id: id },
          data: {
            msg_type: message.msgType,
            content: message.content,
            uuid: message.uuid,
            ...(replyInThread ? { reply_in_thread: true } : {}),
          },
        }),
      );
      return messageId(operation, body);
    },
    async patchCard(id, content) {
      const operation = `PATCH /open-apis/im/v1/messages/${id}`;
      await call(operation, () => client.im.message.patch({ path: { message_id: id }, data: { content } }));
    },
    async recall(id) {
      const operation = `DELETE /open-apis/im/v1/messages/${id}`;
      await call(operation, () => client.im.message.delete({ path: { message_id: id } }));
    },
    async addReaction(id, emojiType) {
      const operation = `POST /open-apis/im/v1/messages/${id}/reactions`;
      const body = await call(operation, () =>
        client.im.messageReaction.create({
          path: { message_id: id },
          data: { reaction_type: { emoji_type: emojiType } },
        }),
      );
      const parsed = reactionDataSchema.safeParse(body.data);
      if (!parsed.success) throw invalidResponse(operation);
      return parsed.data.reaction_id;
    },
    async removeReaction(id, reactionId) {
      const operation = `DELETE /open-apis/im/v1/messages/${id}/reactions/${reactionId}`;
      await call(operation, () =>
        client.im.messageReaction.delete({ path: { message_id: id, reaction_id: reactionId } }),
      );
    },
  };
}

/** One attempt: an answer with `code !== 0` (returned by the SDK) or a thrown HTTP error both become errors. */
export async function callOnce(
  operation: string,
  request: () => Promise<unknown>,
): Promise<Record<string, unknown>> {
  let answer: unknown;
  try {
    answer = await request();
  } catch (error) {
    throw fromThrown(operation, error);
  }
  const parsed = envelopeSchema.safeParse(answer);
  if (!parsed.success) throw invalidResponse(operation);
  if (parsed.data.code !== 0) throw fromPlatformCode(operation, parsed.data.code, parsed.data.msg, undefined);
  return parsed.data;
}

/**
 * Maps what the SDK threw: an axios error with Feishu's JSON body, a token failure, or a network error.
 * The thrown value is deliberately not kept as `cause`: axios errors carry the request, bearer token included,
 * and loggers serialize causes.
 */
export function fromThrown(operation: string, error: unknown): FeishuApiError {
  const response: unknown = Reflect.get(Object(error), "response");
  const status: unknown = Reflect.get(Object(response), "status");
  if (typeof status === "number") {
    const body = envelopeSchema.safeParse(Reflect.get(Object(response), "data"));
    const reset = Number(
      Reflect.get(Object(Reflect.get(Object(response), "headers")), "x-ogw-ratelimit-reset"),
    );
    const retryAfterMs = Number.isFinite(reset) && reset >= 0 ? reset * 1000 : undefined;
    if (body.success) return fromPlatformCode(operation, body.data.code, body.data.msg, status, retryAfterMs);
    const rateLimited = status === 429;
    return new FeishuApiError(
      rateLimited ? "feishu.rate_limited" : "feishu.api_error",
      `Feishu ${operation} failed with HTTP ${status}.`,
      {
        isRetryable: rateLimited || status >= 500,
        status,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  const token = tokenFailure.exec(message);
  if (token) {
    return new FeishuApiError(
      "feishu.auth_failed",
      `Feishu refused the app credentials (code ${token[1]}: ${token[2]}); check the App ID and App Secret.`,
      { isRetryable: false, platformCode: Number(token[1]) },
    );
  }
  return new FeishuApiError("feishu.network_error", `Feishu ${operation} failed: ${message}`, {
    isRetryable: true,
  });
}

export function fromPlatformCode(
  operation: string,
  platformCode: number,
  msg: string | undefined,
  status: number | undefined,
  retryAfterMs?: number,
): FeishuApiError {
  const rateLimited = status === 429 || RATE_LIMIT_CODES.has(platformCode);
  const code = rateLimited
    ? "feishu.rate_limited"
    : platformCode === TOO_LARGE_CODE
      ? "feishu.message_too_large"
      : "feishu.api_error";
  const http = status === undefined ? "" : `, HTTP ${status}`;
  return new FeishuApiError(
    code,
    `Feishu ${operation} failed: ${msg ?? "no message"} (code ${platformCode}${http}).`,
    {
      isRetryable: rateLimited || (status !== undefined && status >= 500),
      platformCode,
      ...(status === undefined ? {} : { status }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    },
  );
}

export function invalidResponse(operation: string): FeishuApiError {
  return new FeishuApiError(
    "feishu.invalid_response",
    `Feishu ${operation} answered in an unexpected shape.`,
    {
      isRetryable: false,
    },
  );
}
