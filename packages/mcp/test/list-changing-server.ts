// A small stdio MCP server for tests: calling `add_tool` registers a tool `extra`, and the SDK's server tells
// clients its tool list changed (notifications/tools/list_changed).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "list-changing", version: "1.0.0" });
server.registerTool("add_tool", { description: "Adds the tool `extra`." }, async () => {
  server.registerTool("extra", { description: "Appears later." }, async () => ({
    content: [{ type: "text", text: "extra ran" }],
  }));
  return { content: [{ type: "text", text: "added" }] };
});
await server.connect(new StdioServerTransport());
