import { z } from "zod";
import { CliError, createAdminClient, resolveTarget } from "./admin-client.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";
import { formatTable } from "./sessions-command.js";

const toolList = z.object({
  tools: z.array(
    z.looseObject({
      name: z.string(),
      source: z.string(),
      description: z.string(),
      requiresApproval: z.boolean(),
      scopes: z.array(z.string()),
    }),
  ),
  mcpServers: z.array(
    z.looseObject({
      name: z.string(),
      transport: z.string(),
      state: z.string(),
      tools: z.number(),
      lastError: z.string().optional(),
    }),
  ),
});

/** `almanac tools list`: the running server's tools (source, approval, where offered) and its MCP servers. */
export async function toolsCommand(context: CliContext, args: readonly string[]): Promise<number> {
  const [action = "list", ...rest] = args;
  if (action !== "list" || rest.length > 0) {
    writeLine(context.io.stderr, `unknown tools command: ${args.join(" ")} (try \`almanac tools list\`)`);
    return EXIT.usage;
  }
  const client = createAdminClient(resolveTarget(context), context.fetch);
  const parsed = toolList.safeParse(await client.json("GET", "/api/tools"));
  if (!parsed.success)
    throw new CliError("cli.malformed_response", "GET /api/tools: unexpected answer shape", EXIT.failure);
  const { tools, mcpServers } = parsed.data;
  if (context.options.json) {
    writeLine(context.io.stdout, JSON.stringify({ tools, mcpServers }, null, 2));
    return EXIT.ok;
  }
  const rows = tools.map((tool) => [
    tool.name,
    tool.source,
    tool.requiresApproval ? "asks owner" : "-",
    tool.scopes.includes("shared") ? "owner + shared chats" : "owner",
  ]);
  writeLine(context.io.stdout, formatTable(["TOOL", "SOURCE", "APPROVAL", "OFFERED TO"], rows));
  if (mcpServers.length > 0) {
    const servers = mcpServers.map((server) => [
      server.name,
      server.transport,
      server.state,
      String(server.tools),
      server.lastError ?? "",
    ]);
    writeLine(
      context.io.stdout,
      `\n${formatTable(["MCP SERVER", "TRANSPORT", "STATE", "TOOLS", "LAST ERROR"], servers)}`,
    );
  }
  return EXIT.ok;
}
