import { randomInt } from "node:crypto";
import { readFile } from "node:fs/promises";
import { describeError, isErrnoCode, type Logger, silentLogger } from "@almanac/core";
import { writeFileDurably } from "@almanac/durable-write";
import { z } from "zod";

/** Where an approval stands. `closed`: it could not be answered (the server restarted or stopped, the turn ended). */
export type ApprovalState = "pending" | "approved" | "denied" | "expired" | "closed";

/** One tool call that waited, or waits, for the owner. */
export interface ApprovalRecord {
  /** Short and easy to type in a chat (`approve K7QD`). */
  readonly id: string;
  readonly sessionKey: string;
  /** The tool's name as the model called it. */
  readonly tool: string;
  /** The arguments exactly as the model sent them (shown whole, never a truncated preview). */
  readonly arguments: string;
  readonly callId: string;
  /** ms since the epoch. */
  readonly requestedAt: number;
  readonly expiresAt: number;
  readonly state: ApprovalState;
  readonly decidedAt?: number;
  /** Who answered: `console`, `api`, or `<channel>:<user id>`. */
  readonly decidedBy?: string;
  /** Why a closed approval was closed. */
  readonly reason?: string;
}

/** The outcome of a request: run the call, or the tool result that says why it was not run. */
export interface ApprovalDecision {
  readonly approved: boolean;
  readonly record: ApprovalRecord;
  /** For a refusal: what the model reads as the call's result. */
  readonly text: string;
}

/** Options of {@link ApprovalCenter}. */
export interface ApprovalCenterOptions {
  /** The journal of approvals (recent ones and those pending), rewritten durably on every change. */
  readonly file: string;
  /** How long an approval waits before it counts as denied. Default 10 minutes. */
  readonly timeoutMs?: number;
  readonly clock?: () => number;
  readonly logger?: Logger;
  /** Told of every new or changed approval (the server publishes it, and asks in the chat). */
  readonly onChange?: (record: ApprovalRecord) => void;
}

const recordSchema = z.object({
  id: z.string(),
  sessionKey: z.string(),
  tool: z.string(),
  arguments: z.string(),
  callId: z.string(),
  requestedAt: z.number(),
  expiresAt: z.number(),
  state: z.enum(["pending", "approved", "denied", "expired", "closed"]),
  decidedAt: z.number().optional(),
  decidedBy: z.string().optional(),
  reason: z.string().optional(),
});
const journalSchema = z.object({ version: z.literal(1), approvals: z.array(recordSchema) });

/** Records kept in the journal besides the pending ones (the history `GET /api/approvals` shows). */
const KEPT_RECORDS = 200;
/** Letters that cannot be mistaken for one another when typed from a screen. */
const ID_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

interface Waiter {
  readonly resolve: (decision: ApprovalDecision) => void;
  readonly timer: NodeJS.Timeout;
  readonly onAbort: () => void;
  readonly signal: AbortSignal | undefined;
}

/**
 * The owner's approval of tool calls. A call that needs it is recorded as pending (durably, before anyone is
 * asked), the turn waits, and the owner answers from wherever they are (the chat, the console, the API). No
 * answer within the timeout counts as a denial; a turn that ends meanwhile closes its approval; approvals pending
 * when the server stopped are closed when it starts again. Nothing here decides who may answer: the server
 * checks that the one answering is the owner.
 */
export class ApprovalCenter {
  readonly #options: ApprovalCenterOptions;
  readonly #clock: () => number;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  #records: ApprovalRecord[] = [];
  readonly #waiters = new Map<string, Waiter>();
  #writes: Promise<void> = Promise.resolve();
  #closed = false;
  /** Approvals being recorded: nobody is shown or may answer one before it is on disk. */
  readonly #unsaved = new Set<string>();

  constructor(options: ApprovalCenterOptions) {
    this.#options = options;
    this.#clock = options.clock ?? Date.now;
    this.#logger = (options.logger ?? silentLogger).child({ component: "approvals" });
    this.#timeoutMs = options.timeoutMs ?? 10 * 60_000;
  }

  /** How long an approval waits, in milliseconds. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /**
   * Reads the journal and closes what was pending when the server last stopped (nobody can answer those: their
   * turns are gone). Returns the approvals it closed. A damaged journal is moved aside, never guessed at.
   */
  async open(): Promise<ApprovalRecord[]> {
    let text: string | undefined;
    try {
      text = await readFile(this.#options.file, "utf8");
    } catch (error) {
      if (!isErrnoCode(error, "ENOENT")) throw error;
    }
    if (text !== undefined) {
      const parsed = journalSchema.safeParse(safeJson(text));
      if (parsed.success) this.#records = parsed.data.approvals;
      else
        this.#logger.warn(
          { file: this.#options.file },
          "the approvals journal is damaged; starting a new one",
        );
    }
    const closed: ApprovalRecord[] = [];
    this.#records = this.#records.map((record) => {
      if (record.state !== "pending") return record;
      const done = this.#finish(record, "closed", {
        reason: "the server restarted before the owner answered",
      });
      closed.push(done);
      return done;
    });
    if (closed.length > 0) {
      this.#logger.info({ closed: closed.length }, "closed approvals left pending by the previous run");
      await this.#save();
    }
    return closed;
  }

  /** Pending approvals, oldest first. */
  pending(): ApprovalRecord[] {
    return this.#records.filter((record) => record.state === "pending" && !this.#unsaved.has(record.id));
  }

  /** Recent approvals, newest first (pending ones included). */
  recent(limit = 50): ApprovalRecord[] {
    return [...this.#records]
      .filter((record) => !this.#unsaved.has(record.id) || record.state !== "pending")
      .reverse()
      .slice(0, limit);
  }

  get(id: string): ApprovalRecord | undefined {
    const wanted = id.trim().toUpperCase();
    // Ids are unique among pending approvals; an old one may share an id with a newer: the newest wins.
    return this.#records.findLast(
      (record) => record.id === wanted && (record.state !== "pending" || !this.#unsaved.has(record.id)),
    );
  }

  /**
   * Asks for the owner's approval of one call and waits for the answer (or the timeout, or `signal`). The record
   * is durable before anyone is told, so a crash leaves it to be closed on the next start.
   */
  async request(
    call: {
      readonly sessionKey: string;
      readonly tool: string;
      readonly arguments: string;
      readonly callId: string;
    },
    signal?: AbortSignal,
    /** Called once the approval is recorded: ask the owner here (in the conversation, say). */
    onAsked?: (record: ApprovalRecord) => void,
  ): Promise<ApprovalDecision> {
    const now = this.#clock();
    if (this.#closed) {
      const record = this.#finish(
        { id: "----", ...call, requestedAt: now, expiresAt: now, state: "pending" },
        "closed",
        { reason: "the server is stopping" },
      );
      return { approved: false, record, text: refusalText(record, this.#timeoutMs) };
    }
    const record: ApprovalRecord = {
      id: this.#newId(),
      ...call,
      requestedAt: now,
      expiresAt: now + this.#timeoutMs,
      state: "pending",
    };
    this.#records.push(record);
    this.#unsaved.add(record.id);
    try {
      await this.#save();
      this.#unsaved.delete(record.id);
    } catch (error) {
      this.#unsaved.delete(record.id);
      this.#records = this.#records.filter((kept) => kept !== record);
      const failed = this.#finish(record, "closed", {
        reason: `the approval could not be recorded (${describeError(error)})`,
      });
      return { approved: false, record: failed, text: refusalText(failed, this.#timeoutMs) };
    }
    // Settled while it was being written (the server began to stop): answered at once.
    const settled = this.get(record.id);
    if (settled !== undefined && settled.state !== "pending")
      return {
        approved: settled.state === "approved",
        record: settled,
        text: refusalText(settled, this.#timeoutMs),
      };
    const decided = new Promise<ApprovalDecision>((resolve) => {
      const timer = setTimeout(() => this.#settle(record.id, "expired", {}), this.#timeoutMs);
      timer.unref();
      const onAbort = () =>
        this.#settle(record.id, "closed", { reason: "the turn ended before the owner answered" });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.set(record.id, { resolve, timer, onAbort, signal });
    });
    if (signal?.aborted)
      this.#settle(record.id, "closed", { reason: "the turn ended before the owner answered" });
    this.#options.onChange?.(record);
    if (this.get(record.id)?.state === "pending") onAsked?.(record);
    this.#logger.info(
      { id: record.id, sessionKey: record.sessionKey, tool: record.tool },
      "approval requested",
    );
    return decided;
  }

  /**
   * The owner's answer to a pending approval: the updated record, or undefined when there is no such pending
   * approval (already answered, expired, or never asked).
   */
  decide(id: string, approve: boolean, by: string): ApprovalRecord | undefined {
    const record = this.get(id);
    if (record === undefined || record.state !== "pending") return undefined;
    return this.#settle(record.id, approve ? "approved" : "denied", { decidedBy: by });
  }

  /** Closes every pending approval (the server is stopping); their turns get a refusal. */
  async close(): Promise<void> {
    this.#closed = true;
    // Every pending one, those still being recorded too: their turns are answered at once.
    for (const record of this.#records.filter((entry) => entry.state === "pending"))
      this.#settle(record.id, "closed", { reason: "the server stopped" });
    await this.#writes.catch(() => {});
  }

  #settle(
    id: string,
    state: Exclude<ApprovalState, "pending">,
    details: { readonly decidedBy?: string; readonly reason?: string },
  ): ApprovalRecord | undefined {
    const index = this.#records.findIndex((record) => record.id === id && record.state === "pending");
    const current = this.#records[index];
    if (current === undefined || current.state !== "pending") return undefined;
    const done = this.#finish(current, state, details);
    this.#records[index] = done;
    // A failed write is logged by #save; the decision stands for the waiting turn either way.
    this.#save().catch(() => {});
    const waiter = this.#waiters.get(id);
    this.#waiters.delete(id);
    if (waiter !== undefined) {
      clearTimeout(waiter.timer);
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve({
        approved: state === "approved",
        record: done,
        text: refusalText(done, this.#timeoutMs),
      });
    }
    this.#logger.info({ id, state, by: details.decidedBy }, "approval settled");
    this.#options.onChange?.(done);
    return done;
  }

  #finish(
    record: ApprovalRecord,
    state: Exclude<ApprovalState, "pending">,
    details: { readonly decidedBy?: string; readonly reason?: string },
  ): ApprovalRecord {
    return {
      ...record,
      state,
      decidedAt: this.#clock(),
      ...(details.decidedBy === undefined ? {} : { decidedBy: details.decidedBy }),
      ...(details.reason === undefined ? {} : { reason: details.reason }),
    };
  }

  #newId(): string {
    for (;;) {
      let id = "";
      for (let index = 0; index < 4; index += 1) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
      if (!this.#records.some((record) => record.id === id && record.state === "pending")) return id;
    }
  }

  /** Writes the journal (pending approvals and the recent history), one write after another. */
  #save(): Promise<void> {
    this.#writes = this.#writes.then(async () => {
      const pending = this.#records.filter((record) => record.state === "pending");
      const done = this.#records.filter((record) => record.state !== "pending").slice(-KEPT_RECORDS);
      this.#records = this.#records.filter((record) => record.state === "pending" || done.includes(record));
      const journal = { version: 1, approvals: [...done, ...pending] };
      try {
        await writeFileDurably(this.#options.file, `${JSON.stringify(journal)}\n`);
      } catch (error) {
        this.#logger.error({ error: describeError(error) }, "could not write the approvals journal");
        throw error;
      }
    });
    return this.#writes;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** What the model reads when a call was not approved. */
function refusalText(record: ApprovalRecord, timeoutMs: number): string {
  switch (record.state) {
    case "approved":
      return "";
    case "denied":
      return `The owner denied this call of ${record.tool} (approval ${record.id}); it was not run. Do not retry it unless they ask.`;
    case "expired":
      return `Nobody approved this call of ${record.tool} within ${Math.round(timeoutMs / 60_000)} minutes (approval ${record.id}); it was not run, as if denied.`;
    default:
      return `This call of ${record.tool} was not run: ${record.reason ?? "its approval was closed"} (approval ${record.id}).`;
  }
}

/** An answer to an approval typed in a chat: `approve K7QD` or `deny K7QD` (also 批准 / 拒绝). */
export interface ApprovalAnswer {
  readonly id: string;
  readonly approve: boolean;
}

const ANSWER = /^\s*(approve|deny|批准|拒绝)\s+([a-z2-9]{4})\s*[.!。！]?\s*$/iu;

/**
 * The approval answer in a chat message, or undefined. Only the exact form counts: a bare "yes", "ok" or an id
 * alone is not consent.
 */
export function parseApprovalAnswer(text: string): ApprovalAnswer | undefined {
  const match = ANSWER.exec(text);
  if (match === null) return undefined;
  const verb = (match[1] as string).toLowerCase();
  return { id: (match[2] as string).toUpperCase(), approve: verb === "approve" || verb === "批准" };
}

/**
 * The question asked in the conversation: the tool and its full arguments (never a truncated preview), how to
 * answer, and when it expires.
 */
export function approvalQuestion(record: ApprovalRecord, timeoutMs: number): string {
  let pretty = record.arguments;
  try {
    pretty = JSON.stringify(JSON.parse(record.arguments), null, 2);
  } catch {
    // Not JSON: shown as one quoted string, so no line of it can close the fence and be rendered as markup (a
    // mention or a link in a Feishu card) instead of read.
    pretty = JSON.stringify(record.arguments);
  }
  return [
    `Approval needed (${record.id}): the assistant wants to run \`${record.tool}\` with these arguments:`,
    "```json",
    pretty,
    "```",
    `Reply \`approve ${record.id}\` to run it or \`deny ${record.id}\` to refuse. Without an answer within ${Math.round(timeoutMs / 60_000)} minutes it is refused. Only the owner can approve.`,
  ].join("\n");
}
