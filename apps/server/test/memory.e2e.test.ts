import { readFileSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "./server-process.js";
import { isSummarizerRequest, startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
/** A home a test made itself (the test server removes only the homes it makes). */
let ownHome: string | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  if (ownHome !== undefined) await rm(ownHome, { recursive: true, force: true });
  ownHome = undefined;
});

const isSummarizer = isSummarizerRequest;

async function chat(server: TestServer, user: string, content: string): Promise<string> {
  const reply = await server.client.chat.completions.create({
    model: "almanac",
    user,
    messages: [{ role: "user", content }],
  });
  return reply.choices[0]?.message.content ?? "";
}

function localDate(timeZone: string): string {
  return new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  }).format(new Date());
}

describe("the start-up sync of a fresh index", () => {
  const NOTES = 3000;
  it("answers requests while it indexes (the status shows the sync part-way through)", async () => {
    // 3,000 notes of one chunk each (~0.9 MB, under the index worker's threshold: all of it on the main thread).
    // A sync reports a file once its batch (500 chunks) is written, so part-way is after the first of six
    // batches. (With 600 notes, two batches, only the last sixth of the index phase was part-way, and a loaded
    // CI machine answered no poll in it; here 13-19 polls land part-way, with both cores loaded too.)
    const home = await mkdtemp(join(tmpdir(), "almanac-sync-"));
    ownHome = home;
    const memoryDir = join(home, "workspace", "memory");
    await mkdir(memoryDir, { recursive: true });
    const words = ["budget", "deploy", "garden", "invoice", "kernel", "lantern", "meadow", "orbit", "quartz"];
    for (let day = 0; day < NOTES; day += 1) {
      const lines = Array.from(
        { length: 8 },
        (_, line) =>
          `- ${words[(day + line) % words.length]} note ${day}.${line} about plan${day * 41 + line}`,
      );
      await writeFile(join(memoryDir, `note-${String(day).padStart(4, "0")}.md`), `${lines.join("\n")}\n`);
    }
    running = await startTestServer({ home, withModel: false });
    type Status = { state: string; progress?: { phase: string; done: number; total: number } };
    const seen: Status[] = [];
    for (;;) {
      const status = (await (await running.api("/api/memory/index")).json()) as Status;
      seen.push(status);
      if (status.state !== "syncing") break;
    }
    // Before, the sync ran in microtasks from its first file to its last: no request was answered in between.
    const partWay = seen.filter(
      ({ progress }) => progress?.phase === "index" && progress.done > 0 && progress.done < progress.total,
    );
    expect(partWay.length, JSON.stringify(seen.map((one) => one.progress?.done))).toBeGreaterThan(0);
    expect(seen.at(-1)).toMatchObject({ state: "idle", files: NOTES, chunks: NOTES });
  });
});

describe("long-term memory through the server", () => {
  it("/new sends the conversation to the summarizer, which writes today's daily log", async () => {
    running = await startTestServer({ env: { ALMANAC_TIME_ZONE: "Asia/Shanghai" } });
    const { llm } = running;
    let summarizerSteps = 0;
    llm.setFallback((request) => {
      if (!isSummarizer(request)) return script.text("Got it.");
      summarizerSteps += 1;
      return summarizerSteps === 1
        ? script.toolCalls([
            { name: "append_day_log", arguments: { text: "- Deploy key for staging is K-77 (from chat)." } },
          ])
        : script.text("Stored.");
    });
    await chat(running, "mem", "The staging deploy key is K-77.");
    expect(await chat(running, "mem", "/new")).toMatch(/new conversation/i);
    const file = join(running.home, "workspace", "memory", `${localDate("Asia/Shanghai")}.md`);
    await waitFor(() => summarizerSteps >= 2, 10_000, "the summarizer run");
    await waitFor(
      () => {
        try {
          return readFileSync(file, "utf8").includes("K-77");
        } catch {
          return false;
        }
      },
      10_000,
      "the daily log",
    );
    expect(await readFile(file, "utf8")).toContain("- Deploy key for staging is K-77 (from chat).");
    let jobs = { stats: { done: 0, parked: 0 } };
    for (let attempt = 0; attempt < 100 && jobs.stats.done === 0; attempt += 1) {
      jobs = (await (await running.api("/api/summarizer/jobs")).json()) as typeof jobs;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(jobs.stats).toMatchObject({ done: 1, parked: 0 });
  });

  it("parks a job whose model calls keep failing and completes it after a retry through the admin API", async () => {
    running = await startTestServer({ env: { ALMANAC_SUMMARIZER_MAX_ATTEMPTS: "1" } });
    const { llm } = running;
    let failSummarizer = true;
    llm.setFallback((request) => {
      if (!isSummarizer(request)) return script.text("ok");
      if (failSummarizer) return script.error(400, { message: "bad summarizer request" });
      return script.text("Nothing worth storing.");
    });
    await chat(running, "park", "hello");
    await chat(running, "park", "/new");
    let jobs: {
      stats: { parked: number; done: number };
      jobs: Array<{ id: string; state: string; lastError?: { code?: string } }>;
    } = {
      stats: { parked: 0, done: 0 },
      jobs: [],
    };
    for (let attempt = 0; attempt < 100 && jobs.stats.parked === 0; attempt += 1) {
      jobs = (await (await running.api("/api/summarizer/jobs")).json()) as typeof jobs;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(jobs.stats.parked).toBe(1);
    const parked = jobs.jobs.find((job) => job.state === "parked");
    expect(parked?.lastError?.code).toMatch(/^llm\./);
    expect(await chat(running, "park", "/status")).toMatch(
      /Summarizer queue: 0 pending, 0 running, 1 parked/,
    );
    failSummarizer = false;
    const retried = await running.api(`/api/summarizer/jobs/${parked?.id}/retry`, { method: "POST" });
    expect(retried.status).toBe(200);
    for (let attempt = 0; attempt < 100 && jobs.stats.done === 0; attempt += 1) {
      jobs = (await (await running.api("/api/summarizer/jobs")).json()) as typeof jobs;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(jobs.stats).toMatchObject({ done: 1, parked: 0 });
  });

  it("edits MEMORY.md through the admin API with write safety, and new sessions see it", async () => {
    running = await startTestServer();
    running.llm.setFallback(() => script.text("ok"));
    const initial =
      "# Memory\n\n## Preferences\n- The owner prefers answers in British English.\n- Deploys happen on Tuesdays only.\n- The staging cluster is called kestrel and lives in eu-west-1.\n- Invoices go to finance@example.com before the 5th of each month.\n";
    const put = await running.api("/api/memory/files/MEMORY.md", {
      method: "PUT",
      body: JSON.stringify({ content: initial, expectedHash: null }),
    });
    expect(put.status).toBe(200);
    const read = (await (await running.api("/api/memory/files/MEMORY.md")).json()) as {
      content: string;
      hash: string;
    };
    expect(read.content).toBe(initial);
    const shrink = await running.api("/api/memory/files/MEMORY.md", {
      method: "PUT",
      body: JSON.stringify({ content: "# Memory\n" }),
    });
    expect(shrink.status).toBe(409);
    expect(((await shrink.json()) as { error: { code: string } }).error.code).toBe("memory.shrink_refused");
    const conflict = await running.api("/api/memory/files/MEMORY.md", {
      method: "PUT",
      body: JSON.stringify({ content: `${initial}- x\n`, expectedHash: "stale" }),
    });
    expect(conflict.status).toBe(409);
    const outside = await running.api("/api/memory/files/..%2F..%2Fetc%2Fpasswd");
    expect(outside.status).toBe(400);
    const files = (await (await running.api("/api/memory/files")).json()) as {
      files: Array<{ path: string }>;
    };
    expect(files.files.map((file) => file.path)).toContain("MEMORY.md");
    await chat(running, "fresh", "hello");
    const system = running.llm.chatRequests()[0]?.messages[0];
    expect(String(system?.content)).toContain("Deploys happen on Tuesdays only.");
  });

  it("'remember that …' updates MEMORY.md through the write-safe store; a destructive rewrite is refused to the model", async () => {
    running = await startTestServer();
    const { llm } = running;
    const long = `# Memory\n\n## Preferences\n${Array.from({ length: 12 }, (_, index) => `- Preference number ${index}: keep it.`).join("\n")}\n`;
    llm.enqueue(
      script.toolCalls([{ name: "write_file", arguments: { path: "MEMORY.md", content: long } }]),
      script.text("Saved."),
      script.toolCalls([
        { name: "append_file", arguments: { path: "MEMORY.md", content: "- The dentist is on Fridays.\n" } },
      ]),
      script.text("Remembered."),
      script.toolCalls([{ name: "write_file", arguments: { path: "MEMORY.md", content: "# Memory\n" } }]),
      script.text("I could not overwrite it."),
    );
    await chat(running, "remember", "Start my memory file.");
    expect(await chat(running, "remember", "Remember that the dentist is on Fridays.")).toBe("Remembered.");
    const file = await readFile(join(running.home, "workspace", "MEMORY.md"), "utf8");
    expect(file).toContain("- The dentist is on Fridays.");
    await chat(running, "remember", "Wipe it.");
    expect(await readFile(join(running.home, "workspace", "MEMORY.md"), "utf8")).toBe(file);
    const refusal = llm.chatRequests().at(-1)?.messages.at(-1);
    expect(refusal?.role).toBe("tool");
    expect(String(refusal?.content)).toMatch(/shrink|most of/i);
  });

  it("makes a note saved on disk searchable without a restart, and the agent finds it with memory_search", async () => {
    running = await startTestServer();
    const { llm } = running;
    const { mkdir, writeFile } = await import("node:fs/promises");
    await mkdir(join(running.home, "workspace", "memory"), { recursive: true });
    await writeFile(
      join(running.home, "workspace", "memory", "2026-11-30.md"),
      "# 2026-11-30\n\n## Incidents\n- OPS-4821: the payment webhook timed out after the TLS certificate rotation.\n",
    );
    let hits: Array<{ path: string; startLine: number }> = [];
    for (let attempt = 0; attempt < 100 && hits.length === 0; attempt += 1) {
      const body = (await (await running.api("/api/memory/search?q=OPS-4821")).json()) as {
        results: typeof hits;
      };
      hits = body.results;
      if (hits.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(hits[0]).toMatchObject({ path: "memory/2026-11-30.md" });
    llm.enqueue(
      script.toolCalls([{ name: "memory_search", arguments: { query: "payment webhook OPS-4821" } }]),
      script.text("It was the TLS certificate rotation."),
    );
    expect(await chat(running, "recall", "Why did OPS-4821 happen?")).toBe(
      "It was the TLS certificate rotation.",
    );
    const toolResult = llm.chatRequests().at(-1)?.messages.at(-1);
    expect(toolResult?.role).toBe("tool");
    expect(String(toolResult?.content)).toContain("memory/2026-11-30.md");
    const status = (await (await running.api("/api/memory/index")).json()) as {
      files: number;
      backend: string;
    };
    expect(status).toMatchObject({ backend: "sqlite" });
    expect(status.files).toBeGreaterThanOrEqual(1);
  });

  it("keeps a person's edit made between the assistant's read and its write, and tells the assistant", async () => {
    running = await startTestServer();
    const memoryFile = join(running.home, "workspace", "MEMORY.md");
    const { writeFile: write } = await import("node:fs/promises");
    const original = `# Memory\n\n${Array.from({ length: 8 }, (_, index) => `- Fact ${index} stays.`).join("\n")}\n`;
    await write(memoryFile, original);
    const humanEdit = `${original}- Added by hand while the assistant was busy.\n`;
    let step = 0;
    running.llm.setFallback(() => {
      step += 1;
      if (step === 1) return script.toolCalls([{ name: "read_file", arguments: { path: "MEMORY.md" } }]);
      if (step === 2) {
        // The owner saves the file in an editor right now.
        writeFileSync(memoryFile, humanEdit);
        return script.toolCalls([
          {
            name: "write_file",
            arguments: { path: "MEMORY.md", content: `${original}- Added by the assistant.\n` },
          },
        ]);
      }
      return script.text("The file changed under me; I will read it again.");
    });
    await chat(running, "race", "Add a fact to my memory.");
    expect(await readFile(memoryFile, "utf8")).toBe(humanEdit);
    const refusal = running.llm.chatRequests().at(-1)?.messages.at(-1);
    expect(refusal?.role).toBe("tool");
    expect(String(refusal?.content)).toContain("changed since it was read");
  });
});
