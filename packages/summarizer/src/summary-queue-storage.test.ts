import { mkdtemp, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createMessage } from "@almanac/core";
import { fillDisk, mountSmallFileSystem } from "@almanac/testkit";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SummaryJobInput, SummaryJobRunner } from "./summary-job.js";
import { createSummaryQueue, type SummaryQueue } from "./summary-queue.js";

let stateDir: string;
const queues: SummaryQueue[] = [];

beforeEach(async () => {
  stateDir = await mkdtemp(path.join(tmpdir(), "almanac-queue-storage-"));
});

afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.stop({ deadlineMs: 10 })));
  await rm(stateDir, { recursive: true, force: true });
});

const input: SummaryJobInput = {
  sessionKey: "web:local:dm:ann",
  reason: "auto",
  messages: [createMessage({ role: "user", content: "hello", timestamp: Date.UTC(2024, 4, 1, 9) })],
  createdAt: Date.UTC(2024, 4, 1, 9),
};

const diskFull = () => Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });

describe("the summary queue on a full disk", () => {
  it("never parks a job because the disk is full: no attempt is counted, it runs again once writes work", async () => {
    let runs = 0;
    const run: SummaryJobRunner = async () => {
      runs += 1;
      if (runs <= 4) throw new Error("could not write the daily log", { cause: diskFull() });
      return { note: "merged", changedFiles: ["memory/2024-05-01.md"] };
    };
    const waits: number[] = [];
    const queue = createSummaryQueue({
      stateDir,
      run,
      maxAttempts: 2,
      backoff: () => 0,
      storageRetryMs: 7_000,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    queues.push(queue);
    await queue.enqueue(input);
    await queue.start();
    await queue.idle();
    const [job] = await queue.list();
    expect(job).toMatchObject({ state: "done", attempts: 1 });
    expect(runs).toBe(5);
    // Between runs it waited for the disk (probe interval), not the model's backoff.
    expect(waits).toEqual([7_000, 7_000, 7_000, 7_000]);
  });
});

// A real full disk for the journal itself: needs root to mount a tmpfs (as in CI); skipped elsewhere.
const disk = await mountSmallFileSystem("512k", "almanac-queue-full-");
const mountPoint = disk.path;
const mountProblem = disk.problem;
afterAll(() => disk.dispose());

describe.skipIf(mountProblem !== undefined)(
  `the summary journal on a full tmpfs${mountProblem === undefined ? "" : ` (skipped: cannot mount, needs root: ${mountProblem})`}`,
  () => {
    it("keeps a job pending (not stuck running) when its journal cannot be written, and runs it when space returns", async () => {
      const filler = path.join(mountPoint, "filler.bin");
      let runs = 0;
      let probes = 0;
      const queue = createSummaryQueue({
        stateDir: mountPoint,
        run: async () => {
          runs += 1;
          // The disk fills up while the job runs: recording "done" is the write that fails.
          if (runs === 1) await fillDisk(filler);
          return { note: "merged", changedFiles: [] };
        },
        storageRetryMs: 1,
        sleep: async () => {
          probes += 1;
          expect((await queue.list())[0]?.state).toBe("pending");
          if (probes === 3) await unlink(filler);
        },
      });
      queues.push(queue);
      await queue.enqueue(input);
      await queue.start();
      await queue.idle();
      expect(probes).toBe(3);
      expect(runs).toBe(2);
      // The first run's "running" record reached the disk before it filled, so that run is counted.
      expect((await queue.list())[0]).toMatchObject({ state: "done", attempts: 2 });
    });
  },
);
