import { z } from "zod";
import { CliError, createAdminClient, resolveTarget } from "./admin-client.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";

const sessionList = z.object({
  sessions: z.array(
    z.looseObject({
      key: z.string(),
      channel: z.string().optional(),
      lastActivity: z.number().optional(),
      messageCount: z.number().optional(),
      contextTokens: z.number().optional(),
      turns: z.number().optional(),
      compactions: z.number().optional(),
    }),
  ),
});

/** Formats rows as left-aligned columns separated by two spaces. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function when(timestamp: number | undefined): string {
  if (timestamp === undefined) return "-";
  return new Date(timestamp).toISOString().replace("T", " ").slice(0, 16);
}

/** `almanac sessions list`: every stored session of the running server, as a table or JSON. */
export async function sessionsCommand(context: CliContext, args: readonly string[]): Promise<number> {
  const [action = "list", ...rest] = args;
  if (action !== "list" || rest.length > 0) {
    writeLine(
      context.io.stderr,
      `unknown sessions command: ${args.join(" ")} (try \`almanac sessions list\`)`,
    );
    return EXIT.usage;
  }
  const client = createAdminClient(resolveTarget(context), context.fetch);
  const body = await client.json("GET", "/api/sessions");
  const parsed = sessionList.safeParse(body);
  if (!parsed.success) {
    throw new CliError("cli.malformed_response", "GET /api/sessions: unexpected answer shape", EXIT.failure);
  }
  const { sessions } = parsed.data;
  if (context.options.json) {
    writeLine(context.io.stdout, JSON.stringify({ sessions }, null, 2));
    return EXIT.ok;
  }
  if (sessions.length === 0) {
    writeLine(context.io.stdout, "no sessions yet");
    return EXIT.ok;
  }
  const sorted = [...sessions].sort((a, b) => (b.lastActivity ?? 0) - (a.lastActivity ?? 0));
  const rows = sorted.map((session) => [
    session.key,
    session.channel ?? session.key.split(":")[0] ?? "",
    String(session.messageCount ?? 0),
    String(session.contextTokens ?? 0),
    String(session.turns ?? 0),
    String(session.compactions ?? 0),
    when(session.lastActivity),
  ]);
  writeLine(
    context.io.stdout,
    formatTable(
      ["KEY", "CHANNEL", "MESSAGES", "TOKENS", "TURNS", "COMPACTIONS", "LAST ACTIVITY (UTC)"],
      rows,
    ),
  );
  return EXIT.ok;
}
