import { lstatSync } from "node:fs";
import { join } from "node:path";
import { groupCalls, type TokenCounter } from "@almanac/core";
import {
  buildMemoryContext,
  type MemoryFileStore,
  type MemoryScope,
  memoryContextFiles,
} from "@almanac/memory-files";

/** What {@link MemoryContextCache} reads from. */
export interface MemoryContextCacheOptions {
  readonly workspace: string;
  readonly store: MemoryFileStore;
  readonly timeZone: string;
  /** The configured budget of the excerpt; a caller's budget may lower it, never raise it. */
  readonly contextTokens: number;
  readonly tokenCounter: TokenCounter;
}

const KEPT_CONTEXTS = 256; // scopes: the owner and each shared chat

/**
 * The last memory context built per scope, with what its files were (inode, size, change times): a new
 * session gets it again while none of them changed, instead of reading and counting the files anew (path
 * checks, reads and token counts were ~13 % of the server's main thread while 100 sessions started at once).
 * A write through the store replaces the file (a new inode); an edit in place changes its times.
 *
 * The checks of one scope run in groups (core's `groupCalls`): sessions starting while a check (and the
 * rebuild it may start) runs share the one after it, which still sees every change made before they asked.
 * The stat calls are blocking (see `fileStamp`).
 */
export class MemoryContextCache {
  readonly #options: MemoryContextCacheOptions;
  readonly #contexts = new Map<string, { readonly stamps: string; readonly text: string }>();
  readonly #check: (key: string) => Promise<string>;

  constructor(options: MemoryContextCacheOptions) {
    this.#options = options;
    this.#check = groupCalls((key: string) => this.#checkContext(key));
  }

  /** The excerpt for `scope` within `budgetTokens` (at most the configured budget); see `Memory.memoryContext`. */
  get(scope: MemoryScope, budgetTokens?: number): Promise<string> {
    const budget = Math.max(
      0,
      Math.min(this.#options.contextTokens, Math.floor(budgetTokens ?? Number.POSITIVE_INFINITY)),
    );
    return this.#check(JSON.stringify({ scope, budget }));
  }

  async #checkContext(key: string): Promise<string> {
    const { workspace, store, timeZone, contextTokens, tokenCounter } = this.#options;
    const { scope, budget } = JSON.parse(key) as { scope: MemoryScope; budget: number };
    const now = Date.now();
    const files = memoryContextFiles(scope, now, timeZone);
    const stamps = files.map((file) => fileStamp(workspace, file)).join("|");
    const known = this.#contexts.get(key);
    if (known !== undefined && known.stamps === stamps) return known.text;
    const text = await buildMemoryContext({
      scope,
      store,
      timeZone,
      now,
      budgetTokens: budget,
      configuredTokens: contextTokens,
      tokenCounter,
    });
    this.#contexts.delete(key);
    if (this.#contexts.size >= KEPT_CONTEXTS) this.#contexts.delete(this.#contexts.keys().next().value ?? "");
    this.#contexts.set(key, { stamps, text });
    return text;
  }
}

/**
 * What a memory file is right now (inode, size, change times; `-` when it is missing or cannot be read), asked
 * blocking: a cached lstat needs no trip through libuv's pool, where it would queue behind the sessions' fsyncs
 * before each new session's first model call.
 */
function fileStamp(workspace: string, file: string): string {
  try {
    const stats = lstatSync(join(workspace, file), { bigint: true, throwIfNoEntry: false });
    if (stats !== undefined) return `${file}:${stats.ino}:${stats.size}:${stats.ctimeNs}:${stats.mtimeNs}`;
  } catch {
    // Unreadable counts as missing, as when the file is gone: the context is then rebuilt from what is there.
  }
  return `${file}:-`;
}
