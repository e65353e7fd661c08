/**
 * What configured MCP tools cost a turn that calls none (not part of the test run): two servers in this process,
 * one with the reference "everything" MCP server (13 tools, stdio) configured, one without, each with the same
 * scripted model answering "ok"; turns alternate between them in one conversation each, so the machine's noise
 * falls on both alike. Printed: each server's turn latency as the client saw it (p50, p99) and the difference.
 * The MCP tools' specs are in every request of the first server (a larger prompt to send and count).
 *
 * Run: node --import tsx bench/mcp-overhead.ts [--turns 500] [--json <file>]
 */
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Figures, jsonOption } from "./figures.js";
import { BENCH_TOKEN, type InProcessServer, startInProcessServer } from "./in-process-server.js";
import { percentile } from "./sample-stats.js";

const { values } = parseArgs({ options: { turns: { type: "string", default: "500" }, ...jsonOption } });
const TURNS = Number(values.turns);
const figures = new Figures(values.json);
const everything = fileURLToPath(
  new URL(
    "../apps/server/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    import.meta.url,
  ),
);

async function turn(server: InProcessServer): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${BENCH_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "almanac", user: "bench", messages: [{ role: "user", content: "hello" }] }),
  });
  await response.json();
  return performance.now() - started;
}

const plain = await startInProcessServer("warn");
const withMcp = await startInProcessServer("warn", undefined, {
  ALMANAC_MCP_SERVERS: JSON.stringify({ everything: { command: process.execPath, args: [everything] } }),
});
try {
  // Wait for the MCP server's tools, so every timed turn of that server carries them.
  for (let waited = 0; ; waited += 100) {
    const body = (await (
      await fetch(`${withMcp.url}/api/tools`, { headers: { authorization: `Bearer ${BENCH_TOKEN}` } })
    ).json()) as { mcpServers: Array<{ state: string; tools: number }> };
    if (body.mcpServers[0]?.state === "ready") {
      console.log(`MCP server ready with ${body.mcpServers[0].tools} tools`);
      break;
    }
    if (waited > 20_000) throw new Error("the MCP server did not become ready");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (let warm = 0; warm < 100; warm += 1) {
    await turn(plain);
    await turn(withMcp);
  }
  const timings = { plain: [] as number[], mcp: [] as number[] };
  for (let index = 0; index < TURNS; index += 1) {
    // Alternate which goes first, so neither always follows the other.
    if (index % 2 === 0) {
      timings.plain.push(await turn(plain));
      timings.mcp.push(await turn(withMcp));
    } else {
      timings.mcp.push(await turn(withMcp));
      timings.plain.push(await turn(plain));
    }
  }
  const row = (name: string, list: number[]) =>
    `${name}: p50 ${percentile(list, 50).toFixed(2)} ms, p99 ${percentile(list, 99).toFixed(2)} ms`;
  console.log(row("no MCP server        ", timings.plain));
  console.log(row("13 MCP tools, none called", timings.mcp));
  const difference = percentile(timings.mcp, 50) - percentile(timings.plain, 50);
  console.log(`difference at the p50: ${difference.toFixed(2)} ms (${TURNS} turns each, alternated)`);
  figures.add("mcp-turn-plain-p50", percentile(timings.plain, 50), "ms");
  figures.add("mcp-turn-with-tools-p50", percentile(timings.mcp, 50), "ms");
  figures.add("mcp-turn-difference-p50", difference, "ms");
  figures.write();
} finally {
  await withMcp.close();
  await plain.close();
}
