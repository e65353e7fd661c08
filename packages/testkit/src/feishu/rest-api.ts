import { randomBytes } from "node:crypto";
import { z } from "zod";
import { type HeldResponse, ResponseHolds } from "../held-responses.js";
import { parseJsonBody } from "../http-io.js";
import { cardProblem, isSharedCard } from "./cards.js";
import {
  type FakeForm,
  type FakeResource,
  type FakeUpload,
  type ResourceAnswer,
  ResourceStore,
} from "./resources.js";

/** A message the bot posted (send or reply), as the fake understood it. */
export interface FakeSentMessage {
  readonly kind: "create" | "reply";
  /** Id the fake gave the new message. */
  readonly messageId: string;
  readonly chatId: string;
  /** For `create`: the `receive_id` and `receive_id_type` query parameter. */
  readonly receiveId?: string;
  readonly receiveIdType?: string;
  /** For `reply`: the message replied to, and whether the reply went into its thread. */
  readonly replyTo?: string;
  readonly replyInThread: boolean;
  readonly threadId?: string;
  readonly msgType: string;
  /** `content` parsed from its JSON string. */
  readonly content: unknown;
  readonly rawContent: string;
  /** Size of the whole request body in bytes (what Feishu's size limits measure). */
  readonly bodyBytes: number;
  readonly uuid?: string;
}

/** One PATCH of a card the bot sent, accepted or refused, with when it came (the fake's clock). */
export interface FakeCardUpdate {
  readonly messageId: string;
  /** Milliseconds since the epoch, by the fake's clock. */
  readonly at: number;
  /** The card sent, parsed from its JSON string. */
  readonly content: unknown;
  readonly accepted: boolean;
  /** Feishu `code` of the answer (0 when accepted). */
  readonly code: number;
}

/** A reaction the bot added (`deleted` once removed). */
export interface FakeReaction {
  readonly messageId: string;
  readonly reactionId: string;
  readonly emojiType: string;
  readonly deleted: boolean;
}

/** Every REST request the fake received, with the answer it gave. */
export interface FakeRestRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly authorization?: string;
  readonly body: unknown;
  readonly status: number;
  /** Feishu `code` of the answer. */
  readonly code: number;
}

/** How the next rate-limited call(s) fail; see {@link RestApi.rateLimitNext}. */
export interface RateLimitOptions {
  /** How many calls fail; default 1. */
  readonly times?: number;
  /** `x-ogw-ratelimit-reset` in seconds; default 1. */
  readonly resetSeconds?: number;
  /** 429 (current APIs, default) or 400 (older APIs answer rate limits with 400). */
  readonly httpStatus?: 429 | 400;
}

/** A scripted failure of the next IM call(s); see {@link RestApi.failNext}. */
export interface FailureOptions {
  readonly code: number;
  readonly msg: string;
  /** Default 200: Feishu reports many business errors with HTTP 200 and a non-zero `code`. */
  readonly httpStatus?: number;
  readonly times?: number;
}

/** Size limits of message bodies, in bytes. */
export interface SizeLimits {
  readonly postBytes: number;
  readonly textBytes: number;
}

/** One HTTP request as the REST layer sees it. */
export interface RestInput {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly authorization?: string;
  readonly rawBody: string;
  /** The body read as multipart form data, when it was (uploads). */
  readonly form?: FakeForm;
}

/** One HTTP answer. */
export interface RestOutput {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Answer only once this settles (see {@link RestApi.holdNextMessageResponse}). */
  readonly heldUntil?: Promise<void>;
  /** Bytes to answer with instead of `body` (a resource download). */
  readonly download?: Extract<ResourceAnswer, { kind: "bytes" }>;
}

/** The answer to one send or reply, held back; see {@link RestApi.holdNextMessageResponse}. */
export type FakeHeldResponse = HeldResponse<FakeSentMessage>;

/** The fake open platform's REST API and its records. */
export interface RestApi {
  handle(input: RestInput): RestOutput;
  /** Tells the fake which chat a message belongs to (events it delivered), so replies land there. */
  rememberMessage(messageId: string, chatId: string): void;
  /** The card an interactive message shows now (updated by PATCH and callback answers); undefined otherwise. */
  card(messageId: string): unknown;
  /** Replaces the card an interactive message shows (a callback answer did). */
  replaceCard(messageId: string, card: unknown): void;
  /** Every PATCH of a card, accepted or refused, in order. */
  cardUpdates(): FakeCardUpdate[];
  /** Messages the bot recalled (`DELETE /open-apis/im/v1/messages/:id`). */
  recalled(): string[];
  /** What the chat shows now: the messages not recalled, a card with its current content. */
  shown(): FakeSentMessage[];
  /** Puts bytes behind a resource key of a message, for the resource download route. */
  addResource(messageId: string, key: string, resource: FakeResource): void;
  /** Images and files the bot uploaded, in order. */
  uploads(): FakeUpload[];
  sent(): FakeSentMessage[];
  reactions(): FakeReaction[];
  requests(): FakeRestRequest[];
  rateLimitNext(options?: RateLimitOptions): void;
  failNext(options: FailureOptions): void;
  /**
   * The next send or reply that creates a message creates it but is answered only when released: Feishu has the
   * message, the bot never heard so. A repeat answered from its `uuid` is not held.
   */
  holdNextMessageResponse(): FakeHeldResponse;
  /** Answers every held request (the fake is closing). */
  releaseHeld(): void;
}

/** Identity and limits of the fake app. */
export interface RestApiOptions {
  readonly appId: string;
  readonly appSecret: string;
  readonly botOpenId: string;
  readonly botName: string;
  readonly tenantKey: string;
  readonly tokenExpireSeconds: number;
  readonly limits: SizeLimits;
  /** How long a `uuid` returns the message first sent with it (Feishu: one hour). */
  readonly uuidWindowMs: number;
  /** Milliseconds since the epoch, for the uuid window. */
  readonly clock: () => number;
}

const tokenRequest = z.object({ app_id: z.string(), app_secret: z.string() });
const sendBody = z.object({
  receive_id: z.string().min(1),
  msg_type: z.string().min(1),
  content: z.string(),
  uuid: z.string().max(50).optional(),
});
const replyBody = z.object({
  msg_type: z.string().min(1),
  content: z.string(),
  reply_in_thread: z.boolean().optional(),
  uuid: z.string().max(50).optional(),
});
const patchBody = z.object({ content: z.string() });
const imageContent = z.object({ image_key: z.string().min(1) });
const fileContent = z.object({ file_key: z.string().min(1) });
/** Feishu's limit on updates of one message: 5 a second. */
const UPDATES_PER_SECOND = 5;
const reactionBody = z.object({ reaction_type: z.object({ emoji_type: z.string().min(1) }) });
const textContent = z.object({ text: z.string() });
const postElement = z.looseObject({ tag: z.string() });
const postBody = z.object({ title: z.string().optional(), content: z.array(z.array(postElement)) });
const postContent = z.union([postBody, z.record(z.string(), postBody)]);

const ok = (data: unknown): RestOutput => ({ status: 200, body: { code: 0, msg: "success", data } });
const fail = (status: number, code: number, msg: string, headers?: Record<string, string>): RestOutput => ({
  status,
  body: { code, msg },
  ...(headers === undefined ? {} : { headers }),
});
const invalidParameter = (detail: string) =>
  fail(400, 230001, `Your request contains an invalid request parameter, ${detail}.`);

/** Creates the REST side of the fake. */
export function createRestApi(options: RestApiOptions): RestApi {
  const tokens = new Set<string>();
  const chatOfMessage = new Map<string, string>();
  const cards = new Map<string, unknown>();
  const cardUpdates: FakeCardUpdate[] = [];
  const recalled = new Set<string>();
  const resources = new ResourceStore();
  /** uuid → the answer to the message first sent with it, and when. */
  const byUuid = new Map<string, { readonly answer: RestOutput; readonly at: number }>();
  /** Holds not yet caught, in order, and every hold not yet released. */
  const holds = new ResponseHolds<FakeSentMessage>();
  const sent: FakeSentMessage[] = [];
  const reactions: FakeReaction[] = [];
  const requests: FakeRestRequest[] = [];
  const rateLimits: RateLimitOptions[] = [];
  const failures: FailureOptions[] = [];

  const newId = (prefix: string) => `${prefix}${randomBytes(12).toString("hex")}`;

  const messageData = (message: FakeSentMessage) => ({
    message_id: message.messageId,
    ...(message.replyTo === undefined ? {} : { root_id: message.replyTo, parent_id: message.replyTo }),
    ...(message.threadId === undefined ? {} : { thread_id: message.threadId }),
    msg_type: message.msgType,
    create_time: String(Date.now()),
    update_time: String(Date.now()),
    deleted: false,
    updated: false,
    chat_id: message.chatId,
    sender: { id: options.appId, id_type: "app_id", sender_type: "app", tenant_key: options.tenantKey },
    body: { content: message.rawContent },
  });

  /** Checks content and size like Feishu; returns an error answer or undefined. */
  const checkContent = (msgType: string, content: string, bodyBytes: number): RestOutput | undefined => {
    const parsed = parseJsonBody(content);
    if (!parsed.ok) return invalidParameter("content is not valid JSON");
    if (msgType === "text" && !textContent.safeParse(parsed.value).success)
      return invalidParameter("text content needs a string field text");
    if (msgType === "post" && !postContent.safeParse(parsed.value).success)
      return invalidParameter("post content needs content: [[{tag, ...}]]");
    if (msgType === "interactive") {
      const problem = cardProblem(parsed.value);
      if (problem !== undefined) return fail(400, 230099, `Failed to create card content, ${problem}.`);
    }
    if (msgType === "image") {
      const image = imageContent.safeParse(parsed.value);
      if (!image.success || !resources.uploaded("image", image.data.image_key))
        return invalidParameter("image content needs the image_key of an uploaded image");
    }
    if (msgType === "file" || msgType === "audio" || msgType === "media") {
      const file = fileContent.safeParse(parsed.value);
      if (!file.success || !resources.uploaded("file", file.data.file_key))
        return invalidParameter(`${msgType} content needs the file_key of an uploaded file`);
    }
    const limit = msgType === "text" ? options.limits.textBytes : options.limits.postBytes;
    if (bodyBytes > limit) return fail(400, 230025, "The length of the message content reaches its limit.");
    return undefined;
  };

  const deliver = (uuid: string | undefined, build: () => FakeSentMessage | RestOutput): RestOutput => {
    const previous = uuid === undefined ? undefined : byUuid.get(uuid);
    // Feishu posts at most one message per uuid within an hour: a repeat gets the first one's answer.
    if (previous !== undefined && options.clock() - previous.at <= options.uuidWindowMs)
      return previous.answer;
    const result = build();
    if (!("kind" in result)) return result;
    sent.push(result);
    chatOfMessage.set(result.messageId, result.chatId);
    if (result.msgType === "interactive") cards.set(result.messageId, result.content);
    const answer = ok(messageData(result));
    if (uuid !== undefined) byUuid.set(uuid, { answer, at: options.clock() });
    const heldUntil = holds.take(result);
    return heldUntil === undefined ? answer : { ...answer, heldUntil };
  };

  const route = (input: RestInput, body: unknown): RestOutput => {
    const { method, path } = input;
    if (method === "POST" && path === "/open-apis/auth/v3/tenant_access_token/internal") {
      const credentials = tokenRequest.safeParse(body);
      if (!credentials.success || credentials.data.app_id !== options.appId) {
        return fail(200, 10003, "invalid param: app_id");
      }
      if (credentials.data.app_secret !== options.appSecret) return fail(200, 10014, "app secret invalid");
      const token = newId("t-");
      tokens.add(token);
      return {
        status: 200,
        body: { code: 0, msg: "ok", tenant_access_token: token, expire: options.tokenExpireSeconds },
      };
    }
    const authorization = input.authorization ?? "";
    if (!authorization.startsWith("Bearer ")) {
      return fail(
        400,
        99991661,
        "Missing access token for authorization. Please make a request with token attached.",
      );
    }
    if (!tokens.has(authorization.slice("Bearer ".length))) {
      return fail(
        400,
        99991663,
        "Invalid access token for authorization. Please make a request with token attached.",
      );
    }
    if (method === "GET" && path === "/open-apis/bot/v3/info") {
      return {
        status: 200,
        body: {
          code: 0,
          msg: "ok",
          bot: {
            activate_status: 2,
            app_name: options.botName,
            avatar_url: "https://example.invalid/avatar.png",
            ip_white_list: [],
            open_id: options.botOpenId,
          },
        },
      };
    }
    if (!path.startsWith("/open-apis/im/v1/")) return fail(404, 404, "404 page not found");
    const limited = rateLimits.shift();
    if (limited !== undefined) {
      const remaining = (limited.times ?? 1) - 1;
      if (remaining > 0) rateLimits.unshift({ ...limited, times: remaining });
      return fail(limited.httpStatus ?? 429, 99991400, "request trigger frequency limit", {
        "x-ogw-ratelimit-limit": "50",
        "x-ogw-ratelimit-reset": String(limited.resetSeconds ?? 1),
      });
    }
    const failure = failures.shift();
    if (failure !== undefined) {
      const remaining = (failure.times ?? 1) - 1;
      if (remaining > 0) failures.unshift({ ...failure, times: remaining });
      return fail(failure.httpStatus ?? 200, failure.code, failure.msg);
    }
    return routeIm(input, body);
  };

  const routeIm = (input: RestInput, body: unknown): RestOutput => {
    const { method, path } = input;
    const bodyBytes = Buffer.byteLength(input.rawBody, "utf8");
    if (method === "POST" && path === "/open-apis/im/v1/messages") {
      const receiveIdType = input.query.receive_id_type;
      if (receiveIdType === undefined) return invalidParameter("receive_id_type is required");
      const parsed = sendBody.safeParse(body);
      if (!parsed.success) return invalidParameter(parsed.error.issues[0]?.message ?? "bad body");
      const { receive_id, msg_type, content, uuid } = parsed.data;
      return deliver(uuid, () => {
        const error = checkContent(msg_type, content, bodyBytes);
        if (error !== undefined) return error;
        const chatId = receiveIdType === "chat_id" ? receive_id : `oc_p2p_${receive_id}`;
        return {
          kind: "create",
          messageId: newId("om_"),
          chatId,
          receiveId: receive_id,
          receiveIdType,
          replyInThread: false,
          msgType: msg_type,
          content: parseJsonBody(content).value,
          rawContent: content,
          bodyBytes,
          ...(uuid === undefined ? {} : { uuid }),
        };
      });
    }
    const reply = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(path);
    if (method === "POST" && reply) {
      const parentId = decodeURIComponent(reply[1] ?? "");
      const parsed = replyBody.safeParse(body);
      if (!parsed.success) return invalidParameter(parsed.error.issues[0]?.message ?? "bad body");
      const { msg_type, content, reply_in_thread, uuid } = parsed.data;
      return deliver(uuid, () => {
        const error = checkContent(msg_type, content, bodyBytes);
        if (error !== undefined) return error;
        return {
          kind: "reply",
          messageId: newId("om_"),
          chatId: chatOfMessage.get(parentId) ?? "oc_unknown",
          replyTo: parentId,
          replyInThread: reply_in_thread ?? false,
          ...(reply_in_thread ? { threadId: `omt_${parentId.slice(3, 15)}` } : {}),
          msgType: msg_type,
          content: parseJsonBody(content).value,
          rawContent: content,
          bodyBytes,
          ...(uuid === undefined ? {} : { uuid }),
        };
      });
    }
    const single = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/.exec(path);
    if (method === "PATCH" && single) return updateCard(decodeURIComponent(single[1] ?? ""), body, bodyBytes);
    if (method === "DELETE" && single) {
      const messageId = decodeURIComponent(single[1] ?? "");
      if (!sent.some((message) => message.messageId === messageId))
        return fail(
          400,
          230001,
          "Your request contains an invalid request parameter, ext=message not found.",
        );
      if (recalled.has(messageId)) return fail(400, 230011, "The message was withdrawn.");
      recalled.add(messageId);
      return ok({});
    }
    const resource = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/resources\/([^/]+)$/.exec(path);
    if (method === "GET" && resource) {
      return resourceOutput(
        resources.download(
          decodeURIComponent(resource[1] ?? ""),
          decodeURIComponent(resource[2] ?? ""),
          input.query.type,
        ),
      );
    }
    if (method === "POST" && path === "/open-apis/im/v1/images")
      return resourceOutput(resources.uploadImage(input.form));
    if (method === "POST" && path === "/open-apis/im/v1/files")
      return resourceOutput(resources.uploadFile(input.form));
    const reaction = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reactions(?:\/([^/]+))?$/.exec(path);
    if (reaction) return routeReaction(method, reaction[1] ?? "", reaction[2], body);
    return fail(404, 404, "404 page not found");
  };

  /**
   * `PATCH /open-apis/im/v1/messages/:id` with a card, refused like Feishu refuses it: not a card of this bot,
   * recalled, too large, malformed, not shared (`config.update_multi: true` is needed before and after; the code
   * Feishu answers for that is not documented, the fake says 230099), or over 5 updates a second.
   */
  const updateCard = (messageId: string, body: unknown, bodyBytes: number): RestOutput => {
    const parsed = patchBody.safeParse(body);
    if (!parsed.success) return invalidParameter("content is required");
    const card = parseJsonBody(parsed.data.content).value;
    const at = options.clock();
    const refuse = (status: number, code: number, msg: string): RestOutput => {
      cardUpdates.push({ messageId, at, content: card, accepted: false, code });
      return fail(status, code, msg);
    };
    const current = cards.get(messageId);
    if (current === undefined) return refuse(400, 230001, "The message is not a card sent by this bot.");
    if (recalled.has(messageId)) return refuse(400, 230011, "The message was withdrawn.");
    if (bodyBytes > options.limits.postBytes) {
      return refuse(400, 230025, "The length of the message content reaches its limit.");
    }
    const problem = cardProblem(card);
    if (problem !== undefined) return refuse(400, 230099, `Failed to create card content, ${problem}.`);
    if (!isSharedCard(current) || !isSharedCard(card)) {
      return refuse(
        400,
        230099,
        "Failed to update card content, ext=only shared cards (config.update_multi: true) can be updated.",
      );
    }
    const recent = cardUpdates.filter(
      (update) => update.messageId === messageId && update.accepted && at - update.at < 1000,
    );
    if (recent.length >= UPDATES_PER_SECOND) {
      return refuse(400, 230020, "This message is being updated too often, please try again later.");
    }
    cards.set(messageId, card);
    cardUpdates.push({ messageId, at, content: card, accepted: true, code: 0 });
    return ok({});
  };

  const resourceOutput = (answer: ResourceAnswer): RestOutput =>
    answer.kind === "json"
      ? { status: answer.status, body: answer.body }
      : { status: 200, body: undefined, download: answer };

  const routeReaction = (
    method: string,
    messageId: string,
    reactionId: string | undefined,
    body: unknown,
  ) => {
    if (method === "POST" && reactionId === undefined) {
      const parsed = reactionBody.safeParse(body);
      if (!parsed.success) return invalidParameter("reaction_type.emoji_type is required");
      const added: FakeReaction = {
        messageId,
        reactionId: newId(""),
        emojiType: parsed.data.reaction_type.emoji_type,
        deleted: false,
      };
      reactions.push(added);
      return ok({
        reaction_id: added.reactionId,
        operator: { operator_id: options.appId, operator_type: "app" },
        action_time: String(Date.now()),
        reaction_type: { emoji_type: added.emojiType },
      });
    }
    if (method === "DELETE" && reactionId !== undefined) {
      const index = reactions.findIndex((entry) => entry.reactionId === reactionId && !entry.deleted);
      const found = reactions[index];
      if (found === undefined) return fail(400, 231003, "The reaction is not found.");
      reactions[index] = { ...found, deleted: true };
      return ok({ reaction_id: reactionId, reaction_type: { emoji_type: found.emojiType } });
    }
    return fail(404, 404, "404 page not found");
  };

  return {
    handle(input) {
      const parsed =
        input.form === undefined
          ? parseJsonBody(input.rawBody)
          : { ok: true, value: summarizeForm(input.form) };
      const answer = route(input, parsed.value);
      const code = z.object({ code: z.number() }).safeParse(answer.body);
      requests.push({
        method: input.method,
        path: input.path,
        query: input.query,
        ...(input.authorization === undefined ? {} : { authorization: input.authorization }),
        body: parsed.value,
        status: answer.status,
        code: answer.download !== undefined ? 0 : code.success ? code.data.code : -1,
      });
      return answer;
    },
    rememberMessage: (messageId, chatId) => void chatOfMessage.set(messageId, chatId),
    card: (messageId) => cards.get(messageId),
    replaceCard: (messageId, card) => void cards.set(messageId, card),
    cardUpdates: () => [...cardUpdates],
    recalled: () => [...recalled],
    shown: () =>
      sent
        .filter((message) => !recalled.has(message.messageId))
        .map((message) =>
          message.msgType === "interactive" ? { ...message, content: cards.get(message.messageId) } : message,
        ),
    addResource: (messageId, key, resource) => resources.add(messageId, key, resource),
    uploads: () => resources.uploads(),
    sent: () => [...sent],
    reactions: () => [...reactions],
    requests: () => [...requests],
    rateLimitNext: (limit = {}) => void rateLimits.push(limit),
    failNext: (failure) => void failures.push(failure),
    holdNextMessageResponse: () => holds.holdNext(),
    releaseHeld: () => holds.releaseAll(),
  };
}

/** A multipart body as the request log keeps it: its fields, and its files by name and size (not their bytes). */
function summarizeForm(form: FakeForm): Record<string, unknown> {
  const files = Object.fromEntries(
    Object.entries(form.files).map(([name, file]) => [name, { name: file.name, size: file.bytes.length }]),
  );
  return { ...form.fields, ...files };
}
