import type { Logger } from "@almanac/core";
import { DWClient, type DWClientDownStream, TOPIC_ROBOT } from "dingtalk-stream";
import { systemClock } from "./config.js";
import { type WatchedSocket, watchConnection } from "./connection-watchdog.js";
import { DingTalkError, isDingTalkError } from "./errors.js";
import { openStreamConnection } from "./open-connection.js";
import { robotFrameSchema } from "./robot-payload.js";
import type { DingTalkClock } from "./types.js";

/** A robot CALLBACK frame, already acknowledged. */
export interface RobotFrame {
  readonly messageId: string;
  readonly data: string;
}

/** Settings of {@link DingTalkStreamClient}. */
export interface StreamClientSettings {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly gatewayUrl: string;
  readonly requestTimeoutMs: number;
  /** Keep-alive check and WebSocket ping period. */
  readonly keepAliveIntervalMs: number;
  /** Silence after which the connection is terminated and replaced. */
  readonly keepAliveTimeoutMs: number;
  readonly logger: Logger;
  readonly clock: DingTalkClock;
  /** Called for each robot CALLBACK after its ack went out; must not throw (it is guarded anyway). */
  readonly onRobotFrame: (frame: RobotFrame) => void;
}

/** What the stream connection looks like right now. */
export interface StreamClientState {
  readonly connected: boolean;
  /** Set when DingTalk refused the credentials: the client stops trying. */
  readonly halted?: DingTalkError;
  /** Why the last attempt failed or the connection went away, while not connected. */
  readonly lastProblem?: string;
  /** When the last frame of any kind arrived. */
  readonly lastFrameAt?: number;
}

const MAX_BACKOFF_MS = 30_000;
// The SDK already waits 1 s (its private `reconnectInterval`) before calling `connect()` again.
const SDK_RECONNECT_DELAY_MS = 1_000;
const USER_AGENT = "almanac-dingtalk";

/**
 * `DWClient` from `dingtalk-stream`, made safe to run for weeks: configurable gateway (`getEndpoint` override),
 * one connection attempt at a time with backoff, no retry after a credential refusal, every frame handler guarded
 * (a throw in a socket listener would crash Node 20), robot CALLBACKs acked before anything else runs, and the
 * SDK's debug output routed to our logger. The SDK still writes a few lines with `console` itself
 * (`connect success`, `Disconnecting.`, `ERROR <socket error>`); they cannot be redirected without patching
 * the global console. The SDK's `keepAlive` stays off: in 2.1.5 its heartbeat interval is never cleared when
 * the socket closes, so after a reconnect two intervals race and terminate healthy sockets. Our own watchdog
 * ({@link watchConnection}) runs per socket instead: WebSocket pings, and any frame or pong counts as life.
 */
export class DingTalkStreamClient extends DWClient {
  private readonly settings: StreamClientSettings;
  private readonly stopSignal = new AbortController();
  private stopped = false;
  private inFlight: Promise<void> | undefined;
  private failures = 0;
  private halted: DingTalkError | undefined;
  private lastProblem: string | undefined;
  private lastFrameAt: number | undefined;
  private lastHeardAt = 0;
  // The keep-alive runs on real time, not on the injected clock: that clock lets tests skip retry waits (its
  // `sleep` may return at once), which would turn the watchdog's periodic loop into a busy one. Tests shorten
  // `keepAliveIntervalMs` / `keepAliveTimeoutMs` instead.
  private readonly keepAliveClock = systemClock;

  constructor(settings: StreamClientSettings) {
    super({
      clientId: settings.clientId,
      clientSecret: settings.clientSecret,
      ua: USER_AGENT,
      keepAlive: false,
    });
    this.settings = settings;
    this.config.autoReconnect = true;
    // The SDK's defaults share one `subscriptions` array between instances and subscribe to every EVENT;
    // we want robot messages only.
    this.config.subscriptions = [{ type: "CALLBACK", topic: TOPIC_ROBOT }];
    // `sslopts` (private) is passed to `new WebSocket(url, sslopts)`: bound the handshake like our HTTP calls.
    Object.assign(this, {
      sslopts: { rejectUnauthorized: true, handshakeTimeout: settings.requestTimeoutMs },
    });
    this.registerCallbackListener(TOPIC_ROBOT, (frame: unknown) => this.acceptRobotFrame(frame));
  }

  /** Makes the first connection attempt; later ones run in the background. Never rejects. */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Stops reconnecting and closes the socket once any attempt in flight has settled. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.config.autoReconnect = false;
    this.stopSignal.abort();
    await this.inFlight;
    this.disconnect();
  }

  /** The connection's state for `status()`. */
  state(): StreamClientState {
    return {
      connected: this.connected,
      ...(this.halted === undefined ? {} : { halted: this.halted }),
      ...(this.lastProblem === undefined ? {} : { lastProblem: this.lastProblem }),
      ...(this.lastFrameAt === undefined ? {} : { lastFrameAt: this.lastFrameAt }),
    };
  }

  /** Called by us and by the SDK's reconnect timers; runs at most one attempt at a time. */
  override async connect(): Promise<void> {
    if (this.stopped || this.halted !== undefined || this.inFlight !== undefined || this.connected) return;
    const attempt = this.attempt();
    this.inFlight = attempt;
    try {
      await attempt;
    } finally {
      this.inFlight = undefined;
    }
  }

  private async attempt(): Promise<void> {
    const extra =
      Math.min(MAX_BACKOFF_MS, SDK_RECONNECT_DELAY_MS * 2 ** (this.failures - 1)) - SDK_RECONNECT_DELAY_MS;
    if (this.failures > 1 && extra > 0) await this.settings.clock.sleep(extra, this.stopSignal.signal);
    if (this.stopped) return;
    await super.connect(); // catches everything itself and schedules the next try
  }

  override async getEndpoint(): Promise<this> {
    try {
      const { endpoint, ticket } = await openStreamConnection({
        gatewayUrl: this.settings.gatewayUrl,
        clientId: this.config.clientId,
        clientSecret: this.config.clientSecret,
        ua: USER_AGENT,
        subscriptions: this.config.subscriptions,
        timeoutMs: this.settings.requestTimeoutMs,
      });
      // `dw_url` is private in the SDK's types; `_connect()` opens exactly this URL.
      Object.assign(this, { dw_url: `${endpoint}?ticket=${encodeURIComponent(ticket)}` });
      return this;
    } catch (error) {
      this.noteFailure(error);
      if (isDingTalkError(error, "dingtalk.auth_failed")) {
        this.halted = error;
        this.settings.logger.error({ code: error.code, status: error.status }, error.message);
      }
      throw error;
    }
  }

  override async _connect(): Promise<void> {
    if (this.stopped) throw new DingTalkError("dingtalk.lifecycle", "DingTalk stream client was stopped.");
    try {
      await super._connect();
    } catch (error) {
      this.noteFailure(error);
      throw error;
    }
    this.failures = 0;
    this.lastProblem = undefined;
    this.settings.logger.info({ gateway: this.settings.gatewayUrl }, "DingTalk stream connected");
    this.watch();
  }

  /** Called by the SDK for every pong (and SYSTEM KEEPALIVE frame): the connection is alive. */
  override heartbeat(): void {
    this.lastHeardAt = this.keepAliveClock.now();
  }

  override onDownStream(data: string): void {
    this.lastFrameAt = this.settings.clock.now();
    this.lastHeardAt = this.keepAliveClock.now();
    try {
      super.onDownStream(data);
    } catch (error) {
      // Malformed frame (the SDK parses without a guard) or a throwing listener: log, never crash the process.
      this.settings.logger.warn({ error: describe(error) }, "DingTalk stream frame could not be handled");
    }
  }

  override onSystem(downstream: DWClientDownStream): void {
    const topic = downstream.headers.topic;
    if (topic === "disconnect") {
      this.lastProblem = "the gateway asked to reconnect (SYSTEM disconnect)";
      this.settings.logger.info({ topic }, "DingTalk gateway asked to reconnect");
    }
    super.onSystem(downstream);
  }

  override printDebug(message: object | string): void {
    // Only strings: the SDK also passes whole frames (user text) and its config (the client secret).
    // The connect line holds the one-time ticket: redact it.
    if (typeof message !== "string") return;
    this.settings.logger.debug(
      { source: "dingtalk-stream" },
      message.replace(/ticket=[^&\s]+/g, "ticket=***"),
    );
  }

  /** Starts the watchdog on the socket `_connect()` just opened; it ends with that socket. */
  private watch(): void {
    // `socket` is private in the SDK's types; it is the `ws` WebSocket `_connect()` opened and resolved on.
    const socket = (this as unknown as { socket?: WatchedSocket }).socket;
    if (socket === undefined) return;
    const { logger, keepAliveIntervalMs, keepAliveTimeoutMs } = this.settings;
    const clock = this.keepAliveClock;
    this.lastHeardAt = clock.now();
    socket.once("close", () => {
      if (this.stopped) return;
      this.lastProblem ??= "reconnecting: the stream connection closed";
    });
    watchConnection(socket, {
      clock,
      intervalMs: keepAliveIntervalMs,
      timeoutMs: keepAliveTimeoutMs,
      lastHeardAt: () => this.lastHeardAt,
      stopSignal: this.stopSignal.signal,
      onSilent: (silentMs) => {
        this.lastProblem = `reconnecting: no frame or pong from the gateway for ${silentMs} ms (keep-alive timeout ${keepAliveTimeoutMs} ms)`;
        logger.warn({ silentMs, keepAliveTimeoutMs }, "DingTalk stream went silent; reconnecting");
      },
    }).catch((error: unknown) => {
      logger.error({ error: describe(error) }, "DingTalk keep-alive watchdog failed");
    });
  }

  private acceptRobotFrame(frame: unknown): void {
    try {
      const parsed = robotFrameSchema.safeParse(frame);
      if (!parsed.success) {
        this.settings.logger.warn(
          { reason: parsed.error.message },
          "DingTalk robot frame without messageId/data ignored",
        );
        return;
      }
      const { messageId } = parsed.data.headers;
      // Ack first, before parsing or running anything: DingTalk redelivers what it does not see acked.
      this.socketCallBackResponse(messageId, { success: true });
      this.settings.onRobotFrame({ messageId, data: parsed.data.data });
    } catch (error) {
      this.settings.logger.error({ error: describe(error) }, "DingTalk robot frame handler failed");
    }
  }

  private noteFailure(error: unknown): void {
    this.failures += 1;
    this.lastProblem = describe(error);
    if (!isDingTalkError(error, "dingtalk.auth_failed")) {
      this.settings.logger.warn(
        { failures: this.failures, error: this.lastProblem },
        "DingTalk stream connection failed",
      );
    }
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
