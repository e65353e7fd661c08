import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createMessage, type Logger, ProviderError, UserError } from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type {
  JobOutcome,
  SummaryJob,
  SummaryJobContext,
  SummaryJobInput,
  SummaryJobRunner,
} from "./summary-job.js";
import { createSummaryQueue, type SummaryQueue, type SummaryQueueOptions } from "./summary-queue.js";

let stateDir: string;
const queues: SummaryQueue[] = [];

beforeEach(async () => {
  stateDir = await mkdtemp(path.join(tmpdir(), "almanac-queue-"));
});

afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.stop({ deadlineMs: 10 })));
  await rm(stateDir, { recursive: true, force: true });
});

function input(text: string, sessionKey = "web:local:dm:ann"): SummaryJobInput {
  return {
    sessionKey,
    reason: "auto",
    messages: [createMessage({ role: "user", content: text, timestamp: Date.UTC(2024, 4, 1, 9) })],
    summary: `summary of ${text}`,
    createdAt: Date.UTC(2024, 4, 1, 9),
  };
}

function firstText(job: SummaryJob): string {
  const block = job.messages[0]?.content[0];
  return block?.type === "text" ? block.text : "";
}

const ok = (note: string): JobOutcome => ({ note, changedFiles: [] });

function makeQueue(run: SummaryJobRunner, extra: Partial<SummaryQueueOptions> = {}): SummaryQueue {
  const queue = createSummaryQueue({ stateDir, run, backoff: () => 0, ...extra });
  queues.push(queue);
  return queue;
}

async function jobFiles(): Promise<string[]> {
  return (await readdir(path.join(stateDir, "summarizer", "jobs")))
    .filter((name) => name.endsWith(".json"))
    .sort();
}

async function readJournal(name: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path.join(stateDir, "summarizer", "jobs", name), "utf8"));
}

function retryableError(message: string): ProviderError {
  return new ProviderError("llm.server", message, { isRetryable: true, status: 500 });
}

/** A promise with its resolver, to hold a fake run open until the test lets it go. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe("createSummaryQueue", () => {
  it("journals a job to disk before enqueue resolves, and runs nothing before start", async () => {
    const ran: string[] = [];
    const queue = makeQueue(async (job) => {
      ran.push(job.id);
      return ok("done");
    });
    const info = await queue.enqueue(input("alpha"));
    const [name] = await jobFiles();
    expect(name).toBe(`${info.id}.json`);
    const record = await readJournal(name ?? "");
    expect(record).toMatchObject({
      state: "pending",
      attempts: 0,
      sessionKey: "web:local:dm:ann",
      summary: "summary of alpha",
    });
    expect(record.messages).toHaveLength(1);
    expect(await queue.stats()).toEqual({ pending: 1, running: 0, parked: 0, done: 0 });
    expect(ran).toEqual([]);
  });

  it("refuses a malformed job instead of journaling it", async () => {
    const queue = makeQueue(async () => ok("done"));
    await expect(queue.enqueue({ ...input("x"), sessionKey: "" })).rejects.toMatchObject({
      code: "summarizer.invalid_job",
    });
  });

  it("runs jobs in enqueue order, one at a time", async () => {
    const events: string[] = [];
    let active = 0;
    let maxActive = 0;
    const queue = makeQueue(async (job) => {
      active += 1;
      maxActive = Math.max(maxActive, active);
      events.push(`start ${firstText(job)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      events.push(`end ${firstText(job)}`);
      active -= 1;
      return ok(firstText(job));
    });
    await queue.enqueue(input("one"));
    await queue.enqueue(input("two"));
    await queue.start();
    await queue.enqueue(input("three"));
    await queue.idle();
    expect(events).toEqual(["start one", "end one", "start two", "end two", "start three", "end three"]);
    expect(maxActive).toBe(1);
    const listed = await queue.list();
    expect(listed.map((job) => [job.state, job.outcome?.note])).toEqual([
      ["done", "one"],
      ["done", "two"],
      ["done", "three"],
    ]);
  });

  it("retries a retryable failure after the backoff delay, counting attempts", async () => {
    const delays: number[] = [];
    const attempts: number[] = [];
    const queue = makeQueue(
      async (_job, context) => {
        attempts.push(context.attempt);
        if (context.attempt < 3) throw retryableError(`boom ${context.attempt}`);
        return ok("finally");
      },
      {
        backoff: (attempt) => attempt * 1000,
        sleep: async (ms) => {
          delays.push(ms);
        },
      },
    );
    await queue.enqueue(input("flaky"));
    await queue.start();
    await queue.idle();
    expect(attempts).toEqual([1, 2, 3]);
    expect(delays).toEqual([1000, 2000]);
    const [job] = await queue.list();
    expect(job).toMatchObject({
      state: "done",
      attempts: 3,
      lastError: { code: "llm.server", message: "boom 2" },
    });
  });

  it("parks a job that keeps failing, with its error visible, and retry() runs it again to completion", async () => {
    let failing = true;
    const queue = makeQueue(async () => {
      if (failing) throw retryableError("model down");
      return ok("recovered");
    });
    await queue.enqueue(input("stubborn"));
    await queue.enqueue(input("next"));
    await queue.start();
    await queue.idle();
    const [parked, next] = await queue.list();
    expect(parked).toMatchObject({
      state: "parked",
      attempts: 3,
      lastError: { code: "llm.server", message: "model down", retryable: true },
    });
    expect(next?.state).toBe("parked");
    expect(await queue.stats()).toEqual({ pending: 0, running: 0, parked: 2, done: 0 });
    expect(await jobFiles()).toHaveLength(2);

    failing = false;
    await expect(queue.retry(next?.id ?? "")).resolves.toMatchObject({ state: "pending", attempts: 0 });
    await queue.idle();
    expect((await queue.list())[1]).toMatchObject({
      state: "done",
      attempts: 1,
      outcome: { note: "recovered" },
    });
    expect((await queue.list())[0]?.state).toBe("parked");
  });

  it("parks a job at once when its error is not retryable", async () => {
    let runs = 0;
    const queue = makeQueue(async () => {
      runs += 1;
      throw new UserError("llm.auth", "bad key");
    });
    await queue.enqueue(input("x"));
    await queue.start();
    await queue.idle();
    expect(runs).toBe(1);
    expect((await queue.list())[0]).toMatchObject({
      state: "parked",
      lastError: { code: "llm.auth", retryable: false },
    });
  });

  it("refuses to retry an unknown job or one that is not parked", async () => {
    const queue = makeQueue(async () => ok("done"));
    const info = await queue.enqueue(input("x"));
    await expect(queue.retry("000000000099-deadbeef")).rejects.toMatchObject({
      code: "summarizer.job_not_found",
    });
    await expect(queue.retry(info.id)).rejects.toMatchObject({ code: "summarizer.job_not_parked" });
  });

  it("resumes journaled jobs when a new queue starts over the same directory", async () => {
    const first = makeQueue(async () => ok("never"));
    await first.enqueue(input("a"));
    await first.enqueue(input("b"));
    const seen: string[] = [];
    const second = makeQueue(async (job) => {
      seen.push(firstText(job));
      return ok("done");
    });
    await second.start();
    await second.idle();
    expect(seen).toEqual(["a", "b"]);
    const third = makeQueue(async () => ok("done"));
    const info = await third.enqueue(input("c"));
    expect(info.seq).toBe(3);
  });

  it("runs a job found running in the journal again, with the checkpoint its interrupted run saved", async () => {
    const started = gate();
    const crashed = makeQueue(async (_job, context) => {
      await context.saveCheckpoint({ step: "halfway" });
      started.open();
      return new Promise<JobOutcome>(() => {}); // the process "dies" here
    });
    await crashed.enqueue(input("interrupted"));
    await crashed.start();
    await started.promise;
    expect((await readJournal((await jobFiles())[0] ?? "")).state).toBe("running");
    queues.splice(queues.indexOf(crashed), 1); // abandoned like a killed process: never stopped

    const contexts: Array<Pick<SummaryJobContext, "attempt" | "checkpoint">> = [];
    const restarted = makeQueue(async (_job, context) => {
      contexts.push({ attempt: context.attempt, checkpoint: context.checkpoint });
      return ok("resumed");
    });
    await restarted.start();
    await restarted.idle();
    expect(contexts).toEqual([{ attempt: 2, checkpoint: { step: "halfway" } }]);
    expect((await restarted.list())[0]).toMatchObject({
      state: "done",
      lastError: { code: "summarizer.interrupted" },
    });
  });

  it("parks, instead of running again, a job that was interrupted on its last allowed attempt", async () => {
    const first = makeQueue(async () => new Promise<JobOutcome>(() => {}), { maxAttempts: 1 });
    await first.enqueue(input("poison"));
    await first.start();
    while ((await first.stats()).running === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    queues.splice(queues.indexOf(first), 1);
    let ran = false;
    const second = makeQueue(
      async () => {
        ran = true;
        return ok("x");
      },
      { maxAttempts: 1 },
    );
    await second.start();
    await second.idle();
    expect(ran).toBe(false);
    expect((await second.list())[0]).toMatchObject({
      state: "parked",
      lastError: { code: "summarizer.interrupted" },
    });
  });

  it("lets the running job finish within the stop deadline and leaves the rest journaled", async () => {
    const release = gate();
    const running = gate();
    const queue = makeQueue(async (job) => {
      running.open();
      await release.promise;
      return ok(firstText(job));
    });
    await queue.enqueue(input("current"));
    await queue.enqueue(input("waiting"));
    await queue.start();
    await running.promise;
    const stopped = queue.stop({ deadlineMs: 5_000 });
    release.open();
    await stopped;
    expect((await queue.list()).map((job) => job.state)).toEqual(["done", "pending"]);
    const late = await queue.enqueue(input("after stop"));
    expect(late.state).toBe("pending");
    expect(await jobFiles()).toHaveLength(3);
  });

  it("aborts a job still running at the stop deadline; it stays journaled with its checkpoint and runs again later", async () => {
    const running = gate();
    const queue = makeQueue(async (_job, context) => {
      await context.saveCheckpoint({ committed: ["memory/2024-05-01.md"] });
      running.open();
      await new Promise((_resolve, reject) => {
        context.signal.addEventListener("abort", () => reject(context.signal.reason), { once: true });
      });
      return ok("unreachable");
    });
    await queue.enqueue(input("slow"));
    await queue.start();
    await running.promise;
    await queue.stop({ deadlineMs: 20 });
    const [job] = await queue.list();
    expect(job).toMatchObject({ state: "pending", attempts: 0 });

    const checkpoints: unknown[] = [];
    const next = makeQueue(async (_job, context) => {
      checkpoints.push(context.checkpoint);
      return ok("done");
    });
    await next.start();
    await next.idle();
    expect(checkpoints).toEqual([{ committed: ["memory/2024-05-01.md"] }]);
  });

  it("keeps a bounded history of done jobs, without their messages, and deletes older files", async () => {
    const queue = makeQueue(async () => ok("done"), { keepDone: 2 });
    for (const text of ["a", "b", "c", "d"]) await queue.enqueue(input(text));
    await queue.start();
    await queue.idle();
    const listed = await queue.list();
    expect(listed.map((job) => job.seq)).toEqual([3, 4]);
    const files = await jobFiles();
    expect(files).toEqual(listed.map((job) => `${job.id}.json`));
    const record = await readJournal(files[0] ?? "");
    expect(record).toMatchObject({ state: "done", messageCount: 1 });
    expect(record.messages).toBeUndefined();
    expect(record.summary).toBeUndefined();
  });

  it("moves a damaged journal file aside and logs it, and still runs the other jobs", async () => {
    const errors: string[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: (_object, message) => errors.push(message ?? ""),
      child: () => logger,
    };
    const first = makeQueue(async () => ok("x"));
    await first.enqueue(input("good"));
    const jobsDir = path.join(stateDir, "summarizer", "jobs");
    await writeFile(path.join(jobsDir, "000000000007-0badf00d.json"), "{ not json");
    const seen: string[] = [];
    const second = makeQueue(
      async (job) => {
        seen.push(firstText(job));
        return ok("x");
      },
      { logger },
    );
    await second.start();
    await second.idle();
    expect(seen).toEqual(["good"]);
    expect(errors).toContain("damaged job journal file moved aside");
    expect(await readdir(path.join(stateDir, "summarizer", "damaged"))).toEqual([
      "000000000007-0badf00d.json",
    ]);
  });
});
