import { createInterface } from "node:readline";
import { linesOf } from "../lines-of.js";
import { type AdminClient, CliError, createAdminClient, resolveTarget } from "./admin-client.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";

/** Options of `almanac chat`. */
export interface ChatOptions {
  /** `--session ID`: the conversation (sent as X-Almanac-Session); default `cli`. */
  readonly session?: string;
}

/** One parsed server-sent event payload of a streamed chat completion. */
type StreamEvent = { readonly delta: string } | { readonly error: string } | { readonly done: true };

function parseEvent(data: string): StreamEvent | undefined {
  if (data === "[DONE]") return { done: true };
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  const body = (typeof parsed === "object" && parsed !== null ? parsed : {}) as {
    error?: { message?: unknown };
    choices?: Array<{ delta?: { content?: unknown } }>;
  };
  if (body.error !== undefined) {
    return { error: typeof body.error.message === "string" ? body.error.message : "the turn failed" };
  }
  const content = body.choices?.[0]?.delta?.content;
  return typeof content === "string" && content !== "" ? { delta: content } : undefined;
}

/** Reads the `data:` lines of an SSE body and yields each event as it arrives. */
async function* readEvents(response: Response): AsyncGenerator<StreamEvent> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let newline = buffer.indexOf("\n");
    while (newline >= 0) {
      const line = buffer.slice(0, newline).replace(/\r$/, "");
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf("\n");
      if (!line.startsWith("data:")) continue;
      const event = parseEvent(line.slice(5).trim());
      if (event !== undefined) yield event;
    }
  }
}

/** What one turn produced: the reply text (partial when it failed) and the error, if any. */
interface TurnResult {
  readonly reply: string;
  readonly error?: string;
}

/**
 * Sends one message and streams the reply. Plain output prints the deltas as they arrive (an error goes to
 * stderr); with `--json` nothing is printed here and the caller prints the turn as one object.
 */
async function ask(
  context: CliContext,
  client: AdminClient,
  session: string,
  text: string,
): Promise<TurnResult> {
  const response = await client.raw(
    "POST",
    "/v1/chat/completions",
    { model: "almanac", stream: true, messages: [{ role: "user", content: text }] },
    // Percent-encoded UTF-8, so a session named in any script (or with "%") reaches the server as typed.
    { "x-almanac-session": encodeURIComponent(session) },
  );
  const { stdout } = context.io;
  const json = context.options.json;
  let reply = "";
  for await (const event of readEvents(response)) {
    if ("delta" in event) {
      if (!json) stdout.write(event.delta);
      reply += event.delta;
    } else if ("error" in event) {
      if (!json && reply !== "") writeLine(stdout);
      return { reply, error: event.error };
    } else {
      break;
    }
  }
  if (!json) writeLine(stdout);
  return { reply };
}

/** The `--json` line of one turn (documented in docs/cli.md). */
function turnJson(session: string, message: string, result: TurnResult): string {
  return JSON.stringify({
    session,
    message,
    reply: result.reply,
    ok: result.error === undefined,
    ...(result.error === undefined ? {} : { error: result.error }),
  });
}

/**
 * `almanac chat`: a terminal conversation with one session. Reads lines from stdin (a prompt on a terminal),
 * answers each, and stops at `/exit` or end of input (Ctrl-D), so it can also be scripted with a pipe.
 * With `--json`, stdout carries only one JSON object per turn (no banner, no prompt).
 */
export async function chatCommand(context: CliContext, options: ChatOptions = {}): Promise<number> {
  const session = options.session ?? "cli";
  const client = createAdminClient(resolveTarget(context), context.fetch);
  const interactive = context.io.stdin.isTTY === true;
  const json = context.options.json;
  // A terminal gets readline (line editing, Ctrl-C); piped input is split on newlines only, so a message holding
  // U+2028 or U+2029 stays one message on Node 24 too (see lines-of.ts).
  const lines = interactive
    ? createInterface({ input: context.io.stdin, terminal: true, crlfDelay: Infinity })
    : undefined;
  const input: AsyncIterable<string> = lines ?? linesOf(context.io.stdin as AsyncIterable<Buffer | string>);
  const prompt = () => {
    if (interactive && !json) context.io.stdout.write("you> ");
  };
  if (interactive) {
    // The banner goes where it cannot break the JSON lines on stdout.
    writeLine(
      json ? context.io.stderr : context.io.stdout,
      `Chatting with session "${session}" at ${client.baseUrl}. /exit or Ctrl-D quits.`,
    );
    lines?.on("SIGINT", () => lines.close());
  }
  let failures = 0;
  try {
    prompt();
    for await (const line of input) {
      const text = line.trim();
      if (text === "/exit" || text === "/quit") break;
      if (text !== "") {
        let result: TurnResult;
        try {
          result = await ask(context, client, session, text);
        } catch (error) {
          // Unreachable server or refused token end the chat; a failed turn does not.
          if (!(error instanceof CliError) || error.exitCode !== EXIT.failure) throw error;
          result = { reply: "", error: error.message };
        }
        if (result.error !== undefined) {
          writeLine(context.io.stderr, `error: ${result.error}`);
          failures += 1;
        }
        if (json) writeLine(context.io.stdout, turnJson(session, text, result));
      }
      prompt();
    }
  } finally {
    lines?.close();
  }
  if (interactive && !json) writeLine(context.io.stdout);
  return failures === 0 ? EXIT.ok : EXIT.failure;
}
