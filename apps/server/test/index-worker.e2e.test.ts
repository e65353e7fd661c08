import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_MODEL_KEY, TEST_TOKEN } from "./test-server.js";

// The built server prepares memory files in the index worker (packages/memory-index/src/index-worker.ts,
// bundled by scripts/build.mjs as dist/memory-index-worker.js), found from the bundle's own location.

const serverDir = fileURLToPath(new URL("..", import.meta.url));
const distMain = join(serverDir, "dist", "main.js");

let work: string;
let server: ChildProcess;
let output = "";

/** Sixty daily notes of ~40 KB (2.4 MB): enough in one sync for the built server to start its index worker. */
async function writeNotes(workspace: string): Promise<void> {
  await mkdir(join(workspace, "memory"), { recursive: true });
  for (let day = 1; day <= 60; day += 1) {
    const lines = [`# Ferry log, day ${day}`, ""];
    for (let line = 0; line < 400; line += 1)
      lines.push(
        `- Note ${line} of day ${day}: the harbour ferry schedule, ticket OPS-${day * 100 + line}. 渡轮时刻表。`,
      );
    if (day === 17) lines.push("- The spare key is under the blue flowerpot by the shed.");
    await writeFile(
      join(workspace, "memory", `ferry-${String(day).padStart(2, "0")}.md`),
      `${lines.join("\n")}\n`,
    );
  }
}

/** The first JSON log line whose msg is `message`, once it is there. */
async function logLine(message: string): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    for (const line of output.split("\n")) {
      if (!line.includes(`"msg":"${message}"`)) continue;
      return JSON.parse(line) as Record<string, unknown>;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no "${message}" log line:\n${output}`);
}

beforeAll(async () => {
  const build = spawnSync(process.execPath, [join(serverDir, "scripts", "build.mjs")], { encoding: "utf8" });
  expect(build.status, build.stderr).toBe(0);
  work = await mkdtemp(join(tmpdir(), "almanac-index-worker-"));
  await writeNotes(join(work, "home", "workspace"));
  server = spawn(process.execPath, ["--enable-source-maps", distMain, "start"], {
    env: {
      PATH: process.env.PATH ?? "",
      ALMANAC_HOME: join(work, "home"),
      ALMANAC_PORT: "0",
      ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
      ALMANAC_MODEL_BASE_URL: "http://127.0.0.1:9/v1",
      ALMANAC_MODEL_NAME: "scripted-model",
      ALMANAC_MODEL_API_KEY: TEST_MODEL_KEY,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  server.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
}, 60_000);

afterAll(async () => {
  server?.kill("SIGKILL");
  if (work) await rm(work, { recursive: true, force: true });
});

describe("the built server's index worker", () => {
  it("prepares the start-up sync's files off the main thread, and they are searchable", async () => {
    const listening = await logLine("almanac listening");
    const done = await logLine("memory sync done");
    expect(done).toMatchObject({ filesIndexed: 60, filesPreparedInWorker: expect.any(Number) });
    expect(done.filesPreparedInWorker).toBeGreaterThan(0);
    expect(output).not.toContain("index worker stopped");

    const url = String(listening.url);
    const response = await fetch(`${url}/api/memory/search?q=${encodeURIComponent("blue flowerpot")}`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { results: Array<{ path: string }> };
    expect(body.results[0]?.path).toBe("memory/ferry-17.md");
  }, 30_000);
});
