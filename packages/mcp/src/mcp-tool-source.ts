import type { JsonSchemaTool, ToolScope, ToolSource } from "@almanac/agent";
import type { Logger } from "@almanac/core";
import { McpServerConnection, type McpServerStatus } from "./mcp-server-connection.js";
import { type McpServerSettings, toolRules } from "./mcp-settings.js";
import { toProviderSchema } from "./provider-schema.js";
import { namespacedToolName } from "./tool-names.js";

/** Options of {@link McpToolSource}. */
export interface McpToolSourceOptions {
  /** The configured servers by name (the `mcpServers` map, validated). */
  readonly servers: Readonly<Record<string, McpServerSettings>>;
  readonly logger: Logger;
  readonly clientVersion: string;
  /**
   * Caps a tool's output before it reaches the context (the server sizes it from the model's window, as for every
   * tool output). Default: unchanged.
   */
  readonly limitOutput?: (text: string) => string;
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  readonly connectTimeoutMs?: number;
  readonly clock?: () => number;
}

/** One tool of one server as `GET /api/tools` lists it. */
export interface McpToolListing {
  readonly name: string;
  readonly server: string;
  readonly tool: string;
  readonly description: string;
  readonly approval: "always" | "never";
  readonly sharedChats: boolean;
  readonly enabled: boolean;
}

/**
 * The tools of every configured MCP server, as one {@link ToolSource}: the owner's by default, in shared chats only
 * where the operator allowed it (per server or per tool); each offered under `mcp__<server>__<tool>`, its schema
 * made acceptable to providers, its calls waiting for the owner's approval unless the settings say `never`. The
 * tools are listed when a server connects and again when it says its list changed; a turn reads them from here
 * (never from the network). `revision` changes whenever they do.
 */
export class McpToolSource implements ToolSource {
  readonly name = "mcp";
  readonly #options: McpToolSourceOptions;
  readonly #connections: readonly McpServerConnection[];
  #revision = 0;
  /** The tools per scope kind at `#cachedAt`: rebuilt only when a server's state or tool list changed. */
  readonly #cache = new Map<ToolScope["kind"], readonly JsonSchemaTool[]>();
  #cachedAt = -1;

  constructor(options: McpToolSourceOptions) {
    this.#options = options;
    this.#connections = Object.entries(options.servers).map(
      ([name, settings]) =>
        new McpServerConnection(name, settings, {
          logger: options.logger,
          clientVersion: options.clientVersion,
          onChange: () => {
            this.#revision += 1;
          },
          ...(options.backoffMs === undefined ? {} : { backoffMs: options.backoffMs }),
          ...(options.maxBackoffMs === undefined ? {} : { maxBackoffMs: options.maxBackoffMs }),
          ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
          ...(options.clock === undefined ? {} : { clock: options.clock }),
        }),
    );
  }

  /** Changes whenever a server's state or tool list changes (so callers caching tool specs know to rebuild). */
  get revision(): number {
    return this.#revision;
  }

  /** Starts every enabled server in the background; resolves once each has had its first attempt. */
  async start(): Promise<void> {
    await Promise.all(this.#connections.map((connection) => connection.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#connections.map((connection) => connection.stop()));
  }

  statuses(): McpServerStatus[] {
    return this.#connections.map((connection) => connection.status());
  }

  /** Every tool of every ready server, with its rules (for the admin API and the console). */
  listings(): McpToolListing[] {
    return this.#connections.flatMap((connection) =>
      connection.tools.map((tool) => {
        const rules = toolRules(connection.settings, tool.name);
        return {
          name: namespacedToolName(connection.name, tool.name),
          server: connection.name,
          tool: tool.name,
          description: tool.description,
          approval: rules.approval,
          sharedChats: rules.sharedChats,
          enabled: rules.enabled,
        };
      }),
    );
  }

  tools(scope: ToolScope): readonly JsonSchemaTool[] {
    if (this.#cachedAt !== this.#revision) {
      this.#cache.clear();
      this.#cachedAt = this.#revision;
    }
    let tools = this.#cache.get(scope.kind);
    if (tools === undefined) {
      tools = Object.freeze(this.#connections.flatMap((connection) => this.#toolsOf(connection, scope)));
      this.#cache.set(scope.kind, tools);
    }
    return tools;
  }

  #toolsOf(connection: McpServerConnection, scope: ToolScope): JsonSchemaTool[] {
    const limit = this.#options.limitOutput ?? ((text: string) => text);
    const seen = new Set<string>();
    const tools: JsonSchemaTool[] = [];
    for (const tool of connection.tools) {
      const rules = toolRules(connection.settings, tool.name);
      if (!rules.enabled || (scope.kind === "shared" && !rules.sharedChats)) continue;
      const name = namespacedToolName(connection.name, tool.name);
      // A server listing one name twice: the first one wins (a duplicate would make every turn fail).
      if (seen.has(name)) continue;
      seen.add(name);
      tools.push({
        name,
        description: `${tool.description || tool.name} (tool "${tool.name}" of MCP server "${connection.name}")`,
        inputSchema: toProviderSchema(tool.inputSchema),
        // The server's own timeout answers first, with a clearer message than the toolkit's.
        timeoutMs: connection.settings.timeoutMs + 2_000,
        requiresApproval: rules.approval === "always",
        execute: async (args, context) => {
          const output = await connection.call(tool.name, args, context.signal);
          return typeof output === "string"
            ? limit(output)
            : { content: limit(output.content), ...(output.isError ? { isError: true } : {}) };
        },
      });
    }
    return tools;
  }
}
