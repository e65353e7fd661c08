/**
 * Alternates `bench/server-process.ts` over two or more builds, a fresh process each, and prints each run's key
 * figures and their medians per build: on a shared machine whose load moves within minutes, only alternating
 * rounds compare builds fairly. Not part of the test run.
 *
 * Run: node --import tsx bench/alternate.ts --rounds 4 before=/tmp/wt-base/apps/server/dist/main.js \
 *        after=apps/server/dist/main.js [--args="<bench/server-process.ts options>"]
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
  const [label, main] = spec.split("=");
  if (label === undefined || main === undefined) throw new Error(`expected <label>=<main.js>, got ${spec}`);
  return { label, main: resolve(main) };
});
if (builds.length < 2) throw new Error("give at least two <label>=<main.js> builds");
const extra = values.args.split(" ").filter((arg) => arg !== "");

/** The figures read from server-process's output, by the line they are on. */
const figures = {
  "seq p50": /300 sequential turns: p50 ([\d.]+) ms/,
  "CPU/turn": /server CPU ([\d.]+) ms a turn/,
  "100×10 p99": /100 concurrent sessions × 10 turns: .*?p99 ([\d.]+) ms/,
  "first p99": /first turn \(a new session\): .*?p99 ([\d.]+) ms/,
  "later p99": /the later ones: .*?p99 ([\d.]+) ms/,
} as const;
type Figure = keyof typeof figures;

const bench = join(dirname(fileURLToPath(import.meta.url)), "server-process.ts");
const results = new Map(builds.map(({ label }) => [label, [] as Partial<Record<Figure, number>>[]]));
const row = (label: string, values: Partial<Record<Figure, number>>, suffix = "") =>
  `${label.padEnd(12)} ${(Object.keys(figures) as Figure[])
    .map((name) => `${name} ${values[name]?.toFixed(2) ?? "—"}`)
    .join("  ")}${suffix}`;

for (let round = 1; round <= Number(values.rounds); round += 1) {
  for (const { label, main } of builds) {
    const run = spawnSync(process.execPath, ["--import", "tsx", bench, "--main", main, ...extra], {
      encoding: "utf8",
      maxBuffer: 16 * 1024 * 1024,
    });
    if (run.status !== 0) throw new Error(`${label} failed:\n${run.stderr}`);
    const found: Partial<Record<Figure, number>> = {};
    for (const [name, pattern] of Object.entries(figures) as [Figure, RegExp][]) {
      const match = pattern.exec(run.stdout)?.[1];
      if (match !== undefined) found[name] = Number(match);
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
