import { writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import * as path from "node:path";
import type { MemoryFileStore } from "@almanac/memory-files";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFixture, type Fixture, ManualClock, until } from "../test/fixture.js";

let fixture: Fixture;

beforeEach(async () => {
  fixture = await createFixture();
  await fixture.write("MEMORY.md", "# Memory\n\n## About me\n- Lives in Paris (since 2026-01-10)\n");
  await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 09:00 Said they moved to Lyon today.\n");
});

afterEach(async () => {
  await fixture.close();
});

const NIGHT = Date.UTC(2026, 11, 1, 3, 30);
const PARIS = "- Lives in Paris (since 2026-01-10)";
const LYON = "- Lives in Lyon (since 2026-11-30)";

const read = () => script.toolCalls([{ name: "read_memory", arguments: {} }]);
const moveToLyon = () =>
  script.toolCalls([{ name: "edit_memory", arguments: { old_text: PARIS, new_text: LYON } }]);

function lastToolResult(request: RecordedChatRequest): string {
  return String(request.messages.filter((message) => message.role === "tool").at(-1)?.content ?? "");
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

/**
 * A store whose writes of `blocked` never finish: the process "dies" there. `reached` settles when the write is
 * attempted, so a test edits the file only once the dying run can no longer look at it (waiting for the journal
 * alone raced: the run could still see the edit, merge again and take the next model answers).
 */
function dyingAt(
  store: MemoryFileStore,
  blocked: string,
): { store: MemoryFileStore; reached: Promise<void> } {
  let reach = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  return {
    store: {
      ...store,
      write: (relative, content, options) => {
        if (relative !== blocked) return store.write(relative, content, options);
        reach();
        return new Promise(() => {});
      },
    },
    reached,
  };
}

async function backupsOf(file: string): Promise<string[]> {
  const names = await readdir(path.join(fixture.stateDir, "backups", "memory-files")).catch(() => []);
  return names.filter((name) => name.startsWith(`${file}.`));
}

describe("Consolidator commits", () => {
  it("merges again on a person's edit made during the run, never overwriting it", async () => {
    let step = 0;
    fixture.llm.setFallback((request) => {
      step += 1;
      if (step === 2) {
        // The owner edits MEMORY.md by hand while the agent works on its staged copy.
        writeFileSync(
          path.join(fixture.workspace, "MEMORY.md"),
          `# Memory\n\n## About me\n${PARIS}\n- Has a cat named Miso\n`,
        );
      }
      if (request.messages.at(-1)?.role === "user") return read();
      if (lastToolResult(request).startsWith("[MEMORY.md")) return moveToLyon();
      return script.text("Updated where they live.");
    });
    const consolidator = fixture.consolidator({ clock: new ManualClock(NIGHT) });
    await consolidator.start();
    await consolidator.request("request");
    await consolidator.whenIdle();

    expect(await fixture.read("MEMORY.md")).toBe(
      `# Memory\n\n## About me\n${LYON}\n- Has a cat named Miso\n`,
    );
    // Two rounds of three steps; the second read saw the owner's edit.
    const requests = fixture.llm.chatRequests();
    expect(requests).toHaveLength(6);
    expect(lastToolResult(requests[4] as RecordedChatRequest)).toContain("- Has a cat named Miso");
    const [run] = (await consolidator.status()).runs;
    expect(run).toMatchObject({ state: "done", attempts: 1 });
    // The log records the change once.
    expect(count(await fixture.read("memory/2026-12-01.md"), "Consolidated memory")).toBe(1);
  });

  it("finishes a commit journaled before a crash exactly once on restart, without asking the model again", async () => {
    fixture.llm.enqueue(read(), moveToLyon(), script.text("Updated."));
    const blocked = dyingAt(fixture.store, "MEMORY.md");
    const dying = fixture.consolidator({ clock: new ManualClock(NIGHT), store: blocked.store });
    await dying.start();
    await dying.request("request");
    await blocked.reached;
    expect((await fixture.journal()).runs[0]?.commit).toBeDefined();
    expect(await fixture.read("MEMORY.md")).toContain(PARIS);
    const requestsBefore = fixture.llm.chatRequests().length;

    // A new process over the same state: the commit is finished from the journal.
    const restarted = fixture.consolidator({ clock: new ManualClock(NIGHT + 60_000) });
    await restarted.start();
    await restarted.whenIdle();

    expect(await fixture.read("MEMORY.md")).toBe(`# Memory\n\n## About me\n${LYON}\n`);
    expect(count(await fixture.read("memory/2026-12-01.md"), "Consolidated memory")).toBe(1);
    expect(fixture.llm.chatRequests()).toHaveLength(requestsBefore);
    const [run] = (await restarted.status()).runs;
    expect(run).toMatchObject({
      state: "done",
      attempts: 2,
      lastError: { code: "consolidation.interrupted" },
    });
    expect((await fixture.journal()).runs[0]).not.toHaveProperty("commit");
    // The watermark moved: nothing is folded in twice.
    await restarted.request("request");
    await restarted.whenIdle();
    expect(fixture.llm.chatRequests()).toHaveLength(requestsBefore);
  });

  it("after a crash between the file and the log entry, writes neither twice", async () => {
    fixture.llm.enqueue(read(), moveToLyon(), script.text("Updated."));
    const blocked = dyingAt(fixture.store, "memory/2026-12-01.md");
    const dying = fixture.consolidator({ clock: new ManualClock(NIGHT), store: blocked.store });
    await dying.start();
    await dying.request("request");
    await blocked.reached;
    expect(await fixture.read("MEMORY.md")).toContain(LYON);

    const restarted = fixture.consolidator({ clock: new ManualClock(NIGHT + 60_000) });
    await restarted.start();
    await restarted.whenIdle();

    expect(await fixture.read("MEMORY.md")).toBe(`# Memory\n\n## About me\n${LYON}\n`);
    expect(await backupsOf("MEMORY.md")).toHaveLength(1);
    const log = await fixture.read("memory/2026-12-01.md");
    expect(count(log, "Consolidated memory")).toBe(1);
    expect(log.startsWith("# 2026-12-01\n- 03:30 Consolidated memory: 1 change\n")).toBe(true);
  });

  it("runs again after a crash before its commit, as nothing was written", async () => {
    fixture.llm.enqueue(script.hang());
    const dying = fixture.consolidator({ clock: new ManualClock(NIGHT) });
    await dying.start();
    await dying.request("request");
    await until(async () => fixture.llm.chatRequests().length === 1, "the model call");
    expect((await fixture.journal()).runs[0]).toMatchObject({ state: "running", attempts: 1 });

    fixture.llm.reset();
    fixture.llm.enqueue(read(), moveToLyon(), script.text("Updated."));
    const restarted = fixture.consolidator({ clock: new ManualClock(NIGHT + 60_000) });
    await restarted.start();
    await restarted.whenIdle();
    expect(await fixture.read("MEMORY.md")).toBe(`# Memory\n\n## About me\n${LYON}\n`);
    expect((await restarted.status()).runs[0]).toMatchObject({ state: "done", attempts: 2 });
  });

  it("a journaled commit whose file a person edited since is merged again on their version", async () => {
    fixture.llm.enqueue(read(), moveToLyon(), script.text("Updated."));
    const blocked = dyingAt(fixture.store, "MEMORY.md");
    const dying = fixture.consolidator({ clock: new ManualClock(NIGHT), store: blocked.store });
    await dying.start();
    await dying.request("request");
    await blocked.reached;
    expect((await fixture.journal()).runs[0]?.commit).toBeDefined();
    // While the server is down, the owner edits MEMORY.md.
    await fixture.write("MEMORY.md", `# Memory\n\n## About me\n${PARIS}\n- Works at the library\n`);

    fixture.llm.enqueue(read(), moveToLyon(), script.text("Updated."));
    const restarted = fixture.consolidator({ clock: new ManualClock(NIGHT + 60_000) });
    await restarted.start();
    await restarted.whenIdle();
    expect(await fixture.read("MEMORY.md")).toBe(
      `# Memory\n\n## About me\n${LYON}\n- Works at the library\n`,
    );
    expect(count(await fixture.read("memory/2026-12-01.md"), "Consolidated memory")).toBe(1);
  });
});
