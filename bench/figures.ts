/**
 * The figures a bench measured, written as JSON with `--json <file>` so that a script can compare runs (two builds,
 * two runtimes, a run against BENCHMARKS.md's targets). Every entry point takes the option; the text it prints is
 * unchanged. Not part of the test run.
 *
 * The file is a JSON array, one record a figure:
 * `{ "name", "value", "unit", "target"?, "command", "node", "date", "cpus", "load" }`. `name` is stable across
 * runs (kebab-case, the phase first); `value` is `null` when the bench could not measure it (no /proc, say);
 * `target` is `{ "below": n }` or `{ "atLeast": n }` in the figure's unit; `command` is the command line that
 * reproduces the run (without `--json`); `load` is the machine's 1-minute load average when the bench ended.
 * Files of several benches concatenate with `jq -s add a.json b.json`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

/** What a figure must stay within to meet its target, in the figure's own unit. */
export type Target = { readonly below: number } | { readonly atLeast: number };

/** One measured figure. */
export interface Figure {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly target?: Target;
}

/** The `--json <file>` option, to spread into an entry point's `parseArgs` options. */
export const jsonOption = { json: { type: "string" } } as const;

/** The figures of one run; {@link Figures.write} saves them when the run was given a file. */
export class Figures {
  readonly #file: string | undefined;
  readonly #figures: Figure[] = [];

  /** `file` is the `--json` option's value (nothing is written without one). */
  constructor(file: string | undefined) {
    this.#file = file;
  }

  /** Records one figure; `value` may be NaN (written as `null`). */
  add(name: string, value: number, unit: string, target?: Target): void {
    this.#figures.push(target === undefined ? { name, value, unit } : { name, value, unit, target });
  }

  /** Writes the figures recorded so far, if a file was given; prints where. */
  write(): void {
    if (this.#file === undefined) return;
    const context = {
      command: commandLine(),
      node: process.version,
      date: new Date().toISOString(),
      cpus: availableParallelism(),
      load: Number(loadavg()[0]?.toFixed(2)),
    };
    const records = this.#figures.map((figure) => ({
      ...figure,
      value: Number.isFinite(figure.value) ? figure.value : null,
      ...context,
    }));
    writeFileSync(this.#file, `${JSON.stringify(records, null, 2)}\n`);
    console.error(`figures: ${records.length} written to ${this.#file}`);
  }
}

/**
 * The values of a file {@link Figures.write} wrote, by name (NaN for `null`): checked record by record, as a file
 * from another run or another tree is input like any other.
 */
export function readFigures(file: string): Map<string, number> {
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (!Array.isArray(parsed)) throw new TypeError(`${file}: expected a JSON array of figures`);
  const values = new Map<string, number>();
  for (const record of parsed) {
    const { name, value } = (typeof record === "object" && record !== null ? record : {}) as Record<
      string,
      unknown
    >;
    if (typeof name !== "string" || (typeof value !== "number" && value !== null))
      throw new TypeError(`${file}: a figure without a name or a numeric value: ${JSON.stringify(record)}`);
    values.set(name, value ?? Number.NaN);
  }
  return values;
}

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * This process's command line as a person would type it from the repository's root: `node`, its flags (tsx's
 * loader, however it was started, as `--import tsx`), the bench's path and its arguments, without `--json`.
 */
function commandLine(): string {
  const nodeFlags: string[] = [];
  const execArgv = process.execArgv;
  for (let index = 0; index < execArgv.length; index += 1) {
    const flag = execArgv[index] ?? "";
    const value = execArgv[index + 1] ?? "";
    if ((flag === "--require" || flag === "--import") && /[/\\]tsx[/\\]|^tsx$/.test(value)) {
      if (!nodeFlags.includes("tsx")) nodeFlags.push("--import", "tsx");
      index += 1;
    } else nodeFlags.push(flag);
  }
  const script = relative(root, process.argv[1] ?? "");
  const args: string[] = [];
  const given = process.argv.slice(2);
  for (let index = 0; index < given.length; index += 1) {
    const arg = given[index] ?? "";
    if (arg === "--json") index += 1;
    else if (!arg.startsWith("--json=")) args.push(arg);
  }
  return ["node", ...nodeFlags, script, ...args].map(quoted).join(" ");
}

/** `arg` as a shell reads it back: double-quoted when it holds anything but plain characters. */
function quoted(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, "\\$1")}"`;
}
