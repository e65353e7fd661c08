import { z } from "zod";

/** A server name as it appears in tool names and paths: letters, digits, `_` and `-`. */
export const MCP_SERVER_NAME = /^[a-zA-Z0-9_-]{1,40}$/;

/** Whether calls of a tool wait for the owner's approval. */
export const approvalSchema = z.enum(["always", "never"]);

/** Settings of one tool of a server, overriding the server's. */
export const mcpToolSettingsSchema = z.strictObject({
  /** False hides the tool from the model. */
  enabled: z.boolean().optional(),
  approval: approvalSchema.optional(),
  /** True offers the tool in shared chats (groups, non-owners) too. */
  sharedChats: z.boolean().optional(),
});

/**
 * One MCP server, written the way other clients' `mcpServers` entries are: `command`/`args`/`env`/`cwd` for a
 * server Almanac starts (stdio), or `url`/`headers` for one it connects to (Streamable HTTP, with the older
 * HTTP+SSE transport as fallback; `type: "sse"` for SSE only). Values in `env` and `headers` are treated as
 * secrets (never logged or shown).
 */
export const mcpServerSettingsSchema = z
  .strictObject({
    type: z.enum(["stdio", "http", "streamable-http", "sse"]).optional(),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/, error: "expected an http(s) URL" }).optional(),
    headers: z.record(z.string(), z.string()).default({}),
    /** False keeps the server configured but not started. */
    enabled: z.boolean().default(true),
    /** How long one call may take before the model gets a timeout error. */
    timeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
    /** Default for the server's tools: `always` (the owner approves each call) unless a tool says otherwise. */
    approval: approvalSchema.default("always"),
    /** Offer the server's tools in shared chats (groups, non-owners) too; off by default: the tools are the owner's. */
    sharedChats: z.boolean().default(false),
    /** Per tool (by the server's own tool name): enabled, approval, sharedChats. */
    tools: z.record(z.string(), mcpToolSettingsSchema).default({}),
  })
  .superRefine((server, context) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      context.addIssue({
        code: "custom",
        message: "give either command (a server Almanac starts) or url (a server it connects to), not both",
      });
    }
    const wantsStdio = server.type === "stdio";
    if (wantsStdio && server.command === undefined)
      context.addIssue({ code: "custom", message: 'type "stdio" needs a command' });
    if (server.type !== undefined && !wantsStdio && server.url === undefined)
      context.addIssue({ code: "custom", message: `type "${server.type}" needs a url` });
  });

/** One server's settings, defaults applied. */
export type McpServerSettings = z.output<typeof mcpServerSettingsSchema>;

/** The `mcpServers` map: server name → settings. */
export const mcpServersSchema = z.record(
  z.string().regex(MCP_SERVER_NAME, { error: "server names use 1-40 letters, digits, _ or -" }),
  mcpServerSettingsSchema,
);

/** How Almanac talks to a server. */
export type McpTransportKind = "stdio" | "http" | "sse";

/** The transport a server's settings ask for. */
export function transportOf(settings: McpServerSettings): McpTransportKind {
  if (settings.command !== undefined) return "stdio";
  return settings.type === "sse" ? "sse" : "http";
}

/** The approval and shared-chat rule of one tool, the tool's own settings over the server's. */
export function toolRules(
  settings: McpServerSettings,
  tool: string,
): { readonly enabled: boolean; readonly approval: "always" | "never"; readonly sharedChats: boolean } {
  const own = settings.tools[tool] ?? {};
  return {
    enabled: own.enabled ?? true,
    approval: own.approval ?? settings.approval,
    sharedChats: own.sharedChats ?? settings.sharedChats,
  };
}

/** The credentials inside the servers' settings: every `env` and `headers` value, and a password in a `url`. */
export function mcpSecrets(servers: Readonly<Record<string, McpServerSettings>>): string[] {
  return Object.values(servers)
    .flatMap((server) => [
      ...Object.values(server.env),
      ...Object.values(server.headers),
      ...(server.url === undefined ? [] : urlSecrets(server.url)),
    ])
    .filter((value) => value !== "");
}

/** The servers' settings as shown (logs, the admin API, config errors): `env` and `headers` values masked. */
export function redactMcpServers(
  servers: Readonly<Record<string, Partial<McpServerSettings>>>,
): Record<string, unknown> {
  const mask = (map: unknown) =>
    typeof map === "object" && map !== null
      ? Object.fromEntries(Object.keys(map).map((key) => [key, "***"]))
      : "***";
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => {
      if (typeof server !== "object" || server === null) return [name, server];
      const shown: Record<string, unknown> = { ...server };
      if (server.env !== undefined) shown.env = mask(server.env);
      if (server.headers !== undefined) shown.headers = mask(server.headers);
      if (typeof server.url === "string" && urlSecrets(server.url).length > 0) {
        const url = new URL(server.url);
        if (url.password !== "") url.password = "***";
        else url.username = "***";
        shown.url = url.toString();
      }
      return [name, shown];
    }),
  );
}

function urlSecrets(value: string): string[] {
  try {
    const url = new URL(value);
    return [url.password, url.password === "" ? url.username : ""].filter((part) => part !== "");
  } catch {
    return [];
  }
}
