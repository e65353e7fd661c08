import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseJsonBody, sendJson } from "../http-io.js";
import { buttonsOf, type FakeCardButton, type FakeCardToast, readCallbackAnswer } from "./cards.js";
import {
  type BuiltCardAction,
  type BuiltMessageEvent,
  buildCardActionEvent,
  buildMessageEvent,
  type FakeFeishuUser,
  type FakeMessageSpec,
} from "./events.js";
import { createLongConnection, type FakeFeishuAck } from "./long-connection.js";
import { type FakeResource, type FakeUpload, readMultipart } from "./resources.js";
import {
  createRestApi,
  type FailureOptions,
  type FakeCardUpdate,
  type FakeHeldResponse,
  type FakeReaction,
  type FakeRestRequest,
  type FakeSentMessage,
  type RateLimitOptions,
} from "./rest-api.js";
import { postWebhook, type WebhookDeliveryOptions, type WebhookResponse } from "./webhook-delivery.js";

/** Options of {@link startFakeFeishu}. */
export interface FakeFeishuOptions {
  /** Must look like `cli_` + 16 hex digits or the SDK's WSClient silently does nothing. */
  readonly appId?: string;
  readonly appSecret?: string;
  readonly botOpenId?: string;
  readonly botName?: string;
  readonly tenantKey?: string;
  /** Ping interval the fake hands the client, in seconds; default 1. */
  readonly pingIntervalSeconds?: number;
  /** Reconnect interval the fake hands the client, in seconds; default 0.1. */
  readonly reconnectIntervalSeconds?: number;
  /** Lifetime of tenant access tokens in seconds; default 7200. */
  readonly tokenExpireSeconds?: number;
  /** Size limit of post and card bodies in bytes; default 30 KB (Feishu's). */
  readonly maxPostBytes?: number;
  /** Size limit of text bodies in bytes; default 150 KB (Feishu's). */
  readonly maxTextBytes?: number;
  /** How long a message `uuid` returns the message first sent with it; default one hour (Feishu's). */
  readonly uuidWindowMs?: number;
  /** Milliseconds since the epoch, for the uuid window; default `Date.now`. */
  readonly clock?: () => number;
}

/** Options of {@link FakeFeishu.sendEvent}. */
export interface SendEventOptions {
  /** Splits the payload into this many frames (the SDK reassembles them); default 1. */
  readonly parts?: number;
}

/** The result of {@link FakeFeishu.sendEvent}. */
export interface SentEvent extends BuiltMessageEvent {
  /** Long-connection delivery id; the matching ack carries it. */
  readonly frameMessageId: string;
}

/** A person pressing a button on a card the bot sent. */
export interface FakeButtonPress {
  /** The card message (`om_…`), as in {@link FakeFeishu.sent}. */
  readonly messageId: string;
  /** The text on the button. */
  readonly label: string;
  /** Default `{ openId: "ou_user_1" }`. */
  readonly operator?: FakeFeishuUser;
}

/** A press the fake delivered, with what the app answered. */
export interface FakeCardAction extends Omit<BuiltCardAction, "envelope"> {
  readonly transport: "long-connection" | "webhook";
  readonly value: unknown;
  /** Ack code (long connection) or HTTP status (webhook). */
  readonly status: number;
  /** The answer as sent: the ack's data (long connection) or the response body (webhook). */
  readonly answer: unknown;
  /** The toast the presser saw, if any. */
  readonly toast?: FakeCardToast;
  /** True when the answer replaced the card (see {@link FakeFeishu.card}). */
  readonly cardReplaced: boolean;
  /** From delivering the press to the answer; Feishu shows an error when it takes over 3 s. */
  readonly latencyMs: number;
}

/** A running fake Feishu/Lark open platform (REST + long connection) on 127.0.0.1. */
export interface FakeFeishu {
  /** `http://127.0.0.1:<port>`: the SDK's `domain`. */
  readonly baseUrl: string;
  readonly appId: string;
  readonly appSecret: string;
  readonly botOpenId: string;
  readonly botName: string;
  readonly tenantKey: string;
  /** Builds an `im.message.receive_v1` event for this app without delivering it (e.g. for webhooks). */
  messageEvent(spec: FakeMessageSpec): BuiltMessageEvent;
  /** Delivers a user message over the long connection. Throws when no client is connected. */
  sendEvent(spec: FakeMessageSpec, options?: SendEventOptions): SentEvent;
  /** Delivers any payload (e.g. a built event again, for a redelivery) over the long connection. */
  sendRawEvent(payload: unknown, options?: SendEventOptions): string;
  /** POSTs a payload to an app's request URL, encrypted and signed like Feishu when asked. */
  postWebhook(url: string, payload: unknown, options?: WebhookDeliveryOptions): Promise<WebhookResponse>;
  /**
   * Builds the `card.action.trigger` for pressing a button on a card the bot sent, without delivering it.
   * Throws when the message is not a card or shows no such button now (e.g. its buttons were taken away).
   */
  cardActionEvent(press: FakeButtonPress): BuiltCardAction;
  /**
   * Presses a button over the long connection and resolves with the app's answer once it acked; a card in the
   * answer replaces the card, as in Feishu. Throws like {@link cardActionEvent}.
   */
  pressButton(press: FakeButtonPress, timeoutMs?: number): Promise<FakeCardAction>;
  /** Presses a button by POSTing the callback to an app's request URL (encrypted and signed when asked). */
  pressButtonByWebhook(
    url: string,
    press: FakeButtonPress,
    options?: WebhookDeliveryOptions,
  ): Promise<FakeCardAction>;
  /** The card an interactive message shows now (after PATCHes and callback answers); undefined for others. */
  card(messageId: string): unknown;
  /** The buttons an interactive message shows now. */
  buttons(messageId: string): FakeCardButton[];
  /** Every press delivered so far, with its answer. */
  cardActions(): FakeCardAction[];
  /** Cuts the long connection abruptly; the SDK should discover the endpoint again and reconnect. */
  dropConnection(): void;
  /** True while a long connection is open and its client has pinged (the SDK listens from then on). */
  isConnected(): boolean;
  /** Long connections accepted so far. */
  connectionCount(): number;
  /** Pings received on the long connection. */
  pingCount(): number;
  /** What the bot posted (sends and replies), in order. */
  sent(): FakeSentMessage[];
  /**
   * Puts bytes behind a key of a message (the `image_key` or `file_key` of an event the test sends), for
   * `GET /open-apis/im/v1/messages/:message_id/resources/:file_key`.
   */
  addResource(messageId: string, key: string, resource: FakeResource): void;
  /** Images and files the bot uploaded, in order (their keys are what its image and file messages name). */
  uploads(): FakeUpload[];
  /** Every PATCH of a card, accepted or refused, with the fake clock's time. */
  cardUpdates(): FakeCardUpdate[];
  /** Messages the bot recalled. */
  recalled(): string[];
  /**
   * What the chat shows now: the bot's messages not recalled, in order, each card with its content after updates
   * (a streamed reply's final text), unlike {@link sent}, which keeps what each message was sent with.
   */
  shown(): FakeSentMessage[];
  acks(): FakeFeishuAck[];
  reactions(): FakeReaction[];
  requests(): FakeRestRequest[];
  /** The next rate-limited call(s) answer HTTP 429 (or 400) with code 99991400 and `x-ogw-ratelimit-reset`. */
  rateLimitNext(options?: RateLimitOptions): void;
  /** The next IM call(s) fail with this Feishu `code` and `msg` (HTTP 200 unless said). */
  failNext(options: FailureOptions): void;
  /**
   * The next message the bot sends (or replies) is created but its request is answered only when released, as when
   * the bot dies between Feishu creating the message and hearing so. A repeat answered from its `uuid` is not held.
   */
  holdNextMessageResponse(): FakeHeldResponse;
  /** Resolves once `count` messages were sent; rejects after `timeoutMs` (default 5000). */
  waitForSent(count: number, timeoutMs?: number): Promise<FakeSentMessage[]>;
  /** Resolves once `count` acks arrived; rejects after `timeoutMs` (default 5000). */
  waitForAcks(count: number, timeoutMs?: number): Promise<FakeFeishuAck[]>;
  /** Resolves once `count` long connections were accepted and the current one is connected; rejects after `timeoutMs`. */
  waitForConnection(count?: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const SERVICE_ID = 33554678;

/** Starts a fake Feishu open platform on a random port of 127.0.0.1. */
export async function startFakeFeishu(options: FakeFeishuOptions = {}): Promise<FakeFeishu> {
  const identity = {
    appId: options.appId ?? "cli_a1b2c3d4e5f60718",
    appSecret: options.appSecret ?? "fake-app-secret",
    botOpenId: options.botOpenId ?? "ou_fakebot0000000000000000000001",
    botName: options.botName ?? "Almanac Test Bot",
    tenantKey: options.tenantKey ?? "2ed263bf32cf1651",
  };
  const rest = createRestApi({
    ...identity,
    tokenExpireSeconds: options.tokenExpireSeconds ?? 7200,
    limits: { postBytes: options.maxPostBytes ?? 30 * 1024, textBytes: options.maxTextBytes ?? 150 * 1024 },
    uuidWindowMs: options.uuidWindowMs ?? 60 * 60_000,
    clock: options.clock ?? Date.now,
  });
  const longConnection = createLongConnection({
    appId: identity.appId,
    appSecret: identity.appSecret,
    serviceId: SERVICE_ID,
    pingIntervalSeconds: options.pingIntervalSeconds ?? 1,
    reconnectIntervalSeconds: options.reconnectIntervalSeconds ?? 0.1,
  });

  const onRequest = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const bytes = await readBytes(request);
    const form = await readMultipart(bytes, request.headers["content-type"] ?? "");
    // A multipart body is binary: it reaches the REST layer as its parsed form only.
    const rawBody = form === undefined ? bytes.toString("utf8") : "";
    const url = new URL(request.url ?? "/", "http://fake");
    const method = request.method ?? "GET";
    if (method === "POST" && url.pathname === "/callback/ws/endpoint") {
      const answer = longConnection.discover(
        parseJsonBody(rawBody).value,
        request.headers.host ?? "127.0.0.1",
      );
      sendJson(response, answer.status, answer.body);
      return;
    }
    const answer = rest.handle({
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      ...(request.headers.authorization === undefined
        ? {}
        : { authorization: request.headers.authorization }),
      rawBody,
      ...(form === undefined ? {} : { form }),
    });
    if (answer.heldUntil !== undefined) await answer.heldUntil;
    if (answer.download !== undefined) {
      sendBytes(response, answer.download);
      return;
    }
    sendJson(response, answer.status, answer.body, answer.headers);
  };

  const server = createServer((request, response) => {
    onRequest(request, response).catch((error: unknown) => {
      sendJson(response, 500, { code: 500, msg: `fake Feishu failed: ${String(error)}` });
    });
  });
  server.on("upgrade", (request, socket, head: Buffer) => longConnection.upgrade(request, socket, head));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const context = identity;
  const cardActions: FakeCardAction[] = [];

  /** The press of a button the card shows now; throws when the message is no card or the button is gone. */
  const buildPress = (press: FakeButtonPress): { built: BuiltCardAction; value: unknown } => {
    const card = rest.card(press.messageId);
    const message = rest.sent().find((sent) => sent.messageId === press.messageId);
    if (card === undefined || message === undefined) {
      throw new Error(`fake Feishu: ${press.messageId} is not a card the bot sent`);
    }
    const shown = buttonsOf(card);
    const found = shown.find((button) => button.label === press.label);
    if (found === undefined) {
      const labels = JSON.stringify(shown.map((button) => button.label));
      throw new Error(`fake Feishu: the card shows no button "${press.label}" (it shows ${labels})`);
    }
    const spec = {
      messageId: press.messageId,
      chatId: message.chatId,
      value: found.value,
      ...(press.operator === undefined ? {} : { operator: press.operator }),
    };
    return { built: buildCardActionEvent(spec, context), value: found.value };
  };

  /** Records a delivered press and applies its answer to the card. */
  const settle = (
    built: BuiltCardAction,
    value: unknown,
    transport: FakeCardAction["transport"],
    outcome: { status: number; answer: unknown; latencyMs: number },
  ): FakeCardAction => {
    const { toast, card } = readCallbackAnswer(outcome.answer);
    if (card !== undefined) rest.replaceCard(built.messageId, card);
    const { envelope: _envelope, ...ids } = built;
    const action: FakeCardAction = {
      ...ids,
      transport,
      value,
      ...outcome,
      ...(toast === undefined ? {} : { toast }),
      cardReplaced: card !== undefined,
    };
    cardActions.push(action);
    return action;
  };

  const fake: FakeFeishu = {
    baseUrl: `http://127.0.0.1:${port}`,
    ...identity,
    messageEvent: (spec) => {
      const built = buildMessageEvent(spec, context);
      rest.rememberMessage(built.messageId, built.chatId);
      return built;
    },
    sendEvent(spec, sendOptions = {}) {
      const built = fake.messageEvent(spec);
      const frameMessageId = longConnection.push(built.envelope, sendOptions.parts ?? 1);
      return { ...built, frameMessageId };
    },
    sendRawEvent: (payload, sendOptions = {}) => longConnection.push(payload, sendOptions.parts ?? 1),
    postWebhook: (url, payload, deliveryOptions) => postWebhook(url, payload, deliveryOptions),
    cardActionEvent: (press) => buildPress(press).built,
    async pressButton(press, timeoutMs = 5000) {
      const { built, value } = buildPress(press);
      const started = Date.now();
      const frameMessageId = longConnection.push(built.envelope, 1);
      await waitUntil(() => longConnection.acks().some((ack) => ack.frameMessageId === frameMessageId), {
        timeoutMs,
        what: `the ack of pressing "${press.label}"`,
      });
      const ack = longConnection.acks().find((entry) => entry.frameMessageId === frameMessageId);
      return settle(built, value, "long-connection", {
        status: ack?.code ?? -1,
        answer: ack?.data,
        latencyMs: Date.now() - started,
      });
    },
    async pressButtonByWebhook(url, press, deliveryOptions) {
      const { built, value } = buildPress(press);
      const started = Date.now();
      const response = await postWebhook(url, built.envelope, deliveryOptions);
      const ok = response.status === 200;
      return settle(built, value, "webhook", {
        status: response.status,
        answer: ok ? response.body : undefined,
        latencyMs: Date.now() - started,
      });
    },
    card: (messageId) => rest.card(messageId),
    buttons: (messageId) => buttonsOf(rest.card(messageId)),
    cardActions: () => [...cardActions],
    dropConnection: () => longConnection.drop(),
    isConnected: () => longConnection.isConnected(),
    connectionCount: () => longConnection.connectionCount(),
    pingCount: () => longConnection.pingCount(),
    sent: () => rest.sent(),
    addResource: (messageId, key, resource) => rest.addResource(messageId, key, resource),
    uploads: () => rest.uploads(),
    cardUpdates: () => rest.cardUpdates(),
    recalled: () => rest.recalled(),
    shown: () => rest.shown(),
    acks: () => longConnection.acks(),
    reactions: () => rest.reactions(),
    requests: () => rest.requests(),
    rateLimitNext: (limit) => rest.rateLimitNext(limit),
    failNext: (failure) => rest.failNext(failure),
    holdNextMessageResponse: () => rest.holdNextMessageResponse(),
    async waitForSent(count, timeoutMs = 5000) {
      await waitUntil(() => rest.sent().length >= count, { timeoutMs, what: `${count} sent message(s)` });
      return rest.sent();
    },
    async waitForAcks(count, timeoutMs = 5000) {
      await waitUntil(() => longConnection.acks().length >= count, { timeoutMs, what: `${count} ack(s)` });
      return longConnection.acks();
    },
    waitForConnection: (count = 1, timeoutMs = 5000) =>
      waitUntil(() => longConnection.connectionCount() >= count && longConnection.isConnected(), {
        timeoutMs,
        what: `long connection #${count}`,
      }),
    async close() {
      rest.releaseHeld();
      await longConnection.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

async function readBytes(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

/** Writes a download; one that stalls sends its first bytes, then nothing until the client goes away. */
function sendBytes(
  response: ServerResponse,
  download: { bytes: Uint8Array; headers: Readonly<Record<string, string>>; stallAfterBytes?: number },
): void {
  response.writeHead(200, download.headers);
  if (download.stallAfterBytes === undefined) {
    response.end(download.bytes);
    return;
  }
  response.write(download.bytes.subarray(0, download.stallAfterBytes));
}

/** Options of {@link waitUntil}. */
export interface WaitUntilOptions {
  /** Default 5000. */
  readonly timeoutMs?: number;
  /** Named in the timeout error. */
  readonly what?: string;
}

/** Polls `check` every few milliseconds until it returns true; rejects with a clear error after the timeout. */
export async function waitUntil(check: () => boolean, options: WaitUntilOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${options.what ?? "a condition"}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
