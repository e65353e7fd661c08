import { readFile } from "node:fs/promises";
import { isErrnoCode } from "@almanac/core";
import { writeFileDurably } from "@almanac/durable-write";

/** A phrase as forget compares it: Unicode-normalized, case-folded, spaces collapsed. */
export function normalizePhrase(text: string): string {
  return text.normalize("NFKC").toLocaleLowerCase().replace(/\s+/g, " ").trim();
}

/** True when `line` mentions any of the phrases (compared as {@link normalizePhrase} does). */
export function mentionsAny(line: string, phrases: readonly string[]): boolean {
  if (phrases.length === 0) return false;
  const normalized = normalizePhrase(line);
  return phrases.some((phrase) => phrase !== "" && normalized.includes(phrase));
}

/**
 * `content` without the lines that mention a forgotten phrase, and the lines removed. A Markdown heading is kept
 * unless it mentions the phrase itself; nothing else is rewritten.
 */
export function withoutForgotten(
  content: string,
  phrases: readonly string[],
): { readonly content: string; readonly removed: readonly string[] } {
  const normalized = phrases.map(normalizePhrase).filter((phrase) => phrase !== "");
  if (normalized.length === 0) return { content, removed: [] };
  const removed: string[] = [];
  const kept = content.split("\n").filter((line) => {
    if (!mentionsAny(line, normalized)) return true;
    removed.push(line);
    return false;
  });
  return { content: removed.length === 0 ? content : kept.join("\n"), removed };
}

/** One forget request as the registry keeps it. */
export interface ForgottenPhrase {
  /** As the owner said it. */
  readonly phrase: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** Who asked: `api`, `console`, or the session key of the conversation. */
  readonly by: string;
  /** Backups still holding lines with the phrase are scrubbed from this time on. */
  readonly purgeBackupsAt: number;
  /** Set once the backups were scrubbed. */
  readonly purgedAt?: number;
}

/** The registry's file as written, checked by hand (this package has no schema library). */
function parseRegistry(text: string): ForgottenPhrase[] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null || (json as { version?: unknown }).version !== 1)
    return undefined;
  const phrases = (json as { phrases?: unknown }).phrases;
  if (!Array.isArray(phrases)) return undefined;
  const valid = phrases.every(
    (entry: unknown) =>
      typeof entry === "object" &&
      entry !== null &&
      typeof (entry as ForgottenPhrase).phrase === "string" &&
      typeof (entry as ForgottenPhrase).at === "number" &&
      typeof (entry as ForgottenPhrase).by === "string" &&
      typeof (entry as ForgottenPhrase).purgeBackupsAt === "number",
  );
  return valid ? (phrases as ForgottenPhrase[]) : undefined;
}

/**
 * What the owner asked to forget (`state/forgotten.json`), so that what still holds it (a transcript the
 * summarizer merges later) cannot write it back. Written durably on every change.
 */
export class ForgottenRegistry {
  readonly #file: string;
  #phrases: ForgottenPhrase[] = [];
  #normalized: string[] = [];

  constructor(file: string) {
    this.#file = file;
  }

  async open(): Promise<void> {
    let text: string | undefined;
    try {
      text = await readFile(this.#file, "utf8");
    } catch (error) {
      if (!isErrnoCode(error, "ENOENT")) throw error;
    }
    if (text === undefined) return;
    const phrases = parseRegistry(text);
    if (phrases === undefined)
      throw new Error(`${this.#file} is not a forget registry; move it aside to start a new one`);
    this.#set(phrases);
  }

  /** Every phrase, normalized (what filters compare with). */
  normalized(): readonly string[] {
    return this.#normalized;
  }

  list(): readonly ForgottenPhrase[] {
    return this.#phrases;
  }

  async add(entry: ForgottenPhrase): Promise<void> {
    const next = [
      ...this.#phrases.filter((known) => normalizePhrase(known.phrase) !== normalizePhrase(entry.phrase)),
      entry,
    ];
    await this.#save(next);
  }

  /** Records that the backups of a phrase were scrubbed. */
  async markPurged(phrase: string, at: number): Promise<void> {
    await this.#save(
      this.#phrases.map((known) => (known.phrase === phrase ? { ...known, purgedAt: at } : known)),
    );
  }

  async #save(phrases: ForgottenPhrase[]): Promise<void> {
    await writeFileDurably(this.#file, `${JSON.stringify({ version: 1, phrases }, null, 2)}\n`);
    this.#set(phrases);
  }

  #set(phrases: readonly ForgottenPhrase[]): void {
    this.#phrases = [...phrases];
    this.#normalized = phrases.map((entry) => normalizePhrase(entry.phrase));
  }
}
