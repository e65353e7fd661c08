import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { z } from "zod";
import { startFakeDingTalk } from "./fake-dingtalk.js";
import { type FakeDingTalk, type FakeDingTalkOptions, ROBOT_TOPIC } from "./types.js";
import { waitUntil } from "./wait-until.js";

const frameSchema = z.object({
  type: z.string(),
  headers: z.object({ messageId: z.string(), topic: z.string() }).loose(),
  data: z.string(),
});
type Frame = z.infer<typeof frameSchema>;

let fake: FakeDingTalk | undefined;
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  await fake?.close();
  fake = undefined;
});

async function start(options: FakeDingTalkOptions = {}): Promise<FakeDingTalk> {
  fake = await startFakeDingTalk(options);
  return fake;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

async function openTicket(dingtalk: FakeDingTalk, secret = dingtalk.clientSecret) {
  return post(`${dingtalk.url}/v1.0/gateway/connections/open`, {
    clientId: dingtalk.clientId,
    clientSecret: secret,
    ua: "raw-test",
    subscriptions: [{ type: "CALLBACK", topic: ROBOT_TOPIC }],
  });
}

/** Opens a stream connection by hand (no SDK) and collects the frames it receives. */
async function connect(dingtalk: FakeDingTalk): Promise<{ socket: WebSocket; frames: Frame[] }> {
  const { body } = await openTicket(dingtalk);
  const { endpoint, ticket } = z.object({ endpoint: z.string(), ticket: z.string() }).parse(body);
  const socket = new WebSocket(`${endpoint}?ticket=${ticket}`);
  sockets.push(socket);
  const frames: Frame[] = [];
  socket.on("message", (raw) => frames.push(frameSchema.parse(JSON.parse(raw.toString()))));
  await once(socket, "open");
  return { socket, frames };
}

const ack = (socket: WebSocket, messageId: string) =>
  socket.send(JSON.stringify({ code: 200, headers: { messageId }, message: "OK", data: '{"response":{}}' }));

describe("fake DingTalk stream gateway", () => {
  it("refuses wrong credentials at connections/open the way DingTalk does", async () => {
    const dingtalk = await start();
    const refused = await openTicket(dingtalk, "wrong-secret");
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ code: "authFailed" });
    const accepted = await openTicket(dingtalk);
    expect(accepted.body).toMatchObject({
      endpoint: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+\/connect$/),
    });
  });

  it("opens one connection per ticket and refuses a reused or unknown ticket", async () => {
    const dingtalk = await start();
    const { body } = await openTicket(dingtalk);
    const { endpoint, ticket } = z.object({ endpoint: z.string(), ticket: z.string() }).parse(body);
    const first = new WebSocket(`${endpoint}?ticket=${ticket}`);
    sockets.push(first);
    await once(first, "open");
    const reused = new WebSocket(`${endpoint}?ticket=${ticket}`);
    sockets.push(reused);
    const [error] = (await once(reused, "error")) as [Error];
    expect(error.message).toContain("401");
    expect(dingtalk.connections()).toHaveLength(1);
    expect(dingtalk.connections()[0]?.subscriptions).toEqual([{ type: "CALLBACK", topic: ROBOT_TOPIC }]);
  });

  it("pushes a robot CALLBACK and pushes it again until it is acked", async () => {
    const dingtalk = await start({ redeliverAfterMs: 40, maxRedeliveries: 2 });
    const { socket, frames } = await connect(dingtalk);
    const delivery = dingtalk.sendRobotMessage({ conversation: "single", text: "hello" });
    await waitUntil(() => dingtalk.deliveries().length >= 3, { message: "two redeliveries" });
    expect(dingtalk.deliveries().map((record) => record.attempt)).toEqual([0, 1, 2]);
    const frame = frames[0];
    expect(frame).toMatchObject({
      type: "CALLBACK",
      headers: { topic: ROBOT_TOPIC, messageId: delivery.messageId },
    });
    expect(JSON.parse(frame?.data ?? "{}")).toMatchObject({
      msgId: delivery.msgId,
      text: { content: "hello" },
    });

    dingtalk.redeliver(delivery.messageId);
    await waitUntil(() => frames.length === 4);
    ack(socket, delivery.messageId);
    await waitUntil(() => dingtalk.acks().length === 1);
    expect(dingtalk.acks()[0]).toMatchObject({ messageId: delivery.messageId, msgId: delivery.msgId });
    expect(dingtalk.problems()).toEqual([]);
  });

  it("queues CALLBACKs while no connection is open", async () => {
    const dingtalk = await start();
    const delivery = dingtalk.sendRobotMessage({ conversation: "group", text: "early" });
    expect(dingtalk.deliveries()).toHaveLength(0);
    const { frames } = await connect(dingtalk);
    await waitUntil(() => frames.length === 1);
    expect(frames[0]?.headers.messageId).toBe(delivery.messageId);
    expect(JSON.parse(frames[0]?.data ?? "{}")).toMatchObject({
      isInAtList: true,
      text: { content: " early" },
    });
  });

  it("expects SYSTEM pings to be echoed with the same data", async () => {
    const dingtalk = await start();
    const { socket } = await connect(dingtalk);
    socket.on("message", (raw) => {
      const frame = frameSchema.parse(JSON.parse(raw.toString()));
      if (frame.headers.topic === "ping") {
        socket.send(JSON.stringify({ code: 200, headers: frame.headers, message: "OK", data: frame.data }));
      }
    });
    await dingtalk.ping();
    socket.removeAllListeners("message");
    socket.on("message", (raw) => {
      const frame = frameSchema.parse(JSON.parse(raw.toString()));
      socket.send(JSON.stringify({ code: 200, headers: frame.headers, message: "OK", data: "{}" }));
    });
    await expect(dingtalk.ping()).rejects.toThrow(/echo/);
    expect(dingtalk.problems()).toHaveLength(1);
  });

  it("sends SYSTEM disconnect before closing, and can drop a socket abruptly", async () => {
    const dingtalk = await start();
    const { socket, frames } = await connect(dingtalk);
    dingtalk.disconnect("rebalancing");
    const [code] = (await once(socket, "close")) as [number];
    expect(frames.at(-1)).toMatchObject({ type: "SYSTEM", headers: { topic: "disconnect" } });
    expect(code).toBe(1000);
    const second = await connect(dingtalk);
    dingtalk.dropConnection();
    const [dropCode] = (await once(second.socket, "close")) as [number];
    expect(dropCode).toBe(1006);
    expect(dingtalk.isConnected()).toBe(false);
  });

  it("stalls a connection half-open: socket up, no pong, no pushes, CALLBACKs kept for the next connection", async () => {
    const dingtalk = await start();
    const first = await connect(dingtalk);
    first.socket.ping();
    await once(first.socket, "pong");
    await waitUntil(() => dingtalk.clientPings() === 1, { message: "the client ping counted" });
    dingtalk.stallConnection();
    expect(dingtalk.isConnected()).toBe(false);
    await expect(dingtalk.ping()).rejects.toThrow(/no open connection/);
    const delivery = dingtalk.sendRobotMessage({ conversation: "single", text: "during the stall" });
    let ponged = false;
    first.socket.on("pong", () => {
      ponged = true;
    });
    first.socket.ping();
    // A second connection proves the fake went on serving; by then the stalled one had time to answer.
    const second = await connect(dingtalk);
    await waitUntil(() => second.frames.length === 1, {
      message: "the waiting CALLBACK on the new connection",
    });
    expect(second.frames[0]?.headers.messageId).toBe(delivery.messageId);
    expect(first.frames).toHaveLength(0);
    expect(ponged).toBe(false);
    expect(first.socket.readyState).toBe(WebSocket.OPEN);
  });
});

describe("fake DingTalk robot HTTP", () => {
  it("accepts markdown on a live sessionWebhook and answers 300001 once it expired or was revoked", async () => {
    const dingtalk = await start({ markdownLimit: 100 });
    const live = dingtalk.sendRobotMessage({ conversation: "group", text: "hi" });
    const markdown = (text: string) => ({ msgtype: "markdown", markdown: { title: "T", text } });
    expect((await post(live.sessionWebhook, markdown("**ok**"))).body).toEqual({ errcode: 0, errmsg: "ok" });
    expect((await post(live.sessionWebhook, markdown("x".repeat(101)))).body).toMatchObject({
      errcode: 40035,
    });
    const expired = dingtalk.sendRobotMessage({ conversation: "single", text: "hi", webhookExpired: true });
    expect((await post(expired.sessionWebhook, markdown("late"))).body).toMatchObject({ errcode: 300001 });
    const revoked = dingtalk.sendRobotMessage({ conversation: "single", text: "hi", webhookRevoked: true });
    expect((await post(revoked.sessionWebhook, markdown("late"))).body).toMatchObject({ errcode: 300001 });
    dingtalk.rateLimitNext({ route: "sessionWebhook" });
    expect((await post(live.sessionWebhook, markdown("fast"))).body).toMatchObject({ errcode: 130101 });
    expect(dingtalk.sent()).toEqual([
      expect.objectContaining({ route: "sessionWebhook", conversationType: "2", title: "T", text: "**ok**" }),
    ]);
  });

  it("checks the access token on the robot OpenAPI and throttles on request", async () => {
    const dingtalk = await start();
    const token = await post(`${dingtalk.url}/v1.0/oauth2/accessToken`, {
      appKey: dingtalk.clientId,
      appSecret: dingtalk.clientSecret,
    });
    const { accessToken } = z
      .object({ accessToken: z.string(), expireIn: z.literal(7200) })
      .parse(token.body);
    const bad = await post(`${dingtalk.url}/v1.0/oauth2/accessToken`, {
      appKey: dingtalk.clientId,
      appSecret: "x",
    });
    expect(bad).toMatchObject({ status: 400, body: { code: "invalidClientIdOrSecret" } });

    const message = {
      robotCode: dingtalk.robotCode,
      msgKey: "sampleMarkdown",
      msgParam: JSON.stringify({ title: "Hi", text: "**hello**" }),
    };
    const group = `${dingtalk.url}/v1.0/robot/groupMessages/send`;
    const dm = `${dingtalk.url}/v1.0/robot/oToMessages/batchSend`;
    const auth = { "x-acs-dingtalk-access-token": accessToken };
    expect((await post(group, { ...message, openConversationId: "cid-1" })).status).toBe(401);
    expect((await post(group, { ...message, openConversationId: "cid-1" }, auth)).status).toBe(200);
    dingtalk.rateLimitNext({ route: "openapi" });
    const throttled = await post(dm, { ...message, userIds: ["staff-9"] }, auth);
    expect(throttled).toMatchObject({ status: 403, body: { code: "Forbidden.AccessDenied.QpsLimitForApi" } });
    expect((await post(dm, { ...message, userIds: ["staff-9"] }, auth)).body).toMatchObject({
      invalidStaffIdList: [],
    });
    dingtalk.expireAccessTokens();
    expect((await post(dm, { ...message, userIds: ["staff-9"] }, auth)).status).toBe(401);
    expect(
      dingtalk.sent().map((sent) => [sent.route, sent.conversationId ?? sent.userIds, sent.text]),
    ).toEqual([
      ["openapi", "cid-1", "**hello**"],
      ["openapi", ["staff-9"], "**hello**"],
    ]);
  });
});
