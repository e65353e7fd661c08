/**
 * What a turn allocates on the server's heap: the figure behind its garbage collection (a scavenge every
 * 100–200 ms of bench/server-process.ts's 100 × 10 on Node 20). Unlike latency, it barely moves with the
 * machine's load, so it compares two builds or two versions of a change in one run each.
 *
 * The server and the scripted model run in this process; turns go over a bare keep-alive `node:http` client (no
 * SDK on the client side). V8's sampling heap profiler, counting objects that were collected too, records the
 * sequential phase and then the phase of 100 sessions at once; frames of the test kit are the model's, the
 * rest is the server's (and `node:http`'s share of the client, a few KB a turn). Printed: KB a turn by part and
 * the server's largest allocation sites. The profiler slows some builtins down (array spreads, for one), so
 * time a site without it, in a micro-benchmark, before changing it (BENCHMARKS.md, "Tried and not kept").
 * Not part of the test run.
 *
 * Run: node --import tsx bench/allocation.ts [--turns 300] [--top 15] [--json <file>]
 */
import { Agent } from "node:http";
import { Session } from "node:inspector/promises";
import { parseArgs } from "node:util";
import { Figures, jsonOption } from "./figures.js";
import { httpCall } from "./http-call.js";
import { BENCH_TOKEN, startInProcessServer } from "./in-process-server.js";

const { values } = parseArgs({
  options: {
    turns: { type: "string", default: "300" },
    top: { type: "string", default: "15" },
    ...jsonOption,
  },
});
const figures = new Figures(values.json);

interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children?: readonly ProfileNode[];
}

const server = await startInProcessServer("info");
const agent = new Agent({ keepAlive: true });
const turn = async (user: string, content: string): Promise<void> => {
  const { status } = await httpCall(
    agent,
    "POST",
    `${server.url}/v1/chat/completions`,
    { "content-type": "application/json", authorization: `Bearer ${BENCH_TOKEN}` },
    JSON.stringify({ model: "almanac", user, messages: [{ role: "user", content }] }),
  );
  if (status !== 200) throw new Error(`HTTP ${status}`);
};

const inspector = new Session();
inspector.connect();

/** Runs `work` under the sampling heap profiler; the bytes it allocated, by part, and the server's top sites. */
async function sampled(
  label: string,
  figureName: string,
  turns: number,
  work: () => Promise<void>,
): Promise<void> {
  await inspector.post("HeapProfiler.startSampling", {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await work();
  const { profile } = await inspector.post("HeapProfiler.stopSampling");
  const sites = new Map<string, number>();
  const parts = { server: 0, model: 0 };
  const name = ({ functionName, url, lineNumber }: ProfileNode["callFrame"]) =>
    `${functionName || "(anonymous)"} ${url.replace(/^.*\/node_modules\//, "").replace(/^.*\/(apps|packages)\//, "$1/")}:${lineNumber + 1}`;
  const ours = (url: string) => /\/(apps|packages)\//.test(url) && !url.includes("node_modules");
  // Each site with the nearest frame of our own code above it: who asked for the allocation.
  const walk = (node: ProfileNode, inModel: boolean, caller: string): void => {
    const model = inModel || node.callFrame.url.includes("/testkit/");
    const own = ours(node.callFrame.url) ? name(node.callFrame) : caller;
    if (model) parts.model += node.selfSize;
    else {
      parts.server += node.selfSize;
      const site = own === name(node.callFrame) ? own : `${name(node.callFrame)} (via ${own})`;
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children ?? []) walk(child, model, own);
  };
  walk(profile.head as ProfileNode, false, "—");
  const kb = (bytes: number) => (bytes / 1024 / turns).toFixed(1);
  console.log(`${label}: server ${kb(parts.server)} KB a turn, scripted model ${kb(parts.model)} KB a turn`);
  figures.add(`${figureName}-server-per-turn`, parts.server / 1024 / turns, "KB");
  figures.add(`${figureName}-model-per-turn`, parts.model / 1024 / turns, "KB");
  for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top)))
    console.log(`  ${kb(bytes).padStart(6)} KB  ${site}`);
}

for (let index = 0; index < 50; index += 1) await turn("warm", `warm ${index}`);
const turns = Number(values.turns);
await sampled(`${turns} sequential turns of one session`, "sequential", turns, async () => {
  for (let index = 0; index < turns; index += 1) await turn("single", `message ${index}`);
});
await sampled("100 sessions at once × 10 turns", "concurrent", 1000, async () => {
  await Promise.all(
    Array.from({ length: 100 }, async (_, session) => {
      for (let index = 0; index < 10; index += 1) await turn(`c${session}`, `message ${index}`);
    }),
  );
});
console.log(`node ${process.version}`);
figures.write();
inspector.disconnect();
agent.destroy();
await server.close();
