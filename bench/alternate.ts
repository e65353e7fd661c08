/**
 * Alternates `bench/server-process.ts` over two or more builds, a fresh process each, and prints each run's key
 * figures and their medians per build: on a shared machine whose load moves within minutes, only alternating
 * rounds compare builds fairly. Not part of the test run.
 *
 * Run: node --import tsx bench/alternate.ts --rounds 4 before=/tmp/wt-base/apps/server/dist/main.js \
 *        after=apps/server/dist/main.js [--args="<bench/server-process.ts options>"]
 * A build may carry node flags after `::`, e.g. `semi64=apps/server/dist/main.js::--max-semi-space-size=64`
 * (passed as server-process's `--node-flags`), to compare a V8 or Node setting on the same build.
 * (`--args` default "--idle-seconds 1 --sessions 100 --memory empty"; a worktree for "before":
 * `git worktree add --detach /tmp/wt-base <rev>`, `pnpm install --frozen-lockfile --offline`, `pnpm build:server`)
 */
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
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

/**
 * The figures read from server-process's output, by the line they are on: the 100 × 10 figures without
 * "warm" are its first round's.
 */
const figures = {
  "seq p50": /300 sequential turns: p50 ([\d.]+) ms/,
  "CPU/turn": /server CPU ([\d.]+) ms a turn/,
  "100×10 CPU": /CPU in this phase: server (\d+) ms/,
  "100×10 p99": /100 concurrent sessions × 10 turns, round 1: .*?p99 ([\d.]+) ms/,
  "first p99": /first turn \(a new session\): .*?p99 ([\d.]+) ms/,
  "later p99": /the later ones: .*?p99 ([\d.]+) ms/,
  "warm p99": /100 × 10 after the first round .*?p99 ([\d.]+) ms/,
  "warm CPU": /100 × 10 after the first round .*?server CPU ([\d.]+) ms a turn/,
} as const;
type Figure = keyof typeof figures;

const bench = join(dirname(fileURLToPath(import.meta.url)), "server-process.ts");
const results = new Map(builds.map(({ label }) => [label, [] as Partial<Record<Figure, number>>[]]));
const row = (label: string, values: Partial<Record<Figure, number>>, suffix = "") =>
  `${label.padEnd(12)} ${(Object.keys(figures) as Figure[])
    .map((name) => `${name} ${values[name]?.toFixed(2) ?? "—"}`)
    .join("  ")}${suffix}`;

for (let round = 1; round <= Number(values.rounds); round += 1) {
  for (const { label, main, nodeFlags } of builds) {
    const flags = nodeFlags === undefined ? [] : [`--node-flags=${nodeFlags}`];
    const run = spawnSync(process.execPath, ["--import", "tsx", bench, "--main", main, ...flags, ...extra], {
      encoding: "utf8",
      maxBuffer: 16 * 1024 * 1024,
    });
    if (run.status !== 0) throw new Error(`${label} failed:\n${run.stderr}`);
    const found: Partial<Record<Figure, number>> = {};
    for (const [name, pattern] of Object.entries(figures) as [Figure, RegExp][]) {
      const match = pattern.exec(run.stdout)?.[1];
      // The 100 × 10 phase's CPU is printed for its 1,000 turns: shown a turn, like the sequential figure.
      if (match !== undefined) found[name] = name === "100×10 CPU" ? Number(match) / 1000 : Number(match);
    }
    results.get(label)?.push(found);
    console.log(row(label, found, `  (round ${round}, load ${loadavg()[0]?.toFixed(2)})`));
  }
}

console.log("medians:");
for (const [label, runs] of results) {
  const medians: Partial<Record<Figure, number>> = {};
  for (const name of Object.keys(figures) as Figure[]) {
    const seen = runs.map((run) => run[name]).filter((value): value is number => value !== undefined);
    if (seen.length > 0) medians[name] = median(seen);
  }
  console.log(row(label, medians));
}
