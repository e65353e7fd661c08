import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { z } from "zod";
import { parseJsonBody, readBody, sendJson } from "../http-io.js";
import { createCardHttp } from "./card-http.js";
import { FakeRecords } from "./fake-records.js";
import { createMediaHttp } from "./media-http.js";
import { createMessageFilesHttp } from "./message-files-http.js";
import { createRobotHttp } from "./robot-http.js";
import { buildRobotPayload, robotConversation } from "./robot-payload.js";
import { createStreamGateway } from "./stream-gateway.js";
import {
  DEFAULT_CARD_TEMPLATE_ID,
  DEFAULT_MARKDOWN_LIMIT,
  type FakeDingTalk,
  type FakeDingTalkOptions,
} from "./types.js";

const connectionsOpenSchema = z.object({
  clientId: z.string(),
  clientSecret: z.string(),
  ua: z.string().optional(),
  subscriptions: z.array(z.object({ type: z.string(), topic: z.string() })).min(1),
});

/**
 * Starts a fake DingTalk on a random port of 127.0.0.1: `POST /v1.0/gateway/connections/open` and the Stream
 * WebSocket (`/connect?ticket=…`), per-conversation sessionWebhooks (`POST /robot/sendBySession?session=…`),
 * `POST /v1.0/oauth2/accessToken`, the robot OpenAPI (`oToMessages/batchSend`, `groupMessages/send`,
 * `messageFiles/download` and the download URLs it names), AI cards (`card/instances/createAndDeliver`,
 * `PUT card/streaming`) and the older API's `POST /media/upload`.
 */
export async function startFakeDingTalk(options: FakeDingTalkOptions = {}): Promise<FakeDingTalk> {
  const clientId = options.clientId ?? "dingfakeclientid";
  const clientSecret = options.clientSecret ?? "fake-client-secret";
  const robotCode = options.robotCode ?? clientId;
  const sessionWebhookTtlMs = options.sessionWebhookTtlMs ?? 90 * 60 * 1000;
  const records = new FakeRecords();
  const gateway = createStreamGateway({
    records,
    appId: `app-${clientId}`,
    redeliverAfterMs: options.redeliverAfterMs ?? 60_000,
    maxRedeliveries: options.maxRedeliveries ?? 3,
    disconnectGraceMs: options.disconnectGraceMs ?? 20,
  });
  const cardTemplateId = options.cardTemplateId ?? DEFAULT_CARD_TEMPLATE_ID;
  let baseUrl = "";
  const robot = createRobotHttp({
    records,
    clientId,
    clientSecret,
    robotCode,
    accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 7_200,
    markdownLimit: options.markdownLimit ?? DEFAULT_MARKDOWN_LIMIT,
    mediaExists: (mediaId) => media.exists(mediaId),
  });
  const media = createMediaHttp({ records, robot });
  const files = createMessageFilesHttp({ records, robot, robotCode, baseUrl: () => baseUrl });
  const cards = createCardHttp({ records, robot, robotCode, cardTemplateId });
  let nextMessage = 0;

  function openConnection(request: IncomingMessage, response: ServerResponse, body: unknown): void {
    const parsed = connectionsOpenSchema.safeParse(body);
    if (!parsed.success || parsed.data.clientId !== clientId || parsed.data.clientSecret !== clientSecret) {
      const message = parsed.success ? "鉴权失败" : `鉴权失败: ${parsed.error.message}`;
      records.addRejection({ route: "connections", status: 401, code: "authFailed", message });
      sendJson(response, 401, { requestid: randomUUID(), code: "authFailed", message });
      return;
    }
    if (!(request.headers.accept ?? "").includes("application/json")) {
      // Without it DingTalk answers XML (noted in the SDK); record it so a test can see the client got it wrong.
      records.addProblem("connections/open without `Accept: application/json`");
    }
    const ticket = gateway.issueTicket(parsed.data.subscriptions, parsed.data.ua);
    sendJson(response, 200, { endpoint: `${baseUrl.replace(/^http/, "ws")}/connect`, ticket });
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    // The upload is multipart: it reads its raw body itself.
    if (await media.handle(request, response, url)) return;
    const { value: body } = parseJsonBody(await readBody(request));
    if (request.method === "POST" && url.pathname === "/v1.0/gateway/connections/open") {
      openConnection(request, response, body);
      return;
    }
    if (robot.handle(request, response, url, body)) return;
    if (files.handle(request, response, url, body)) return;
    if (cards.handle(request, response, url, body)) return;
    sendJson(response, 404, {
      requestid: randomUUID(),
      code: "NotFound",
      message: `${request.method} ${url.pathname}`,
    });
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      records.addProblem(`fake DingTalk failed on ${request.url}: ${message}`);
      sendJson(response, 500, { code: "testkit_error", message });
    });
  });
  server.on("upgrade", (request: IncomingMessage, socket, head: Buffer) =>
    gateway.handleUpgrade(request, socket, head),
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  baseUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
  let closing: Promise<void> | undefined;

  return {
    url: baseUrl,
    clientId,
    clientSecret,
    robotCode,
    cardTemplateId,
    sendRobotMessage(input) {
      nextMessage += 1;
      const now = Date.now();
      const expiresAt = input.webhookExpired === true ? now - 60_000 : now + sessionWebhookTtlMs;
      const session = robot.openSession(robotConversation(input), expiresAt, input.webhookRevoked === true);
      const sessionWebhook = `${baseUrl}/robot/sendBySession?session=${session}`;
      const msgId = input.msgId ?? `msg-${nextMessage}-${randomUUID().slice(0, 8)}`;
      const payload = buildRobotPayload(input, {
        msgId,
        robotCode,
        sessionWebhook,
        sessionWebhookExpiredTime: expiresAt,
        now,
      });
      const messageId = `frame-${nextMessage}-${randomUUID()}`;
      gateway.push(messageId, msgId, payload);
      return { messageId, msgId, payload, sessionWebhook };
    },
    redeliver: (messageId) => gateway.redeliver(messageId),
    ping: (timeoutMs = 2_000) => gateway.ping(timeoutMs),
    disconnect: (reason = "connection is expired") => gateway.disconnect(reason),
    dropConnection: () => gateway.drop(),
    stallConnection: () => gateway.stall(),
    clientPings: () => gateway.clientPings(),
    rateLimitNext: ({ route = "any", times = 1 } = {}) => robot.rateLimitNext(route, times),
    expireAccessTokens: () => robot.expireAccessTokens(),
    addFile: (downloadCode, file) => files.addFile(downloadCode, file),
    downloads: () => [...records.downloads],
    cards: () => cards.cards(),
    uploads: () => [...records.uploads],
    sent: () => [...records.sent],
    acks: () => [...records.acks],
    deliveries: () => [...records.deliveries],
    rejections: () => [...records.rejections],
    connections: () => [...records.connections],
    problems: () => [...records.problems],
    tokensIssued: () => robot.tokensIssued(),
    isConnected: () => gateway.isConnected(),
    close() {
      closing ??= new Promise<void>((resolve) => {
        gateway.close();
        server.closeAllConnections();
        server.close(() => resolve());
      });
      return closing;
    },
  };
}
