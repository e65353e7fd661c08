import { randomUUID } from "node:crypto";
import { type RawData, WebSocket } from "ws";
import {
  gatewayFrameSchema,
  identifySchema,
  MESSAGE_CONTENT_INTENT,
  resumeSchema,
} from "./fake-discord-schemas.js";

/** Gateway opcodes the fake speaks. */
const Op = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  PresenceUpdate: 3,
  VoiceStateUpdate: 4,
  Resume: 6,
  RequestGuildMembers: 8,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const;

/** Gateway close codes the fake uses (Discord's numbering). */
export const GatewayClose = {
  UnknownError: 4000,
  UnknownOpcode: 4001,
  DecodeError: 4002,
  NotAuthenticated: 4003,
  AuthenticationFailed: 4004,
  AlreadyAuthenticated: 4005,
  DisallowedIntents: 4014,
} as const;

/** How many dispatched events a session keeps for replay on RESUME. */
const REPLAY_LOG_LIMIT = 1000;

/** One IDENTIFY the fake accepted or refused. */
export interface RecordedIdentify {
  readonly token: string;
  readonly intents: number;
  readonly accepted: boolean;
  readonly at: number;
}

/** What the gateway needs from the rest of the fake. */
export interface FakeGatewayDependencies {
  readonly heartbeatIntervalMs: number;
  /** The token IDENTIFY and RESUME must carry (read on every attempt: tests may revoke it). */
  readonly token: () => string;
  /** False makes an IDENTIFY asking for MESSAGE_CONTENT fail with 4014, as when the portal toggle is off. */
  readonly privilegedIntents: boolean;
  /** `ws://127.0.0.1:PORT`, sent as `resume_gateway_url`. */
  readonly url: () => string;
  /** READY data for a new session. */
  readonly ready: (sessionId: string) => Record<string, unknown>;
  /** Dispatches that follow READY (GUILD_CREATE). */
  readonly afterReady: () => readonly { t: string; d: Record<string, unknown> }[];
}

/** The gateway half of the fake. */
export interface FakeGateway {
  /** Takes over a freshly upgraded socket. */
  accept(socket: WebSocket): void;
  /** Sends a dispatch to every live session (sessions that are between connections get it on RESUME). */
  dispatch(t: string, d: unknown): void;
  /** Closes every open connection with `code`; 1006 cuts the TCP connection without a close frame. */
  drop(code: number, reason?: string): void;
  /** The next RESUME is answered with op 9 (`d: false`) and its session is discarded. */
  invalidateNextResume(): void;
  identifies(): readonly RecordedIdentify[];
  resumes(): number;
  /** Open sockets that completed IDENTIFY or RESUME. */
  activeConnections(): number;
  close(): void;
}

interface Session {
  readonly id: string;
  seq: number;
  alive: boolean;
  socket: WebSocket | undefined;
  readonly log: { s: number; t: string; d: unknown }[];
}

/** Creates the gateway: HELLO, heartbeats, IDENTIFY → READY + GUILD_CREATE, RESUME with replay, close codes. */
export function createFakeGateway(dependencies: FakeGatewayDependencies): FakeGateway {
  const sessions = new Map<string, Session>();
  const sockets = new Set<WebSocket>();
  const identifyRecords: RecordedIdentify[] = [];
  let resumeCount = 0;
  let rejectNextResume = false;

  const send = (socket: WebSocket, payload: unknown): void => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(payload));
  };

  const dispatchTo = (session: Session, t: string, d: unknown): void => {
    if (!session.alive) return;
    session.seq += 1;
    const event = { s: session.seq, t, d };
    session.log.push(event);
    if (session.log.length > REPLAY_LOG_LIMIT) session.log.shift();
    if (session.socket !== undefined) send(session.socket, { op: Op.Dispatch, ...event });
  };

  function identify(socket: WebSocket, data: unknown): Session | undefined {
    const parsed = identifySchema.safeParse(data);
    if (!parsed.success) {
      socket.close(GatewayClose.DecodeError, "Error while decoding payload.");
      return undefined;
    }
    const { token, intents } = parsed.data;
    const refusal =
      token !== dependencies.token()
        ? ([GatewayClose.AuthenticationFailed, "Authentication failed."] as const)
        : (intents & MESSAGE_CONTENT_INTENT) !== 0 && !dependencies.privilegedIntents
          ? ([GatewayClose.DisallowedIntents, "Disallowed intent(s)."] as const)
          : undefined;
    identifyRecords.push({ token, intents, accepted: refusal === undefined, at: Date.now() });
    if (refusal !== undefined) {
      socket.close(refusal[0], refusal[1]);
      return undefined;
    }
    const session: Session = { id: randomUUID().replaceAll("-", ""), seq: 0, alive: true, socket, log: [] };
    sessions.set(session.id, session);
    dispatchTo(session, "READY", dependencies.ready(session.id));
    for (const event of dependencies.afterReady()) dispatchTo(session, event.t, event.d);
    return session;
  }

  function resume(socket: WebSocket, data: unknown): Session | undefined {
    const parsed = resumeSchema.safeParse(data);
    if (!parsed.success) {
      socket.close(GatewayClose.DecodeError, "Error while decoding payload.");
      return undefined;
    }
    if (parsed.data.token !== dependencies.token()) {
      socket.close(GatewayClose.AuthenticationFailed, "Authentication failed.");
      return undefined;
    }
    const session = sessions.get(parsed.data.session_id);
    if (session === undefined || !session.alive || rejectNextResume) {
      rejectNextResume = false;
      if (session !== undefined) session.alive = false;
      send(socket, { op: Op.InvalidSession, d: false });
      return undefined;
    }
    resumeCount += 1;
    session.socket = socket;
    const after = parsed.data.seq ?? 0;
    for (const event of session.log) if (event.s > after) send(socket, { op: Op.Dispatch, ...event });
    dispatchTo(session, "RESUMED", {});
    return session;
  }

  function accept(socket: WebSocket): void {
    sockets.add(socket);
    let session: Session | undefined;
    send(socket, { op: Op.Hello, d: { heartbeat_interval: dependencies.heartbeatIntervalMs } });
    socket.on("message", (raw: RawData, isBinary: boolean) => {
      let frame: unknown;
      try {
        // The fake speaks plain JSON only (no zlib-stream, no ETF): a binary frame is a decode error.
        if (isBinary) throw new TypeError("binary frame");
        frame = JSON.parse(rawText(raw));
      } catch {
        socket.close(GatewayClose.DecodeError, "Error while decoding payload.");
        return;
      }
      const parsed = gatewayFrameSchema.safeParse(frame);
      if (!parsed.success) {
        socket.close(GatewayClose.DecodeError, "Error while decoding payload.");
        return;
      }
      const { op, d } = parsed.data;
      if (op === Op.Heartbeat) {
        send(socket, { op: Op.HeartbeatAck });
      } else if (op === Op.Identify || op === Op.Resume) {
        if (session !== undefined) {
          socket.close(GatewayClose.AlreadyAuthenticated, "Already authenticated.");
          return;
        }
        session = op === Op.Identify ? identify(socket, d) : resume(socket, d);
      } else if (op === Op.PresenceUpdate || op === Op.VoiceStateUpdate || op === Op.RequestGuildMembers) {
        if (session === undefined) socket.close(GatewayClose.NotAuthenticated, "Not authenticated.");
      } else {
        socket.close(GatewayClose.UnknownOpcode, "Unknown opcode.");
      }
    });
    socket.on("close", (code: number) => {
      sockets.delete(socket);
      if (session === undefined || session.socket !== socket) return;
      session.socket = undefined;
      // A normal close (1000/1001) ends the session on Discord; any other keeps it resumable.
      if (code === 1000 || code === 1001) session.alive = false;
    });
    socket.on("error", () => socket.terminate());
  }

  return {
    accept,
    dispatch(t, d) {
      for (const session of sessions.values()) dispatchTo(session, t, d);
    },
    drop(code, reason = "fake discord: dropped by test") {
      for (const session of sessions.values()) {
        if (session.socket !== undefined && (code === 1000 || code === 1001)) session.alive = false;
      }
      for (const socket of sockets) {
        if (code === 1006) socket.terminate();
        else socket.close(code, reason);
      }
    },
    invalidateNextResume() {
      rejectNextResume = true;
    },
    identifies: () => [...identifyRecords],
    resumes: () => resumeCount,
    activeConnections: () =>
      [...sessions.values()].filter(
        (session) => session.socket !== undefined && session.socket.readyState === WebSocket.OPEN,
      ).length,
    close() {
      for (const socket of sockets) socket.terminate();
      sockets.clear();
      sessions.clear();
    },
  };
}

function rawText(raw: RawData): string {
  if (Array.isArray(raw)) return Buffer.concat(raw).toString("utf8");
  if (raw instanceof ArrayBuffer) return Buffer.from(raw).toString("utf8");
  return raw.toString("utf8");
}
