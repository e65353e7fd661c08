import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { z } from "zod";
import { decodeFrame, encodeFrame, type FeishuFrame, FRAME_METHOD, frameHeader } from "./frame-codec.js";

/** An acknowledgement the client sent for an event frame. */
export interface FakeFeishuAck {
  /** The frame's `message_id` header (the long-connection delivery id, not the chat message id). */
  readonly frameMessageId: string;
  /** `code` of the ack payload: 200 when the handler resolved, 500 when it threw. */
  readonly code: number;
  /** The handler's return value, decoded from the ack's base64 `data`, if any. */
  readonly data?: unknown;
  /** Milliseconds between sending the (last part of the) event and receiving the ack. */
  readonly latencyMs: number;
}

/** Settings of the long-connection endpoint. */
export interface LongConnectionOptions {
  readonly appId: string;
  readonly appSecret: string;
  readonly serviceId: number;
  /** `ClientConfig.PingInterval` in seconds. */
  readonly pingIntervalSeconds: number;
  /** `ClientConfig.ReconnectInterval` in seconds (fractions allowed). */
  readonly reconnectIntervalSeconds: number;
}

/** The fake's long-connection side: endpoint discovery, the WebSocket server and its records. */
export interface LongConnection {
  /** Answers `POST /callback/ws/endpoint`; `host` is `127.0.0.1:<port>`. */
  discover(body: unknown, host: string): { readonly status: number; readonly body: unknown };
  /** Handles an HTTP upgrade to `/ws/v2`; unknown tickets are refused with 403. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Sends an event payload on the current connection, split into `parts` frames; returns the frame id. */
  push(payload: unknown, parts: number): string;
  /** Cuts the current connection without a close handshake (like a network failure). */
  drop(): void;
  /** True while a connection is open and its client has sent its first ping (so it is listening). */
  isConnected(): boolean;
  /** WebSocket connections accepted so far. */
  connectionCount(): number;
  pingCount(): number;
  acks(): FakeFeishuAck[];
  close(): Promise<void>;
}

const discoveryBody = z.object({ AppID: z.string(), AppSecret: z.string() });
const ackPayload = z.object({ code: z.number(), data: z.string().optional() });

/** Creates the long-connection endpoint of the fake. */
export function createLongConnection(options: LongConnectionOptions): LongConnection {
  const server = new WebSocketServer({ noServer: true });
  const tickets = new Set<string>();
  const sentAt = new Map<string, number>();
  const acks: FakeFeishuAck[] = [];
  let current: WebSocket | undefined;
  // The SDK attaches its message handler just after sending its first ping; frames sent earlier are lost.
  const greeted = new WeakSet<WebSocket>();
  let connections = 0;
  let pings = 0;

  const clientConfig = () => ({
    PingInterval: options.pingIntervalSeconds,
    ReconnectCount: -1,
    ReconnectInterval: options.reconnectIntervalSeconds,
    ReconnectNonce: 0,
  });

  const send = (socket: WebSocket, frame: FeishuFrame): void => {
    if (socket.readyState === socket.OPEN) socket.send(encodeFrame(frame));
  };

  const onFrame = (socket: WebSocket, frame: FeishuFrame): void => {
    const type = frameHeader(frame, "type");
    if (frame.method === FRAME_METHOD.control && type === "ping") {
      pings += 1;
      greeted.add(socket);
      send(socket, {
        SeqID: 0,
        LogID: 0,
        service: options.serviceId,
        method: FRAME_METHOD.control,
        headers: [{ key: "type", value: "pong" }],
        payload: Buffer.from(JSON.stringify(clientConfig())),
      });
      return;
    }
    if (frame.method !== FRAME_METHOD.data) return;
    const frameMessageId = frameHeader(frame, "message_id") ?? "";
    const parsed = ackPayload.safeParse(parseJson(Buffer.from(frame.payload ?? []).toString("utf8")));
    const code = parsed.success ? parsed.data.code : -1;
    const encoded = parsed.success ? parsed.data.data : undefined;
    const data =
      encoded === undefined ? undefined : parseJson(Buffer.from(encoded, "base64").toString("utf8"));
    const latencyMs = Date.now() - (sentAt.get(frameMessageId) ?? Date.now());
    acks.push({ frameMessageId, code, ...(data === undefined ? {} : { data }), latencyMs });
  };

  server.on("connection", (socket: WebSocket) => {
    connections += 1;
    current = socket;
    socket.on("message", (data: Buffer) => {
      try {
        onFrame(socket, decodeFrame(data));
      } catch {
        socket.close(1002, "invalid frame");
      }
    });
    socket.on("close", () => {
      if (current === socket) current = undefined;
    });
  });

  return {
    discover(body, host) {
      const parsed = discoveryBody.safeParse(body);
      if (
        !parsed.success ||
        parsed.data.AppID !== options.appId ||
        parsed.data.AppSecret !== options.appSecret
      ) {
        return { status: 200, body: { code: 514, msg: "auth failed: invalid AppID or AppSecret", data: {} } };
      }
      const ticket = randomUUID();
      tickets.add(ticket);
      // service_id must not be the first query parameter: the SDK parses the URL with qs.
      const url =
        `ws://${host}/ws/v2?fpid=493&aid=552564&device_id=${randomUUID()}` +
        `&access_key=fake-access-key&service_id=${options.serviceId}&ticket=${ticket}`;
      return { status: 200, body: { code: 0, msg: "ok", data: { URL: url, ClientConfig: clientConfig() } } };
    },

    upgrade(request, socket, head) {
      const url = new URL(request.url ?? "/", "http://fake");
      const ticket = url.searchParams.get("ticket") ?? "";
      if (url.pathname !== "/ws/v2" || !tickets.has(ticket)) {
        socket.end("HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
        return;
      }
      server.handleUpgrade(request, socket, head, (webSocket) =>
        server.emit("connection", webSocket, request),
      );
    },

    push(payload, parts) {
      const socket = current;
      if (socket === undefined || socket.readyState !== socket.OPEN || !greeted.has(socket)) {
        throw new Error("fake Feishu: no long connection is open and pinged yet (did the client start?)");
      }
      const bytes = Buffer.from(JSON.stringify(payload), "utf8");
      const count = Math.max(1, Math.min(parts, bytes.length));
      const size = Math.ceil(bytes.length / count);
      const frameMessageId = randomUUID();
      const traceId = randomUUID();
      for (let index = 0; index < count; index += 1) {
        if (index === count - 1) sentAt.set(frameMessageId, Date.now());
        send(socket, {
          SeqID: 0,
          LogID: 0,
          service: options.serviceId,
          method: FRAME_METHOD.data,
          headers: [
            { key: "type", value: "event" },
            { key: "message_id", value: frameMessageId },
            { key: "sum", value: String(count) },
            { key: "seq", value: String(index) },
            { key: "trace_id", value: traceId },
          ],
          payload: bytes.subarray(index * size, (index + 1) * size),
        });
      }
      return frameMessageId;
    },

    drop() {
      current?.terminate();
      current = undefined;
    },

    isConnected: () => current !== undefined && current.readyState === current.OPEN && greeted.has(current),
    connectionCount: () => connections,
    pingCount: () => pings,
    acks: () => [...acks],

    close() {
      for (const client of server.clients) client.terminate();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
