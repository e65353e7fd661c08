import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { z } from "zod";
import type { FakeRecords } from "./fake-records.js";
import { ROBOT_TOPIC } from "./types.js";

/** Options of {@link createStreamGateway}. */
export interface StreamGatewayOptions {
  readonly records: FakeRecords;
  readonly appId: string;
  readonly redeliverAfterMs: number;
  readonly maxRedeliveries: number;
  readonly disconnectGraceMs: number;
}

/** A subscription as sent to `connections/open`. */
export interface Subscription {
  readonly type: string;
  readonly topic: string;
}

/** The WebSocket half of the fake: tickets, connections, CALLBACK pushes, acks, redelivery, pings, stalls. */
export interface StreamGateway {
  issueTicket(subscriptions: readonly Subscription[], ua: string | undefined): string;
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  push(messageId: string, msgId: string, payload: Readonly<Record<string, unknown>>): void;
  redeliver(messageId: string): void;
  ping(timeoutMs: number): Promise<void>;
  disconnect(reason: string): void;
  drop(): void;
  stall(): void;
  isConnected(): boolean;
  clientPings(): number;
  close(): void;
}

interface Connection {
  readonly id: number;
  readonly socket: WebSocket;
}

interface Callback {
  readonly msgId: string;
  readonly data: string;
  attempts: number;
  lastPushAt: number;
  acked: boolean;
  timer?: NodeJS.Timeout;
}

interface PendingPing {
  readonly data: string;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

// What the SDK sends back: acks `{code, headers:{messageId}, message, data}` and ping echoes (same shape).
const upstreamFrameSchema = z.object({
  code: z.number(),
  headers: z.object({ messageId: z.string().min(1) }).loose(),
  message: z.string().optional(),
  data: z.string().optional(),
});

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Creates the stream gateway; the HTTP server forwards `upgrade` requests for `/connect` to it. */
export function createStreamGateway(options: StreamGatewayOptions): StreamGateway {
  const { records } = options;
  const server = new WebSocketServer({ noServer: true });
  const tickets = new Map<string, { subscriptions: readonly Subscription[]; ua: string | undefined }>();
  const callbacks = new Map<string, Callback>();
  const waiting: string[] = [];
  const pings = new Map<string, PendingPing>();
  let current: Connection | undefined;
  let nextConnectionId = 0;
  let nextPing = 0;
  let clientPings = 0;
  let closed = false;
  const graceTimers = new Set<NodeJS.Timeout>();

  const frame = (type: string, headers: Record<string, string>, data: string): string =>
    JSON.stringify({
      specVersion: "1.0",
      type,
      headers: { contentType: "application/json", time: String(Date.now()), ...headers },
      data,
    });

  const open = (): Connection | undefined =>
    current !== undefined && current.socket.readyState === current.socket.OPEN ? current : undefined;

  function send(messageId: string): void {
    const callback = callbacks.get(messageId);
    const connection = open();
    if (callback === undefined || closed) return;
    if (connection === undefined) {
      if (!waiting.includes(messageId)) waiting.push(messageId);
      return;
    }
    const headers = {
      appId: options.appId,
      connectionId: `conn-${connection.id}`,
      messageId,
      topic: ROBOT_TOPIC,
    };
    connection.socket.send(frame("CALLBACK", headers, callback.data));
    callback.lastPushAt = Date.now();
    records.addDelivery({
      messageId,
      msgId: callback.msgId,
      attempt: callback.attempts,
      connectionId: connection.id,
    });
    clearTimeout(callback.timer);
    if (callback.attempts < options.maxRedeliveries) {
      callback.timer = setTimeout(() => {
        if (callback.acked) return;
        callback.attempts += 1;
        send(messageId);
      }, options.redeliverAfterMs);
    }
  }

  function onUpstream(connection: Connection, raw: RawData): void {
    const text = raw.toString();
    const parsed = upstreamFrameSchema.safeParse(parseJson(text));
    if (!parsed.success) {
      records.addProblem(
        `conn-${connection.id}: frame is not {code, headers.messageId, data}: ${text.slice(0, 200)}`,
      );
      return;
    }
    const { messageId } = parsed.data.headers;
    const ping = pings.get(messageId);
    if (ping !== undefined) {
      pings.delete(messageId);
      clearTimeout(ping.timer);
      if (parsed.data.code === 200 && parsed.data.data === ping.data) ping.resolve();
      else {
        const problem = `ping ${messageId}: echo has code ${parsed.data.code} and data ${parsed.data.data}`;
        records.addProblem(problem);
        ping.reject(new Error(problem));
      }
      return;
    }
    const callback = callbacks.get(messageId);
    if (callback === undefined) {
      records.addProblem(`ack for unknown message ${messageId}`);
      return;
    }
    if (parsed.data.code !== 200) records.addProblem(`ack for ${messageId} has code ${parsed.data.code}`);
    callback.acked = true;
    clearTimeout(callback.timer);
    records.addAck({
      messageId,
      msgId: callback.msgId,
      latencyMs: Date.now() - callback.lastPushAt,
      data: parsed.data.data === undefined ? undefined : parseJson(parsed.data.data),
    });
  }

  function accept(
    socket: WebSocket,
    ticket: { subscriptions: readonly Subscription[]; ua: string | undefined },
  ) {
    nextConnectionId += 1;
    const connection: Connection = { id: nextConnectionId, socket };
    current = connection;
    records.openConnection({
      id: connection.id,
      subscriptions: ticket.subscriptions,
      ...(ticket.ua === undefined ? {} : { ua: ticket.ua }),
    });
    socket.on("message", (raw) => onUpstream(connection, raw));
    socket.on("ping", () => {
      clientPings += 1;
    });
    socket.on("close", () => records.closeConnection(connection.id));
    socket.on("error", () => records.closeConnection(connection.id));
    for (const messageId of waiting.splice(0)) send(messageId);
  }

  function refuse(socket: Duplex, reason: string): void {
    records.addRejection({ route: "stream", status: 401, code: "invalidTicket", message: reason });
    socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  }

  return {
    issueTicket(subscriptions, ua) {
      const ticket = randomUUID();
      tickets.set(ticket, { subscriptions, ua });
      return ticket;
    },
    handleUpgrade(request, socket, head) {
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      const ticketId = url.searchParams.get("ticket") ?? "";
      const ticket = tickets.get(ticketId);
      if (url.pathname !== "/connect" || ticket === undefined || closed) {
        refuse(socket, `no valid ticket for ${url.pathname}`);
        return;
      }
      tickets.delete(ticketId); // a ticket opens one connection
      server.handleUpgrade(request, socket, head, (ws) => accept(ws, ticket));
    },
    push(messageId, msgId, payload) {
      callbacks.set(messageId, {
        msgId,
        data: JSON.stringify(payload),
        attempts: 0,
        lastPushAt: 0,
        acked: false,
      });
      send(messageId);
    },
    redeliver(messageId) {
      const callback = callbacks.get(messageId);
      if (callback === undefined) throw new Error(`fake DingTalk: no CALLBACK ${messageId} to redeliver`);
      callback.attempts += 1;
      callback.acked = false;
      send(messageId);
    },
    ping(timeoutMs) {
      const connection = open();
      if (connection === undefined)
        return Promise.reject(new Error("fake DingTalk: no open connection to ping"));
      nextPing += 1;
      const messageId = `ping-${nextPing}`;
      const data = JSON.stringify({ opaque: randomUUID() });
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          pings.delete(messageId);
          records.addProblem(`ping ${messageId}: no echo within ${timeoutMs} ms`);
          reject(new Error(`fake DingTalk: ping ${messageId} was not echoed within ${timeoutMs} ms`));
        }, timeoutMs);
        pings.set(messageId, { data, resolve, reject, timer });
        connection.socket.send(frame("SYSTEM", { messageId, topic: "ping" }, data));
      });
    },
    disconnect(reason) {
      const connection = open();
      if (connection === undefined) return;
      const messageId = `disconnect-${randomUUID()}`;
      connection.socket.send(frame("SYSTEM", { messageId, topic: "disconnect" }, JSON.stringify({ reason })));
      const timer = setTimeout(() => {
        graceTimers.delete(timer);
        connection.socket.close(1000, "disconnect");
      }, options.disconnectGraceMs);
      graceTimers.add(timer);
    },
    drop() {
      open()?.socket.terminate();
    },
    stall() {
      const connection = open();
      if (connection === undefined) return;
      // Half-open: the TCP socket stays up, but nothing is read (no pong, no ack) and nothing more is pushed on
      // it; CALLBACKs wait for the bot's next connection, as DingTalk redelivers unacked pushes there.
      current = undefined;
      connection.socket.pause();
    },
    isConnected: () => open() !== undefined,
    clientPings: () => clientPings,
    close() {
      closed = true;
      for (const callback of callbacks.values()) clearTimeout(callback.timer);
      for (const timer of graceTimers) clearTimeout(timer);
      for (const ping of pings.values()) {
        clearTimeout(ping.timer);
        ping.reject(new Error("fake DingTalk closed"));
      }
      pings.clear();
      for (const client of server.clients) client.terminate();
      server.close();
    },
  };
}
