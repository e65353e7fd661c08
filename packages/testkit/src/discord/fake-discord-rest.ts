import type { IncomingMessage, ServerResponse } from "node:http";
import { type HeldResponse, ResponseHolds } from "../held-responses.js";
import { sendJson } from "../http-io.js";
import type { FakeCdn } from "./fake-discord-cdn.js";
import type { FakeRestReply } from "./fake-discord-interactions.js";
import type { FakeMessageEdits } from "./fake-discord-message-edits.js";
import { type MultipartFile, readRequestBytes } from "./fake-discord-multipart.js";
import {
  createDmBodySchema,
  createMessageBodySchema,
  type FakeActionRow,
  invalidFormBody,
  invalidFormBodyFrom,
  MAX_CONTENT_LENGTH,
} from "./fake-discord-schemas.js";
import { checkUploads, readRequestBody } from "./fake-discord-uploads.js";
import {
  channelPayload,
  type FakeChannel,
  type FakeDiscordWorld,
  messagePayload,
  userPayload,
} from "./fake-discord-world.js";

/** Every REST request the fake received, with the status it answered. */
export interface RecordedRestRequest {
  readonly method: string;
  /** Path below `/api/v10`, e.g. `/channels/123/messages`. */
  readonly path: string;
  readonly status: number;
  readonly body: unknown;
  readonly at: number;
}

/** A message the bot posted and the fake accepted. */
export interface FakeSentMessage {
  readonly id: string;
  readonly channelId: string;
  readonly content: string;
  /** The `message_reference` the bot sent (a reply), as given. */
  readonly messageReference?: {
    readonly message_id: string;
    readonly channel_id?: string;
    readonly guild_id?: string;
    readonly fail_if_not_exists?: boolean;
  };
  readonly allowedMentions?: unknown;
  /** The action rows of buttons the bot put under the message, as sent. */
  readonly components?: readonly FakeActionRow[];
  /** Files uploaded with the message (multipart `files[n]` parts), in order. */
  readonly files?: readonly FakeUploadedFile[];
  /** The full message object the fake answered with (and dispatched as MESSAGE_CREATE). */
  readonly message: Record<string, unknown>;
  readonly at: number;
}

/** A file the bot uploaded with a message. */
export interface FakeUploadedFile {
  /** The filename of its `files[n]` part (or of its `attachments` entry, which takes precedence on Discord). */
  readonly name: string;
  readonly contentType?: string;
  readonly bytes: Buffer;
  /** Its URL on the fake CDN, as the created message's attachment carries it. */
  readonly url: string;
}

/** One `POST /channels/:id/typing`. */
export interface FakeTypingCall {
  readonly channelId: string;
  readonly at: number;
}

/** One 429 the fake answered because a test asked for it. */
export interface FakeRateLimitHit {
  readonly method: string;
  readonly path: string;
  readonly retryAfterSeconds: number;
  readonly at: number;
}

/** The answer to one message-create request, held back; see {@link FakeRest.holdNextMessageResponse}. */
export type FakeHeldResponse = HeldResponse<FakeSentMessage>;

/** What the REST half needs from the rest of the fake. */
export interface FakeRestDependencies {
  readonly world: FakeDiscordWorld;
  /** Milliseconds since the epoch, for the nonce window. */
  readonly clock: () => number;
  /** How long a message's nonce, sent with `enforce_nonce`, returns that message instead of a new one. */
  readonly nonceWindowMs: number;
  readonly token: () => string;
  readonly gatewayUrl: () => string;
  readonly channel: (id: string) => FakeChannel | undefined;
  readonly openDm: (recipientId: string) => FakeChannel;
  readonly message: (id: string) => Record<string, unknown> | undefined;
  readonly nextId: () => string;
  /** Called after the fake accepted a message from the bot (stores it and echoes MESSAGE_CREATE). */
  readonly created: (message: Record<string, unknown>) => void;
  /** Edits and deletions of messages (`PATCH` / `DELETE /channels/:id/messages/:id`). */
  readonly edits: FakeMessageEdits;
  /** Serves attachments, uploaded ones included. */
  readonly cdn: FakeCdn;
  /** Largest file the bot may upload, in bytes; larger gets 413 (40005). */
  readonly uploadLimitBytes: number;
  /** Answers `POST /interactions/:id/:token/callback` (authenticated by the interaction token, not the bot's). */
  readonly interactionCallback: (
    id: string,
    token: string,
    body: unknown,
    withResponse: boolean,
  ) => FakeRestReply;
}

/** The REST half of the fake, under `/api/v10`. */
export interface FakeRest {
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  /** The next request matching `route` gets 429 with `Retry-After` (fractional seconds keep tests fast). */
  rateLimitNext(route: string, retryAfterSeconds: number, options?: { readonly global?: boolean }): void;
  /** The next `times` requests matching `route` get `status` (e.g. 503) with a Discord-shaped error body. */
  failNext(route: string, status: number, times?: number): void;
  /**
   * The next `POST /channels/:id/messages` that creates a message creates it but gets no answer until released:
   * Discord has the message, the bot never heard so. A repeat that Discord answers from its nonce is not held.
   */
  holdNextMessageResponse(): FakeHeldResponse;
  /** Answers every held request (the fake is closing). */
  releaseHeld(): void;
  requests(): readonly RecordedRestRequest[];
  sent(): readonly FakeSentMessage[];
  typing(): readonly FakeTypingCall[];
  rateLimits(): readonly FakeRateLimitHit[];
}

/** `POST /interactions/:id/:token/callback`. */
const INTERACTION_CALLBACK = /^\/interactions\/(\d+)\/([^/]+)\/callback$/;

/** A reply, possibly held back until `heldUntil` settles. */
type RestReply = FakeRestReply & { readonly heldUntil?: Promise<void> };

interface Trap {
  readonly matches: (method: string, path: string) => boolean;
  readonly respond: (method: string, path: string, response: ServerResponse) => void;
  remaining: number;
}

/**
 * Compiles `"POST /channels/:id/messages"` or `"/channels/123/typing"` (any method) into a matcher;
 * `:name` segments match one path segment.
 */
export function compileRoute(route: string): (method: string, path: string) => boolean {
  const match = /^(?:([A-Z]+)\s+)?(\/.*)$/.exec(route.trim());
  if (!match)
    throw new RangeError(`fake discord: route must look like "POST /channels/:id/messages": ${route}`);
  const [, method, pattern = ""] = match;
  const source = pattern
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  const regex = new RegExp(`^${source}$`);
  return (requestMethod, path) => (method === undefined || method === requestMethod) && regex.test(path);
}

/**
 * Creates the REST handler: gateway info, users, channels, messages (with Discord's 2000-char rule and component
 * checks), typing, and interaction callbacks.
 */
export function createFakeRest(dependencies: FakeRestDependencies): FakeRest {
  const { world } = dependencies;
  const requestRecords: RecordedRestRequest[] = [];
  const sentRecords: FakeSentMessage[] = [];
  const typingRecords: FakeTypingCall[] = [];
  const rateLimitRecords: FakeRateLimitHit[] = [];
  const traps: Trap[] = [];
  /** Holds not yet caught, in order, and every hold not yet released. */
  const holds = new ResponseHolds<FakeSentMessage>();
  /** `author:nonce` → the message created with it, and when. */
  const nonces = new Map<string, { readonly messageId: string; readonly at: number }>();

  type Reply = FakeRestReply;
  const notFound = (what: string, code: number): Reply => ({
    status: 404,
    body: { message: `Unknown ${what}`, code },
  });

  /** With `enforce_nonce`, the message this bot created with the same nonce within the window, if any. */
  function messageOfNonce(
    nonce: string | number | undefined,
    enforce: boolean | undefined,
  ): Record<string, unknown> | undefined {
    if (nonce === undefined || enforce !== true) return undefined;
    const known = nonces.get(`${world.botUser.id}:${String(nonce)}`);
    if (known === undefined || dependencies.clock() - known.at > dependencies.nonceWindowMs) return undefined;
    return dependencies.message(known.messageId);
  }

  function createMessage(channelId: string, body: unknown, files: readonly MultipartFile[]): RestReply {
    const channel = dependencies.channel(channelId);
    if (channel === undefined) return notFound("Channel", 10003);
    const parsed = createMessageBodySchema.safeParse(body);
    if (!parsed.success) {
      return { status: 400, body: invalidFormBodyFrom(parsed.error) };
    }
    const uploads = checkUploads(files, parsed.data.attachments ?? [], dependencies.uploadLimitBytes);
    if ("status" in uploads) return uploads;
    // Discord's answer to a repeated enforced nonce: the message it created the first time, and nothing new.
    const existing = messageOfNonce(parsed.data.nonce, parsed.data.enforce_nonce);
    if (existing !== undefined) return { status: 200, body: existing };
    const { content = "", message_reference: reference, embeds = [], components = [] } = parsed.data;
    if (content.length > MAX_CONTENT_LENGTH) {
      return {
        status: 400,
        body: invalidFormBody("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."),
      };
    }
    if (content.trim() === "" && embeds.length === 0 && components.length === 0 && files.length === 0) {
      return { status: 400, body: { message: "Cannot send an empty message", code: 50006 } };
    }
    let replyTo: Record<string, unknown> | undefined;
    if (reference !== undefined) {
      replyTo = dependencies.message(reference.message_id);
      if (replyTo !== undefined && replyTo.channel_id !== channelId) {
        return {
          status: 400,
          body: invalidFormBody(
            "message_reference",
            "MESSAGE_REFERENCE_INVALID_CHANNEL",
            "Cannot reply to a message in another channel.",
          ),
        };
      }
      if (replyTo === undefined && reference.fail_if_not_exists !== false) {
        return {
          status: 400,
          body: invalidFormBody("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"),
        };
      }
    }
    const id = dependencies.nextId();
    const uploaded = uploads.map((file) => {
      const attachmentId = dependencies.nextId();
      const url = dependencies.cdn.put({
        id: attachmentId,
        channelId,
        filename: file.name,
        ...(file.contentType === undefined ? {} : { contentType: file.contentType }),
        bytes: file.bytes,
        size: file.bytes.length,
      });
      return { file: { ...file, url } satisfies FakeUploadedFile, attachmentId };
    });
    const message = messagePayload({
      id,
      channel,
      author: world.botUser,
      authorRoles: [world.ids.botRole],
      guildId: world.ids.guild,
      content,
      ...(replyTo === undefined ? {} : { replyTo }),
      ...(parsed.data.nonce === undefined ? {} : { nonce: parsed.data.nonce }),
      components,
      attachments: uploaded.map(({ file, attachmentId }) => ({
        id: attachmentId,
        filename: file.name,
        size: file.bytes.length,
        url: file.url,
        proxy_url: file.url,
        ...(file.contentType === undefined ? {} : { content_type: file.contentType }),
      })),
    });
    const sent: FakeSentMessage = {
      id: String(message.id),
      channelId,
      content,
      ...(reference === undefined ? {} : { messageReference: reference }),
      ...(parsed.data.allowed_mentions === undefined
        ? {}
        : { allowedMentions: parsed.data.allowed_mentions }),
      ...(parsed.data.components === undefined ? {} : { components: parsed.data.components }),
      ...(uploaded.length === 0 ? {} : { files: uploaded.map(({ file }) => file) }),
      message,
      at: Date.now(),
    };
    sentRecords.push(sent);
    if (parsed.data.nonce !== undefined) {
      nonces.set(`${world.botUser.id}:${String(parsed.data.nonce)}`, {
        messageId: sent.id,
        at: dependencies.clock(),
      });
    }
    dependencies.created(message);
    const heldUntil = holds.take(sent);
    return heldUntil === undefined
      ? { status: 200, body: message }
      : { status: 200, body: message, heldUntil };
  }

  function route(
    method: string,
    path: string,
    body: unknown,
    query: URLSearchParams,
    files: readonly MultipartFile[],
  ): RestReply {
    if (method === "GET" && path === "/gateway/bot") {
      return {
        status: 200,
        body: {
          url: dependencies.gatewayUrl(),
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
        },
      };
    }
    if (method === "GET" && path === "/gateway")
      return { status: 200, body: { url: dependencies.gatewayUrl() } };
    if (method === "GET" && path === "/users/@me") {
      return {
        status: 200,
        body: { ...userPayload(world.botUser), verified: true, mfa_enabled: false, flags: 0 },
      };
    }
    if (method === "POST" && path === "/users/@me/channels") {
      const parsed = createDmBodySchema.safeParse(body);
      if (!parsed.success) {
        return {
          status: 400,
          body: invalidFormBody("recipient_id", "BASE_TYPE_REQUIRED", "This field is required"),
        };
      }
      return { status: 200, body: channelPayload(dependencies.openDm(parsed.data.recipient_id), world) };
    }
    const messageMatch = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (messageMatch) {
      const [, channelId = "", messageId = ""] = messageMatch;
      if (method === "PATCH") return dependencies.edits.edit(channelId, messageId, body);
      if (method === "DELETE") return dependencies.edits.remove(channelId, messageId);
    }
    const channelMatch = /^\/channels\/(\d+)(\/messages|\/typing)?$/.exec(path);
    if (channelMatch) {
      const [, channelId = "", rest] = channelMatch;
      if (method === "GET" && rest === undefined) {
        const channel = dependencies.channel(channelId);
        return channel === undefined
          ? notFound("Channel", 10003)
          : { status: 200, body: channelPayload(channel, world) };
      }
      if (method === "POST" && rest === "/messages") return createMessage(channelId, body, files);
      if (method === "POST" && rest === "/typing") {
        if (dependencies.channel(channelId) === undefined) return notFound("Channel", 10003);
        typingRecords.push({ channelId, at: Date.now() });
        return { status: 204 };
      }
    }
    const interaction = INTERACTION_CALLBACK.exec(path);
    if (interaction && method === "POST") {
      const [, id = "", token = ""] = interaction;
      return dependencies.interactionCallback(id, token, body, query.get("with_response") === "true");
    }
    return { status: 404, body: { message: "404: Not Found", code: 0 } };
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? "GET";
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (dependencies.cdn.handles(url.pathname)) {
      dependencies.cdn.handle(request, response, url);
      return;
    }
    const bytes = await readRequestBytes(request);
    const { body, files } = readRequestBody(bytes, request.headers["content-type"]);
    const path = url.pathname.startsWith("/api/v10/") ? url.pathname.slice("/api/v10".length) : url.pathname;
    const record = (status: number) => requestRecords.push({ method, path, status, body, at: Date.now() });
    if (!url.pathname.startsWith("/api/v10/")) {
      record(404);
      sendJson(response, 404, { message: "404: Not Found", code: 0 });
      return;
    }
    // Interaction callbacks carry the interaction token in the path instead of the bot token.
    const needsBotToken = !INTERACTION_CALLBACK.test(path);
    if (needsBotToken && request.headers.authorization !== `Bot ${dependencies.token()}`) {
      record(401);
      sendJson(response, 401, { message: "401: Unauthorized", code: 0 });
      return;
    }
    const trap = traps.find((candidate) => candidate.remaining > 0 && candidate.matches(method, path));
    if (trap !== undefined) {
      trap.remaining -= 1;
      if (trap.remaining === 0) traps.splice(traps.indexOf(trap), 1);
      trap.respond(method, path, response);
      record(response.statusCode);
      return;
    }
    const reply = route(method, path, body, url.searchParams, files);
    record(reply.status);
    if (reply.heldUntil !== undefined) await reply.heldUntil;
    if (reply.body === undefined) {
      response.writeHead(reply.status);
      response.end();
    } else {
      sendJson(response, reply.status, reply.body);
    }
  }

  return {
    handle,
    rateLimitNext(routeText, retryAfterSeconds, options = {}) {
      const global = options.global === true;
      traps.push({
        matches: compileRoute(routeText),
        remaining: 1,
        respond(method, path, response) {
          rateLimitRecords.push({ method, path, retryAfterSeconds, at: Date.now() });
          const seconds = String(retryAfterSeconds);
          sendJson(
            response,
            429,
            { message: "You are being rate limited.", retry_after: retryAfterSeconds, global },
            {
              "retry-after": seconds,
              "x-ratelimit-limit": "5",
              "x-ratelimit-remaining": "0",
              "x-ratelimit-reset-after": seconds,
              "x-ratelimit-bucket": "fake-bucket",
              "x-ratelimit-scope": global ? "global" : "user",
              ...(global ? { "x-ratelimit-global": "true" } : {}),
            },
          );
        },
      });
    },
    failNext(routeText, status, times = 1) {
      traps.push({
        matches: compileRoute(routeText),
        remaining: times,
        respond(_method, _path, response) {
          sendJson(response, status, { message: `fake discord: injected ${status}`, code: 0 });
        },
      });
    },
    holdNextMessageResponse: () => holds.holdNext(),
    releaseHeld: () => holds.releaseAll(),
    requests: () => [...requestRecords],
    sent: () => [...sentRecords],
    typing: () => [...typingRecords],
    rateLimits: () => [...rateLimitRecords],
  };
}
