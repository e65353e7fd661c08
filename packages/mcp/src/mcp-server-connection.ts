import type { ToolOutput } from "@almanac/agent";
import { describeError, type Logger } from "@almanac/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type McpServerSettings, type McpTransportKind, transportOf } from "./mcp-settings.js";
import { toToolOutput } from "./tool-result.js";

async function importSdk() {
  const [client, sse, stdio, http, types] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/sse.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]);
  return {
    Client: client.Client,
    SSEClientTransport: sse.SSEClientTransport,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  };
}
type McpSdk = Awaited<ReturnType<typeof importSdk>>;
let sdkLoading: Promise<McpSdk> | undefined;

/**
 * The MCP SDK, loaded when the first server connects: a server with no MCP server configured never carries it
 * (about 25 MB of resident memory at start-up; BENCHMARKS.md, idle RSS).
 */
function loadSdk(): Promise<McpSdk> {
  sdkLoading ??= importSdk();
  return sdkLoading;
}

/** Where a server stands: not started (disabled), connecting, ready, or down (retried with backoff). */
export type McpServerState = "disabled" | "connecting" | "ready" | "down";

/** A tool as the server lists it. */
export interface McpToolInfo {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: unknown;
}

/** What `/api/tools`, `/readyz` and `almanac doctor` show of a server. */
export interface McpServerStatus {
  readonly name: string;
  readonly transport: McpTransportKind;
  readonly state: McpServerState;
  readonly tools: number;
  /** Why it is down, or the last failure (secrets scrubbed). */
  readonly lastError?: string;
  /** Times it was (re)started after the first. */
  readonly restarts: number;
  /** The process id of a running stdio server. */
  readonly pid?: number;
  /** When the state last changed (ms since the epoch). */
  readonly since: number;
}

/** Options of an {@link McpServerConnection}. */
export interface McpConnectionOptions {
  readonly logger: Logger;
  /** Sent as the client's name and version in the MCP handshake. */
  readonly clientVersion: string;
  /** Told whenever the server's state or tool list changed. */
  readonly onChange: () => void;
  /** First wait before a restart, doubled each time up to `maxBackoffMs`. Default 1 s. */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  /** How long connecting (start, handshake, first tool list) may take. Default 30 s. */
  readonly connectTimeoutMs?: number;
  readonly clock?: () => number;
}

/** Lines of a stdio server's stderr kept for the status (its last words when it dies). */
const STDERR_LINES = 5;

/**
 * One configured MCP server: connects (starting the process for stdio), lists its tools at start and again on
 * `notifications/tools/list_changed`, answers calls with a timeout, and restarts with backoff when it dies or
 * cannot be reached. Never throws out of its own work: a server that fails leaves Almanac running and says why
 * in its status.
 */
export class McpServerConnection {
  readonly name: string;
  readonly settings: McpServerSettings;
  readonly #options: McpConnectionOptions;
  readonly #logger: Logger;
  readonly #clock: () => number;
  #state: McpServerState;
  #since: number;
  #client: Client | undefined;
  #tools: readonly McpToolInfo[] = [];
  #lastError: string | undefined;
  #restarts = 0;
  #attempt = 0;
  #retry: NodeJS.Timeout | undefined;
  #stopped = false;
  #stderr: string[] = [];
  #process: StdioClientTransport | undefined;
  /** Settles when the first connection attempt has (whatever its outcome). */
  #firstAttempt: Promise<void> | undefined;

  constructor(name: string, settings: McpServerSettings, options: McpConnectionOptions) {
    this.name = name;
    this.settings = settings;
    this.#options = options;
    this.#logger = options.logger.child({ component: "mcp", server: name });
    this.#clock = options.clock ?? Date.now;
    this.#state = settings.enabled ? "connecting" : "disabled";
    this.#since = this.#clock();
  }

  /** The process id of a running stdio server. */
  get pid(): number | undefined {
    return this.#process?.pid ?? undefined;
  }

  get state(): McpServerState {
    return this.#state;
  }

  /** The tools as last listed (none unless ready). */
  get tools(): readonly McpToolInfo[] {
    return this.#state === "ready" ? this.#tools : [];
  }

  status(): McpServerStatus {
    return {
      name: this.name,
      transport: transportOf(this.settings),
      state: this.#state,
      tools: this.tools.length,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
      restarts: this.#restarts,
      since: this.#since,
      ...(this.#state === "ready" && this.pid !== undefined ? { pid: this.pid } : {}),
    };
  }

  /** Starts connecting in the background; resolves once the first attempt settled (ready or down). */
  start(): Promise<void> {
    if (!this.settings.enabled) return Promise.resolve();
    this.#firstAttempt ??= this.#connect();
    return this.#firstAttempt;
  }

  /** Closes the connection (and the process of a stdio server); no restart follows. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => {});
  }

  /** Calls one of the server's tools by its own name; every failure comes back as a tool error the model reads. */
  async call(
    tool: string,
    args: Readonly<Record<string, unknown>>,
    signal: AbortSignal,
  ): Promise<ToolOutput> {
    const client = this.#client;
    const what = `MCP server "${this.name}"`;
    if (client === undefined || this.#state !== "ready") {
      const why = this.#lastError === undefined ? "" : ` (${this.#lastError})`;
      return {
        content: `${what} is not available right now${why}; Almanac keeps trying to reconnect. Tell the person, or try again later.`,
        isError: true,
      };
    }
    try {
      const result = await client.callTool({ name: tool, arguments: { ...args } }, undefined, {
        timeout: this.settings.timeoutMs,
        signal,
      });
      return toToolOutput(result, `${what}'s tool ${tool}`);
    } catch (error) {
      const { ErrorCode, McpError } = await loadSdk();
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return {
          content: `${what}'s tool ${tool} did not answer within ${this.settings.timeoutMs} ms and was abandoned.`,
          isError: true,
        };
      }
      if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
        return {
          content: `${what} stopped during the call to ${tool}; it is being restarted. The call may or may not have taken effect.`,
          isError: true,
        };
      }
      return {
        content: `${what}'s tool ${tool} failed: ${this.#scrub(describeError(error))}`,
        isError: true,
      };
    }
  }

  #setState(state: McpServerState, lastError?: string): void {
    if (lastError !== undefined) this.#lastError = this.#scrub(lastError);
    if (state === this.#state && lastError === undefined) return;
    this.#state = state;
    this.#since = this.#clock();
    this.#options.onChange();
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    this.#setState("connecting");
    const sdk = await loadSdk();
    const { Client, ToolListChangedNotificationSchema } = sdk;
    const client = new Client(
      { name: "almanac", version: this.#options.clientVersion },
      { capabilities: {} },
    );
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      if (this.#client === client)
        await this.#listTools(client).catch((error: unknown) => this.#failed(client, error));
    });
    try {
      await this.#open(sdk, client);
      await this.#listTools(client);
    } catch (error) {
      await client.close().catch(() => {});
      this.#down(`could not connect: ${describeError(error)}${this.#lastWords()}`);
      return;
    }
    if (this.#stopped) {
      await client.close().catch(() => {});
      return;
    }
    this.#client = client;
    this.#attempt = 0;
    client.onclose = () => {
      if (this.#client !== client || this.#stopped) return;
      this.#client = undefined;
      this.#down(`the connection closed${this.#lastWords()}`);
    };
    this.#logger.info(
      { tools: this.#tools.length, transport: transportOf(this.settings) },
      "MCP server ready",
    );
    this.#setState("ready");
  }

  /** Connects over the server's transport; `http` tries Streamable HTTP first, then the older HTTP+SSE. */
  async #open(sdk: McpSdk, client: Client): Promise<void> {
    const { SSEClientTransport, StreamableHTTPClientTransport } = sdk;
    const timeout = this.#options.connectTimeoutMs ?? 30_000;
    const kind = transportOf(this.settings);
    if (kind === "stdio") {
      await client.connect(this.#stdioTransport(sdk), { timeout });
      return;
    }
    const url = new URL(this.settings.url as string);
    const requestInit = { headers: { ...this.settings.headers } };
    if (kind === "http") {
      try {
        await client.connect(new StreamableHTTPClientTransport(url, { requestInit }) as Transport, {
          timeout,
        });
        return;
      } catch (error) {
        this.#logger.debug(
          { error: this.#scrub(describeError(error)) },
          "Streamable HTTP failed; trying HTTP+SSE",
        );
      }
    }
    const headers = this.settings.headers;
    const sse = new SSEClientTransport(url, {
      requestInit,
      eventSourceInit: {
        fetch: (input, init) =>
          fetch(input, { ...init, headers: { ...(init?.headers as object), ...headers } }),
      },
    });
    await client.connect(sse as Transport, { timeout });
  }

  #stdioTransport(sdk: McpSdk): Transport {
    const transport = new sdk.StdioClientTransport({
      command: this.settings.command as string,
      args: [...this.settings.args],
      // The SDK adds only the basic variables (PATH, HOME, …) to these: Almanac's own secrets never reach the server.
      env: { ...this.settings.env },
      ...(this.settings.cwd === undefined ? {} : { cwd: this.settings.cwd }),
      stderr: "pipe",
    });
    this.#stderr = [];
    this.#process = transport;
    transport.stderr?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.trim() === "") continue;
        this.#stderr.push(line.slice(0, 300));
        if (this.#stderr.length > STDERR_LINES) this.#stderr.shift();
      }
    });
    return transport;
  }

  async #listTools(client: Client): Promise<void> {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      for (const tool of page.tools)
        tools.push({ name: tool.name, description: tool.description ?? "", inputSchema: tool.inputSchema });
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    this.#tools = tools;
    if (this.#client === client) {
      this.#logger.info({ tools: tools.length }, "MCP server's tool list changed");
      this.#options.onChange();
    }
  }

  #failed(client: Client, error: unknown): void {
    this.#logger.warn({ error: this.#scrub(describeError(error)) }, "MCP server failed");
    void client.close().catch(() => {});
  }

  /** Marks the server down and schedules the next attempt (1 s, 2 s, 4 s, … up to the maximum). */
  #down(reason: string): void {
    if (this.#stopped) return;
    const base = this.#options.backoffMs ?? 1_000;
    const delay = Math.min(base * 2 ** this.#attempt, this.#options.maxBackoffMs ?? 60_000);
    this.#attempt += 1;
    this.#logger.warn({ retryInMs: delay, reason: this.#scrub(reason) }, "MCP server down; will retry");
    this.#setState("down", reason);
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      this.#restarts += 1;
      void this.#connect();
    }, delay);
    this.#retry.unref();
  }

  /** The stdio server's last stderr lines, for the status of a process that died. */
  #lastWords(): string {
    return this.#stderr.length === 0 ? "" : `; its last output: ${this.#stderr.join(" | ")}`;
  }

  /** Removes the values of `env` and `headers` (credentials) from a text meant for logs and the status. */
  #scrub(text: string): string {
    let scrubbed = text;
    for (const secret of [...Object.values(this.settings.env), ...Object.values(this.settings.headers)]) {
      if (secret.length >= 4) scrubbed = scrubbed.replaceAll(secret, "***");
    }
    return scrubbed;
  }
}
