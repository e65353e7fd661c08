/** A chat command the server handles itself instead of sending it to the model. */
export type ChatCommand =
  | { readonly name: "new" }
  | { readonly name: "compact"; readonly focus: string | undefined }
  | { readonly name: "status" }
  | { readonly name: "history" }
  | { readonly name: "help" };

const KNOWN = new Set(["new", "compact", "status", "history", "help"]);

/** Parses `/new`, `/compact [focus]`, `/status`, `/history`, `/help`; anything else (even `/x`) is not a command. */
export function parseCommand(text: string): ChatCommand | undefined {
  const match = /^\/([a-z]+)(?:\s+([\s\S]*))?$/i.exec(text.trim());
  if (!match) return undefined;
  const name = (match[1] ?? "").toLowerCase();
  if (!KNOWN.has(name)) return undefined;
  const rest = match[2]?.trim();
  switch (name) {
    case "compact":
      return { name: "compact", focus: rest === undefined || rest === "" ? undefined : rest };
    case "new":
    case "status":
    case "history":
    case "help":
      return { name };
    default:
      return undefined;
  }
}

/** The `/help` text. */
export const HELP_TEXT = [
  "Commands:",
  "/new — start a fresh conversation (the old one stays in the transcript)",
  "/compact [focus] — summarize older messages now, optionally focusing on a topic",
  "/status — model, context use, compactions, queue",
  "/history — token use per part of the context",
  "/help — this list",
  "Anything else starting with / is sent to the assistant as text.",
].join("\n");
