import { hasMark, type Message, messageSchema, repairToolPairs, UserError } from "@almanac/core";
import { z } from "zod";

/** The rolling summary of everything compacted so far; it stands in for those messages in the prompt. */
export interface RollingSummary {
  readonly text: string;
  /** When the summary was last replaced, in milliseconds since the Unix epoch. */
  readonly updatedAt: number;
  /** How many compactions have been merged into it. */
  readonly compactions: number;
}

/** The JSON form of a {@link WorkingMemory}, as saved in a session snapshot. */
export interface WorkingMemorySnapshot {
  readonly version: 1;
  readonly messages: readonly Message[];
  /** Absent when there is no summary yet. */
  readonly summary?: RollingSummary;
  readonly counters: Readonly<Record<string, number>>;
}

/** What a new {@link WorkingMemory} starts with; everything defaults to empty. */
export interface WorkingMemoryInit {
  readonly messages?: readonly Message[];
  readonly summary?: RollingSummary;
  readonly counters?: Readonly<Record<string, number>>;
}

const rollingSummarySchema = z.object({
  text: z.string(),
  updatedAt: z.number(),
  compactions: z.number().int().min(0),
});

const snapshotSchema = z.object({
  version: z.literal(1),
  messages: z.array(messageSchema),
  summary: rollingSummarySchema.optional(),
  counters: z.record(z.string(), z.number()),
});

function freezeSummary(summary: RollingSummary): RollingSummary {
  return Object.freeze({
    text: summary.text,
    updatedAt: summary.updatedAt,
    compactions: summary.compactions,
  });
}

/**
 * One conversation's working state: the messages (with marks), the rolling summary and
 * a few persisted counters (e.g. compaction strikes).
 * Every change swaps in a new frozen array, so a `messages` value read earlier never changes under the reader.
 */
export class WorkingMemory {
  #messages: readonly Message[];
  #summary: RollingSummary | undefined;
  #counters: Readonly<Record<string, number>>;
  #active: { readonly of: readonly Message[]; readonly active: readonly Message[] } | undefined;
  /** How many leading messages are known to pair their tool calls and results (see {@link repairToolPairs}). */
  #pairedPrefix = 0;

  constructor(init: WorkingMemoryInit = {}) {
    this.#messages = Object.freeze([...(init.messages ?? [])]);
    this.#summary = init.summary === undefined ? undefined : freezeSummary(init.summary);
    this.#counters = Object.freeze({ ...init.counters });
  }

  /** Every message, compacted or not, oldest first. */
  get messages(): readonly Message[] {
    return this.#messages;
  }

  /** The rolling summary, if any compaction has happened. */
  get summary(): RollingSummary | undefined {
    return this.#summary;
  }

  /** All counters by name. */
  get counters(): Readonly<Record<string, number>> {
    return this.#counters;
  }

  /** The messages that still go into the prompt: those without the `compacted` mark. */
  activeMessages(): readonly Message[] {
    // Asked for several times a turn over the whole history: kept until the messages change.
    if (this.#active?.of !== this.#messages) {
      const of = this.#messages;
      this.#active = { of, active: Object.freeze(of.filter((message) => !hasMark(message, "compacted"))) };
    }
    return this.#active.active;
  }

  /** Adds messages at the end. */
  append(...messages: readonly Message[]): void {
    if (messages.length === 0) return;
    const before = this.#messages;
    // A spread: the cheapest copy of a frozen array in V8 (`slice` and `concat` are slower on frozen arrays).
    this.#messages = Object.freeze([...before, ...messages]);
    // The active list grows by the appended messages that go into the prompt (no filtering of the history).
    if (this.#active?.of === before) {
      const added = messages.filter((message) => !hasMark(message, "compacted"));
      const { active } = this.#active;
      this.#active = {
        of: this.#messages,
        active: added.length === 0 ? active : Object.freeze([...active, ...added]),
      };
    }
  }

  /** Replaces every message (compaction marks messages this way). */
  replaceMessages(messages: readonly Message[]): void {
    if (messages === this.#messages) return; // already ours, frozen: nothing to copy
    this.#messages = Object.freeze([...messages]);
    this.#pairedPrefix = 0;
  }

  /**
   * Gives every tool call a result and drops results that answer no call (core's `repairToolPairs`). Messages
   * checked by an earlier call and only appended to since are not looked at again, so a turn's checks do not
   * grow with the history. True when something was repaired.
   */
  repairToolPairs(): boolean {
    const messages = this.#messages;
    const repaired = repairToolPairs(messages, this.#pairedPrefix);
    this.replaceMessages(repaired);
    this.#pairedPrefix = repaired.length;
    return repaired !== messages;
  }

  /** Replaces the rolling summary; `undefined` removes it. */
  setSummary(summary: RollingSummary | undefined): void {
    this.#summary = summary === undefined ? undefined : freezeSummary(summary);
  }

  /** Sets a persisted counter. */
  setCounter(name: string, value: number): void {
    this.#counters = Object.freeze({ ...this.#counters, [name]: value });
  }

  /** A counter's value; 0 when it was never set. */
  counter(name: string): number {
    return this.#counters[name] ?? 0;
  }

  /** The snapshot form; `JSON.stringify` of it and {@link WorkingMemory.fromJSON} round-trip losslessly. */
  toJSON(): WorkingMemorySnapshot {
    return {
      version: 1,
      messages: this.#messages,
      ...(this.#summary === undefined ? {} : { summary: this.#summary }),
      counters: this.#counters,
    };
  }

  /**
   * Rebuilds working memory from untrusted JSON (a snapshot file).
   * Throws a `UserError` with code `memory.invalid` naming each problem and where it is.
   */
  static fromJSON(input: unknown): WorkingMemory {
    const parsed = snapshotSchema.safeParse(input);
    if (!parsed.success) {
      throw new UserError(
        "memory.invalid",
        `Working memory snapshot is invalid:\n${z.prettifyError(parsed.error)}`,
        { cause: parsed.error },
      );
    }
    const snapshot = parsed.data;
    return new WorkingMemory({
      messages: snapshot.messages.map((message) => Object.freeze(message)),
      ...(snapshot.summary === undefined ? {} : { summary: snapshot.summary }),
      counters: snapshot.counters,
    });
  }
}
