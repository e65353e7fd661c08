import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createOpenAIChatModel } from "@almanac/llm";
import { createMemoryFileStore, type MemoryFileStore } from "@almanac/memory-files";
import type { TaskClock } from "@almanac/tasks";
import { type ScriptedLlm, startScriptedLlm } from "@almanac/testkit";
import { createTokenCounter } from "@almanac/tokenizer";
import { Consolidator, type ConsolidatorOptions } from "../src/consolidator.js";

/** A clock moved by hand: timers fire, in order, only when the test advances it. */
export class ManualClock implements TaskClock {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, { readonly at: number; readonly callback: () => void }>();

  constructor(start: number) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.#nextId;
    this.#nextId += 1;
    this.#timers.set(id, { at: this.#now + ms, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Moves to `time`, firing every timer due on the way (and letting the work each one starts run). */
  async advanceTo(time: number): Promise<void> {
    for (;;) {
      const [id, timer] =
        [...this.#timers.entries()]
          .filter(([, candidate]) => candidate.at <= time)
          .sort(([, left], [, right]) => left.at - right.at)[0] ?? [];
      if (id === undefined || timer === undefined) break;
      this.#timers.delete(id);
      this.#now = Math.max(this.#now, timer.at);
      timer.callback();
      await settle();
    }
    this.#now = time;
    await settle();
  }
}

/** Lets promise chains and file writes started by a timer run. */
export async function settle(): Promise<void> {
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** Resolves once `condition` holds (checked every 10 ms of real time), failing after 10 s. */
export async function until(condition: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A workspace, a state directory, the store over them and a scripted model server. */
export interface Fixture {
  readonly llm: ScriptedLlm;
  readonly workspace: string;
  readonly stateDir: string;
  readonly store: MemoryFileStore;
  /** A consolidator over the fixture (the nightly schedule off unless `at` is given). */
  consolidator(options?: Partial<ConsolidatorOptions>): Consolidator;
  write(relative: string, content: string): Promise<void>;
  read(relative: string): Promise<string>;
  /** The journal file as JSON. */
  journal(): Promise<{ runs: Array<{ id: string; state: string; commit?: unknown; attempts: number }> }>;
  close(): Promise<void>;
}

export async function createFixture(): Promise<Fixture> {
  const llm = await startScriptedLlm({ apiKey: "test-key" });
  const base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-consolidation-")));
  const workspace = path.join(base, "workspace");
  const stateDir = path.join(base, "state");
  await mkdir(path.join(workspace, "memory"), { recursive: true });
  // The server makes its state directory at start; the consolidation journal makes only its own below it.
  await mkdir(stateDir);
  const store = createMemoryFileStore({ workspace, stateDir });
  const model = createOpenAIChatModel({
    baseURL: llm.baseURL,
    apiKey: "test-key",
    model: "scripted-model",
    timeoutMs: 5000,
    maxRetries: 0,
  });
  const started: Consolidator[] = [];
  return {
    llm,
    workspace,
    stateDir,
    store,
    consolidator(options = {}) {
      const consolidator = new Consolidator({
        store,
        stateDir,
        model,
        tokenCounter: createTokenCounter(),
        timeZone: "UTC",
        at: "off",
        ...options,
      });
      started.push(consolidator);
      return consolidator;
    },
    async write(relative, content) {
      await mkdir(path.dirname(path.join(workspace, relative)), { recursive: true });
      await writeFile(path.join(workspace, relative), content);
    },
    read: (relative) => readFile(path.join(workspace, relative), "utf8"),
    async journal() {
      return JSON.parse(await readFile(path.join(stateDir, "consolidation", "state.json"), "utf8"));
    },
    async close() {
      for (const consolidator of started) await consolidator.stop({ deadlineMs: 10 });
      await llm.close();
      await rm(base, { recursive: true, force: true });
    },
  };
}
