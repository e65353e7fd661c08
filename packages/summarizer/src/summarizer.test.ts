import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createMessage, InternalError, type Message } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { createMemoryFileStore, type MemoryFileStore } from "@almanac/memory-files";
import {
  type RecordedChatMessage,
  type ScriptedLlm,
  type ScriptStep,
  script,
  startScriptedLlm,
} from "@almanac/testkit";
import { createTokenCounter } from "@almanac/tokenizer";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSummarizer } from "./summarizer.js";
import { SUMMARIZER_PROMPT } from "./summarizer-prompt.js";
import type { SummaryJobInput } from "./summary-job.js";
import { createSummaryQueue, type SummaryQueue } from "./summary-queue.js";

let llm: ScriptedLlm;
let base: string;
let workspace: string;
let stateDir: string;
let queue: SummaryQueue | undefined;

beforeEach(async () => {
  llm = await startScriptedLlm({ apiKey: "test-key" });
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-summarizer-")));
  workspace = path.join(base, "workspace");
  stateDir = path.join(base, "state");
  await mkdir(path.join(workspace, "memory"), { recursive: true });
});

afterEach(async () => {
  await queue?.stop({ deadlineMs: 10 });
  queue = undefined;
  await llm.close();
  await rm(base, { recursive: true, force: true });
});

interface Setup {
  readonly timeZone?: string;
  readonly store?: MemoryFileStore;
}

function startQueue(setup: Setup = {}): SummaryQueue {
  const model = createOpenAIChatModel({
    baseURL: llm.baseURL,
    apiKey: "test-key",
    model: "scripted-model",
    timeoutMs: 5000,
    maxRetries: 0,
  });
  const summarizer = createSummarizer({
    model,
    workspace,
    stateDir,
    timeZone: setup.timeZone ?? "UTC",
    tokenCounter: createTokenCounter(),
    ...(setup.store === undefined ? {} : { store: setup.store }),
  });
  queue = createSummaryQueue({ stateDir, run: summarizer, backoff: () => 0 });
  return queue;
}

function job(messages: readonly Message[]): SummaryJobInput {
  return { sessionKey: "web:local:dm:ann", reason: "auto", messages, createdAt: Date.UTC(2024, 4, 1, 12) };
}

const utc = (day: number, hour: number, minute: number) => Date.UTC(2024, 4, day, hour, minute);
const said = (text: string, timestamp: number, role: "user" | "assistant" = "user") =>
  createMessage({ role, content: text, timestamp });

const readLog = () => script.toolCalls([{ name: "read_day_log", arguments: {} }]);
const append = (text: string) => script.toolCalls([{ name: "append_day_log", arguments: { text } }]);
const logPath = (date: string) => path.join(workspace, "memory", `${date}.md`);

function toolResults(messages: readonly RecordedChatMessage[]): string[] {
  return messages.filter((message) => message.role === "tool").map((message) => String(message.content));
}

function userText(index: number): string {
  return String(llm.chatRequests()[index]?.messages.find((message) => message.role === "user")?.content);
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe("createSummarizer with the durable queue", () => {
  it("merges a conversation into the day's log with targeted edits, keeping a backup of the old version", async () => {
    await writeFile(logPath("2024-05-01"), "# 2024-05-01\n- 08:00 Ann started the deploy of api v2\n");
    llm.enqueue(
      readLog(),
      script.toolCalls([
        {
          name: "edit_day_log",
          arguments: {
            old_text: "- 08:00 Ann started the deploy of api v2",
            new_text: "- 08:00 Ann started the deploy of api v2 (ticket OPS-4821)",
          },
        },
        {
          name: "append_day_log",
          arguments: { text: "- 09:05 Deploy failed with ERR_OSSL_EVP_UNSUPPORTED; fixed by Node 20" },
        },
      ]),
      script.text("Enriched the deploy entry and added the fix."),
    );
    const queue = startQueue();
    await queue.enqueue(
      job([
        said("The deploy ticket is OPS-4821. It fails with ERR_OSSL_EVP_UNSUPPORTED", utc(1, 9, 5)),
        said("Switch the image to Node 20; that fixes it.", utc(1, 9, 6), "assistant"),
      ]),
    );
    await queue.start();
    await queue.idle();

    expect(await readFile(logPath("2024-05-01"), "utf8")).toBe(
      "# 2024-05-01\n- 08:00 Ann started the deploy of api v2 (ticket OPS-4821)\n- 09:05 Deploy failed with ERR_OSSL_EVP_UNSUPPORTED; fixed by Node 20\n",
    );
    const [info] = await queue.list();
    expect(info).toMatchObject({
      state: "done",
      outcome: {
        changedFiles: ["memory/2024-05-01.md"],
        note: "2024-05-01: Enriched the deploy entry and added the fix.",
      },
    });
    const first = llm.chatRequests()[0];
    expect(first?.messages[0]).toMatchObject({ role: "system", content: SUMMARIZER_PROMPT });
    expect(userText(0)).toContain("Day: 2024-05-01 (times are local, UTC). Log file: memory/2024-05-01.md.");
    expect(userText(0)).toContain("[09:05] user: The deploy ticket is OPS-4821.");
    expect(toolResults(llm.chatRequests()[1]?.messages ?? [])[0]).toContain(
      "- 08:00 Ann started the deploy of api v2",
    );
    const backups = await readdir(path.join(stateDir, "backups", "memory-files", "memory"));
    expect(backups).toHaveLength(1);
  });

  it("runs two jobs for the same day one after the other, so both facts end up in the file", async () => {
    llm.enqueue(
      readLog(),
      append("- 09:00 Chose Postgres 16 for the billing service"),
      script.text("Added one entry."),
      readLog(),
      append("- 15:30 Billing service migration scheduled for 2024-05-20"),
      script.text("Added one entry."),
    );
    const queue = startQueue();
    await queue.enqueue(job([said("Let's use Postgres 16 for billing.", utc(1, 9, 0))]));
    await queue.enqueue(job([said("Schedule the billing migration for 2024-05-20.", utc(1, 15, 30))]));
    await queue.start();
    await queue.idle();

    const log = await readFile(logPath("2024-05-01"), "utf8");
    expect(log).toBe(
      "# 2024-05-01\n- 09:00 Chose Postgres 16 for the billing service\n- 15:30 Billing service migration scheduled for 2024-05-20\n",
    );
    // The second job's agent read the log with the first job's entry already in it.
    expect(toolResults(llm.chatRequests()[4]?.messages ?? [])[0]).toContain("Chose Postgres 16");
  });

  it("refuses a destructive rewrite and shows the refusal to the agent, which then edits properly", async () => {
    const original = `# 2024-05-01\n${Array.from({ length: 12 }, (_, i) => `- 0${i % 10}:00 existing entry ${i}`).join("\n")}\n`;
    await writeFile(logPath("2024-05-01"), original);
    llm.enqueue(
      readLog(),
      script.toolCalls([
        { name: "rewrite_day_log", arguments: { content: "# 2024-05-01\n- 10:00 only the new fact\n" } },
      ]),
      append("- 10:00 the new fact"),
      script.text("Appended the new fact."),
    );
    const queue = startQueue();
    await queue.enqueue(job([said("A new fact at ten.", utc(1, 10, 0))]));
    await queue.start();
    await queue.idle();

    const refusal = toolResults(llm.chatRequests()[2]?.messages ?? []).at(-1);
    expect(refusal).toMatch(/memory\.shrink_refused/);
    expect(llm.chatRequests()[2]?.messages.at(-1)).toMatchObject({ role: "tool" });
    expect(await readFile(logPath("2024-05-01"), "utf8")).toBe(`${original}- 10:00 the new fact\n`);
  });

  it("parks a job whose model call fails three times, with the error in list(), and retry() completes it", async () => {
    llm.enqueue(script.error(500), script.error(500), script.error(500));
    const queue = startQueue();
    await queue.enqueue(job([said("Remember the router password rotation on Friday.", utc(1, 11, 0))]));
    await queue.start();
    await queue.idle();
    const [parked] = await queue.list();
    expect(parked).toMatchObject({
      state: "parked",
      attempts: 3,
      lastError: { code: "llm.server", retryable: true },
    });
    expect(llm.chatRequests()).toHaveLength(3);

    llm.enqueue(
      readLog(),
      append("- 11:00 Router password rotation planned for Friday"),
      script.text("Added."),
    );
    await queue.retry(parked?.id ?? "");
    await queue.idle();
    expect((await queue.list())[0]).toMatchObject({ state: "done", attempts: 1 });
    expect(await readFile(logPath("2024-05-01"), "utf8")).toBe(
      "# 2024-05-01\n- 11:00 Router password rotation planned for Friday\n",
    );
  });

  it("keeps a person's edit made between the agent's read and the commit, merging again on top of it", async () => {
    await writeFile(logPath("2024-05-01"), "# 2024-05-01\n");
    const steps: ScriptStep[] = [
      readLog(),
      append("- 14:00 Booked the venue for the offsite"),
      script.text("Added."),
      readLog(),
      append("- 14:00 Booked the venue for the offsite"),
      script.text("Added on top of the edited log."),
    ];
    let served = 0;
    llm.setFallback(async () => {
      served += 1;
      // The person edits the file while the agent works (after its read, before the commit).
      if (served === 2)
        await writeFile(logPath("2024-05-01"), "# 2024-05-01\n- 13:00 (Ann) dentist appointment\n");
      return steps[served - 1] ?? script.error(500);
    });
    const queue = startQueue();
    await queue.enqueue(job([said("I booked the venue for the offsite.", utc(1, 14, 0))]));
    await queue.start();
    await queue.idle();

    expect(await readFile(logPath("2024-05-01"), "utf8")).toBe(
      "# 2024-05-01\n- 13:00 (Ann) dentist appointment\n- 14:00 Booked the venue for the offsite\n",
    );
    expect(llm.chatRequests()).toHaveLength(6);
    expect(toolResults(llm.chatRequests()[4]?.messages ?? [])[0]).toContain("dentist appointment");
    expect((await queue.list())[0]?.state).toBe("done");
  });

  it("changes nothing, and creates no file, when the agent finds nothing worth storing", async () => {
    llm.enqueue(readLog(), script.text("Nothing worth storing: only greetings."));
    const queue = startQueue();
    await queue.enqueue(job([said("hi!", utc(1, 8, 0)), said("Hello!", utc(1, 8, 0), "assistant")]));
    await queue.start();
    await queue.idle();
    await expect(readdir(path.join(workspace, "memory"))).resolves.toEqual([]);
    expect((await queue.list())[0]?.outcome).toEqual({
      note: "2024-05-01: Nothing worth storing: only greetings.",
      changedFiles: [],
    });
  });

  it.each([
    {
      timeZone: "Asia/Shanghai",
      before: Date.UTC(2024, 2, 9, 15, 59),
      after: Date.UTC(2024, 2, 9, 16, 1),
      days: ["2024-03-09", "2024-03-10"],
      times: ["23:59", "00:01"],
    },
    {
      timeZone: "America/Los_Angeles",
      before: Date.UTC(2024, 2, 10, 7, 59),
      after: Date.UTC(2024, 2, 10, 8, 1),
      days: ["2024-03-09", "2024-03-10"],
      times: ["23:59", "00:01"],
    },
  ])(
    "files messages around midnight in $timeZone under their local days",
    async ({ timeZone, before, after, days, times }) => {
      llm.enqueue(
        readLog(),
        append(`- ${times[0]} Late-night fact`),
        script.text("Added."),
        readLog(),
        append(`- ${times[1]} Just-after-midnight fact`),
        script.text("Added."),
      );
      const queue = startQueue({ timeZone });
      await queue.enqueue(job([said("Late-night fact.", before), said("Just-after-midnight fact.", after)]));
      await queue.start();
      await queue.idle();

      expect(await readFile(logPath(days[0] ?? ""), "utf8")).toBe(
        `# ${days[0]}\n- ${times[0]} Late-night fact\n`,
      );
      expect(await readFile(logPath(days[1] ?? ""), "utf8")).toBe(
        `# ${days[1]}\n- ${times[1]} Just-after-midnight fact\n`,
      );
      expect(userText(0)).toContain(`Day: ${days[0]} (times are local, ${timeZone})`);
      expect(userText(0)).toContain(`[${times[0]}] user: Late-night fact.`);
      expect(userText(0)).not.toContain("Just-after-midnight");
      expect(userText(3)).toContain(`[${times[1]}] user: Just-after-midnight fact.`);
    },
  );

  it("does not merge a day again when a later day of the same job failed and the job was retried", async () => {
    llm.enqueue(readLog(), append("- 22:00 Day one fact"), script.text("Added."), script.error(500));
    llm.enqueue(readLog(), append("- 07:00 Day two fact"), script.text("Added."));
    const queue = startQueue();
    await queue.enqueue(job([said("Day one fact.", utc(1, 22, 0)), said("Day two fact.", utc(2, 7, 0))]));
    await queue.start();
    await queue.idle();

    expect(await readFile(logPath("2024-05-01"), "utf8")).toBe("# 2024-05-01\n- 22:00 Day one fact\n");
    expect(await readFile(logPath("2024-05-02"), "utf8")).toBe("# 2024-05-02\n- 07:00 Day two fact\n");
    expect(llm.chatRequests()).toHaveLength(7);
    expect((await queue.list())[0]).toMatchObject({ state: "done", attempts: 2 });
  });

  it("finishes a journaled commit on retry without asking the model again, and never applies it twice", async () => {
    const real = createMemoryFileStore({ workspace, stateDir });
    let crashes = 1;
    const store: MemoryFileStore = {
      ...real,
      async write(relativePath, content, options) {
        const result = await real.write(relativePath, content, options);
        // Applied, then "crash" before the job is marked done.
        if (crashes-- > 0)
          throw new InternalError("test.internal", "crashed right after applying the commit");
        return result;
      },
    };
    llm.enqueue(
      readLog(),
      append("- 16:00 Renewed the TLS certificate for api.example.com"),
      script.text("Added."),
    );
    const queue = startQueue({ store });
    await queue.enqueue(job([said("I renewed the TLS cert for api.example.com.", utc(1, 16, 0))]));
    await queue.start();
    await queue.idle();
    const [parked] = await queue.list();
    expect(parked).toMatchObject({ state: "parked", lastError: { code: "test.internal" } });

    await queue.retry(parked?.id ?? "");
    await queue.idle();
    expect((await queue.list())[0]?.state).toBe("done");
    expect(llm.chatRequests()).toHaveLength(3);
    const log = await readFile(logPath("2024-05-01"), "utf8");
    expect(count(log, "Renewed the TLS certificate")).toBe(1);
  });
});
