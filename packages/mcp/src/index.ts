// Tools from Model Context Protocol servers (stdio and Streamable HTTP, HTTP+SSE fallback), on the official SDK.
export {
  McpServerConnection,
  type McpServerState,
  type McpServerStatus,
  type McpToolInfo,
} from "./mcp-server-connection.js";
export {
  MCP_SERVER_NAME,
  type McpServerSettings,
  type McpTransportKind,
  mcpSecrets,
  mcpServerSettingsSchema,
  mcpServersSchema,
  redactMcpServers,
  toolRules,
  transportOf,
} from "./mcp-settings.js";
export { type McpToolListing, McpToolSource, type McpToolSourceOptions } from "./mcp-tool-source.js";
export { toProviderSchema } from "./provider-schema.js";
export { namespacedToolName } from "./tool-names.js";
export { toToolOutput } from "./tool-result.js";
