/**
 * Summarizes a V8 `.cpuprofile` (from `node --cpu-prof`): the functions with the most self time and the most
 * total time, optionally only between two moments of the monotonic clock in microseconds (the clock the profile
 * stamps its samples with; bench/server-process.ts prints each phase's window). `--group` sums self time by
 * package or file instead. Not part of the test run.
 *
 * Run: npx tsx bench/cpu-profile.ts <file.cpuprofile> [--from <µs>] [--to <µs>] [--top 35] [--group]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: "string" },
    to: { type: "string" },
    top: { type: "string", default: "35" },
    group: { type: "boolean", default: false },
  },
});
const file = positionals[0];
if (file === undefined)
  throw new Error("usage: bench/cpu-profile.ts <file.cpuprofile> [--from µs] [--to µs]");
const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
const from = values.from === undefined ? Number.NEGATIVE_INFINITY : Number(values.from);
const to = values.to === undefined ? Number.POSITIVE_INFINITY : Number(values.to);
const top = Number(values.top);

const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

const shortUrl = (url: string) =>
  url.replace(/^file:\/\//, "").replace(/.*\/node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?/, "");
const nameOf = (frame: CallFrame) =>
  `${frame.functionName || "(anonymous)"} ${shortUrl(frame.url)}${frame.url === "" ? "" : `:${frame.lineNumber + 1}`}`;
const groupOf = (frame: CallFrame) => {
  if (frame.url === "") return `(native) ${frame.functionName}`;
  if (frame.url.startsWith("node:")) return frame.url.split("/").slice(0, 2).join("/");
  const inPackage = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(frame.url);
  return inPackage?.[1] ?? shortUrl(frame.url);
};

const self = new Map<string, number>();
const total = new Map<string, number>();
let samples = 0;
let time = profile.startTime;
profile.samples.forEach((id, index) => {
  time += profile.timeDeltas[index] ?? 0;
  if (time < from || time > to) return;
  const node = nodes.get(id);
  if (node === undefined) return;
  samples += 1;
  const key = values.group ? groupOf(node.callFrame) : nameOf(node.callFrame);
  self.set(key, (self.get(key) ?? 0) + 1);
  if (values.group) return;
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
    const frame = nodes.get(at)?.callFrame;
    if (frame === undefined) break;
    const name = nameOf(frame);
    if (seen.has(name)) continue;
    seen.add(name);
    total.set(name, (total.get(name) ?? 0) + 1);
  }
});

const table = (counts: Map<string, number>) =>
  [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, count]) => `${((100 * count) / samples).toFixed(1).padStart(5)}%  ${name}`)
    .join("\n");
console.log(
  `${samples} samples${values.from || values.to ? ` between ${values.from ?? "start"} and ${values.to ?? "end"} µs` : ""}`,
);
console.log(`-- self time${values.group ? " by package or file" : ""} --\n${table(self)}`);
if (!values.group) console.log(`-- total time --\n${table(total)}`);
