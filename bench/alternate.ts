/**
 * Alternates `bench/server-process.ts` over two or more builds, a fresh process each, and prints each run's key
 * figures and their medians per build: on a shared machine whose load moves within minutes, only alternating
 * rounds compare builds fairly. The figures are read from each run's `--json` file (bench/figures.ts). Not part
 * of the test run.
 *
 * Run: node --import tsx bench/alternate.ts --rounds 4 before=/tmp/wt-base/apps/server/dist/main.js \
 *        after=apps/server/dist/main.js [--args="<bench/server-process.ts options>"]
 * A build may carry node flags after `::`, e.g. `semi64=apps/server/dist/main.js::--max-semi-space-size=64`
 * (passed as server-process's `--node-flags`), to compare a V8 or Node setting on the same build.
 * (`--args` default "--idle-seconds 1 --sessions 100 --memory empty"; a worktree for "before":
 * `git worktree add --detach /tmp/wt-base <rev>`, `pnpm install --frozen-lockfile --offline`, `pnpm build:server`)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readFigures } from "./figures.js";
import { median } from "./sample-stats.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "4" },
    args: { type: "string", default: "--idle-seconds 1 --sessions 100 --memory empty" },
  },
});
const builds = positionals.map((spec) => {
  const [label, rest] = spec.split(/=(.*)/s);
  const [main, nodeFlags] = rest?.split("::") ?? [];
  if (label === undefined || main === undefined || main === "")
    throw new Error(`expected <label>=<main.js>[::<node flags>], got ${spec}`);
  return { label, main: resolve(main), nodeFlags };
});
if (builds.length < 2) throw new Error("give at least two <label>=<main.js> builds");
const extra = values.args.split(" ").filter((arg) => arg !== "");

/** The columns shown, each a figure server-process writes (the 100 × 10 ones without "warm": its first round). */
const columns = {
  start: "start-to-healthz",
  "seq p50": "sequential-latency-p50",
  "beyond p50": "sequential-beyond-model-p50",
  "beyond p99": "sequential-beyond-model-p99",
  "CPU/turn": "sequential-server-cpu-per-turn",
  "new p50": "new-session-turn-p50",
  "new CPU": "new-session-server-cpu-per-turn",
  "100×10 CPU": "concurrent-round-1-server-cpu-per-turn",
  "100×10 p99": "concurrent-round-1-p99",
  "first p99": "concurrent-round-1-first-turns-p99",
  "later p99": "concurrent-round-1-later-turns-p99",
  "warm p99": "concurrent-later-rounds-p99",
  "warm CPU": "concurrent-later-rounds-server-cpu-per-turn",
} as const;
type Column = keyof typeof columns;

const bench = join(dirname(fileURLToPath(import.meta.url)), "server-process.ts");
const scratch = mkdtempSync(join(tmpdir(), "almanac-alternate-"));
const results = new Map(builds.map(({ label }) => [label, [] as Partial<Record<Column, number>>[]]));
const row = (label: string, values: Partial<Record<Column, number>>, suffix = "") =>
  `${label.padEnd(12)} ${(Object.keys(columns) as Column[])
    .map((name) => `${name} ${values[name]?.toFixed(2) ?? "—"}`)
    .join("  ")}${suffix}`;

try {
  for (let round = 1; round <= Number(values.rounds); round += 1) {
    for (const { label, main, nodeFlags } of builds) {
      const flags = nodeFlags === undefined ? [] : [`--node-flags=${nodeFlags}`];
      const file = join(scratch, `${label}-${round}.json`);
      const run = spawnSync(
        process.execPath,
        ["--import", "tsx", bench, "--main", main, ...flags, ...extra, "--json", file],
        { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 },
      );
      if (run.status !== 0) throw new Error(`${label} failed:\n${run.stderr}`);
      const figures = readFigures(file);
      const found: Partial<Record<Column, number>> = {};
      for (const [column, name] of Object.entries(columns) as [Column, string][]) {
        const value = figures.get(name);
        if (value !== undefined) found[column] = value;
      }
      results.get(label)?.push(found);
      console.log(row(label, found, `  (round ${round}, load ${loadavg()[0]?.toFixed(2)})`));
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

console.log("medians:");
for (const [label, runs] of results) {
  const medians: Partial<Record<Column, number>> = {};
  for (const name of Object.keys(columns) as Column[]) {
    const seen = runs.map((run) => run[name]).filter((value): value is number => value !== undefined);
    if (seen.length > 0) medians[name] = median(seen);
  }
  console.log(row(label, medians));
}
