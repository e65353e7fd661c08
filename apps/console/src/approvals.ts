// Approvals of tool calls as the console reads and shows them (the Tools page and the approval dialog).
import { ApiError } from "./api.js";
import { asArray, asRecord, num, str } from "./read.js";
import { describeError } from "./ui.js";

/** Where an approval stands (the server's `ApprovalState`). */
export type ApprovalState = "pending" | "approved" | "denied" | "expired" | "closed";

const STATES: readonly ApprovalState[] = ["pending", "approved", "denied", "expired", "closed"];

/** One tool call that waits, or waited, for the owner (`GET /api/approvals`, `approval-changed` events). */
export interface Approval {
  readonly id: string;
  readonly sessionKey: string;
  readonly tool: string;
  /** The arguments exactly as the model sent them (JSON text, untrusted). */
  readonly arguments: string;
  readonly requestedAt: number;
  readonly expiresAt: number;
  readonly state: ApprovalState;
  readonly decidedAt?: number;
  readonly decidedBy?: string;
  readonly reason?: string;
}

/** One approval of untrusted JSON, or undefined when it lacks what the console needs to show and answer it. */
export function readApproval(value: unknown): Approval | undefined {
  const record = asRecord(value);
  const id = str(record.id);
  const state = STATES.find((known) => known === record.state);
  const requestedAt = num(record.requestedAt);
  const expiresAt = num(record.expiresAt);
  if (id === "" || state === undefined || requestedAt === undefined || expiresAt === undefined)
    return undefined;
  const decidedAt = num(record.decidedAt);
  return {
    id,
    sessionKey: str(record.sessionKey),
    tool: str(record.tool),
    arguments: str(record.arguments),
    requestedAt,
    expiresAt,
    state,
    ...(decidedAt === undefined ? {} : { decidedAt }),
    ...(typeof record.decidedBy === "string" ? { decidedBy: record.decidedBy } : {}),
    ...(typeof record.reason === "string" ? { reason: record.reason } : {}),
  };
}

/** The approvals of a JSON array that can be read (see {@link readApproval}). */
export function readApprovals(value: unknown): Approval[] {
  return asArray(value).flatMap((item) => readApproval(item) ?? []);
}

/**
 * The pending approvals after `approval` changed: added or replaced while it is pending, dropped once it is
 * settled. Oldest first, as the server lists them (the one that has waited longest is asked first).
 */
export function withApproval(pending: readonly Approval[], approval: Approval): Approval[] {
  const others = pending.filter((known) => known.id !== approval.id);
  if (approval.state !== "pending") return others;
  return [...others, approval].sort((a, b) => a.requestedAt - b.requestedAt);
}

/** The next character of `text` at or after `from` that is not JSON whitespace. */
function nextSignificant(text: string, from: number): number {
  let index = from;
  while (index < text.length && " \t\n\r".includes(text.charAt(index))) index += 1;
  return index;
}

/**
 * Tool-call arguments laid out for reading, two spaces a level, whole. Valid JSON is re-indented token by token,
 * never parsed and printed again: a number too long for a double, an escape or a repeated key appears exactly as
 * the model sent it (the owner approves what the tool will receive). Anything else is shown as sent.
 */
export function prettyArguments(text: string): string {
  try {
    JSON.parse(text);
  } catch {
    return text;
  }
  let out = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  const newline = () => `\n${"  ".repeat(depth)}`;
  for (let index = 0; index < text.length; index += 1) {
    const char = text.charAt(index);
    if (inString) {
      out += char;
      if (escaped) escaped = false;
      else if (char === "\\") escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') {
      inString = true;
      out += char;
    } else if (char === "{" || char === "[") {
      const after = nextSignificant(text, index + 1);
      const close = char === "{" ? "}" : "]";
      if (text.charAt(after) === close) {
        out += `${char}${close}`;
        index = after;
      } else {
        depth += 1;
        out += `${char}${newline()}`;
      }
    } else if (char === "}" || char === "]") {
      depth -= 1;
      out += `${newline()}${char}`;
    } else if (char === ",") out += `,${newline()}`;
    else if (char === ":") out += ": ";
    else if (!" \t\n\r".includes(char)) out += char;
  }
  return out;
}

/**
 * The time an approval has left, counted down to the second: `9:58 left`, `1:02:03 left`, and `expired` from
 * the moment none is left. Rounded up, so `0:01 left` shows until the last second has passed.
 */
export function formatTimeLeft(expiresAt: number, now: number): string {
  const seconds = Math.ceil((expiresAt - now) / 1000);
  if (seconds <= 0) return "expired";
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = String(seconds % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${rest} left` : `${minutes}:${rest} left`;
}

/**
 * The time `approval` has left at `now` (see {@link formatTimeLeft}), never more than the whole wait: a clock
 * that ticked just before the approval arrived, or a browser clock behind the server's, would count from before
 * it was asked.
 */
export function timeLeftOf(approval: Approval, now: number): string {
  return formatTimeLeft(approval.expiresAt, Math.max(now, approval.requestedAt));
}

/** Where a tool is offered, in words: the owner's conversations, shared chats (groups, other people), or both. */
export function whereOffered(scopes: readonly string[]): string {
  const owner = scopes.includes("owner");
  const shared = scopes.includes("shared");
  if (owner && shared) return "owner and shared chats";
  if (owner) return "owner only";
  if (shared) return "shared chats only";
  return "not offered";
}

/** What answering an approval came to, as the page says it. */
export interface DecisionOutcome {
  /** `decided`: this answer settled it; `settled`: it was already answered or expired; `failed`: anything else. */
  readonly kind: "decided" | "settled" | "failed";
  readonly message: string;
}

/** The outcome of a decision the server accepted (its answer is the settled record). */
export function decidedOutcome(answer: unknown, fallback: Approval): DecisionOutcome {
  const approval = readApproval(answer) ?? fallback;
  const message =
    approval.state === "approved"
      ? `Approved ${approval.id}: ${approval.tool} runs now.`
      : approval.state === "denied"
        ? `Denied ${approval.id}: ${approval.tool} will not run.`
        : `Approval ${approval.id} is ${approval.state}.`;
  return { kind: "decided", message };
}

/** The outcome of a decision the server refused, or that never reached it. */
export function refusedOutcome(error: unknown): DecisionOutcome {
  if (error instanceof ApiError && error.code === "approval.not_pending")
    return { kind: "settled", message: `Already answered or expired: ${error.message}` };
  if (error instanceof ApiError && error.code === "approval.not_found")
    return { kind: "settled", message: `No such approval: ${error.message}` };
  return { kind: "failed", message: describeError(error) };
}
