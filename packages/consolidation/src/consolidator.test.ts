import { readdir } from "node:fs/promises";
import * as path from "node:path";
import { isPrivateMemoryPath, normalizePhrase } from "@almanac/memory-files";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFixture, type Fixture, ManualClock } from "../test/fixture.js";
import { CONSOLIDATION_PROMPT } from "./consolidation-prompt.js";

let fixture: Fixture;

beforeEach(async () => {
  fixture = await createFixture();
});

afterEach(async () => {
  await fixture.close();
});

/** 2026-12-01 03:30 UTC: the night after the logs of the tests. */
const NIGHT = Date.UTC(2026, 11, 1, 3, 30);

const read = () => script.toolCalls([{ name: "read_memory", arguments: {} }]);
const edit = (oldText: string, newText: string) =>
  script.toolCalls([{ name: "edit_memory", arguments: { old_text: oldText, new_text: newText } }]);

function userText(request: RecordedChatRequest | undefined): string {
  return String(request?.messages.find((message) => message.role === "user")?.content ?? "");
}

function toolResults(request: RecordedChatRequest | undefined): string[] {
  return (request?.messages ?? [])
    .filter((message) => message.role === "tool")
    .map((message) => String(message.content));
}

describe("Consolidator", () => {
  it("replaces a changed fact with its newest value and date, and records the change in the day's log", async () => {
    await fixture.write(
      "MEMORY.md",
      "# Memory\n\n## About me\n- Lives in Paris (since 2026-01-10)\n- Likes tea\n",
    );
    await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 09:00 Said they moved to Lyon today.\n");
    fixture.llm.enqueue(
      read(),
      edit("- Lives in Paris (since 2026-01-10)", "- Lives in Lyon (since 2026-11-30)"),
      script.text("Updated where they live."),
    );
    const consolidator = fixture.consolidator({ clock: new ManualClock(NIGHT) });
    await consolidator.start();
    const run = await consolidator.request("request");
    await consolidator.whenIdle();

    expect(await fixture.read("MEMORY.md")).toBe(
      "# Memory\n\n## About me\n- Lives in Lyon (since 2026-11-30)\n- Likes tea\n",
    );
    expect(await fixture.read("memory/2026-12-01.md")).toBe(
      '# 2026-12-01\n- 03:30 Consolidated memory: 1 change\n  - replaced "Lives in Paris (since 2026-01-10)" with "Lives in Lyon (since 2026-11-30)"\n',
    );
    const [first] = fixture.llm.chatRequests();
    expect(first?.messages[0]).toMatchObject({ role: "system", content: CONSOLIDATION_PROMPT });
    expect(userText(first)).toContain("Today is 2026-12-01 (UTC). MEMORY.md's budget: 2000 tokens.");
    expect(userText(first)).toContain(
      "### memory/2026-11-30.md (2026-11-30)\n- 09:00 Said they moved to Lyon today.",
    );
    expect(toolResults(fixture.llm.chatRequests()[1])[0]).toContain("MEMORY.md: 5 lines, ");
    const status = await consolidator.status();
    expect(status.runs[0]).toMatchObject({
      id: run.id,
      trigger: "request",
      state: "done",
      attempts: 1,
      outcome: {
        note: "Updated where they live.",
        changes: ['replaced "Lives in Paris (since 2026-01-10)" with "Lives in Lyon (since 2026-11-30)"'],
        changedFiles: ["MEMORY.md"],
        logs: ["memory/2026-11-30.md"],
      },
    });
    expect(status.runs[0]).not.toHaveProperty("commit");

    // Nothing new since (its own entry in today's log is not read back): no model call, nothing written.
    await consolidator.request("request");
    await consolidator.whenIdle();
    expect(fixture.llm.chatRequests()).toHaveLength(3);
    expect((await consolidator.status()).runs[0]?.outcome?.note).toBe(
      "Nothing new in the daily logs since the last consolidation.",
    );
  });

  it("merges duplicate bullets into one that keeps every detail", async () => {
    await fixture.write(
      "MEMORY.md",
      "# Memory\n\n## Food\n- Likes tea\n- Drinks tea every morning\n- Vegetarian\n",
    );
    await fixture.write(
      "memory/2026-11-30.md",
      "# 2026-11-30\n- 08:00 Mentioned the morning tea is green tea.\n",
    );
    fixture.llm.enqueue(
      read(),
      edit("- Likes tea\n- Drinks tea every morning\n", "- Drinks green tea every morning\n"),
      script.text("Merged the two tea bullets."),
    );
    const consolidator = fixture.consolidator({ clock: new ManualClock(NIGHT) });
    await consolidator.start();
    await consolidator.request("request");
    await consolidator.whenIdle();

    expect(await fixture.read("MEMORY.md")).toBe(
      "# Memory\n\n## Food\n- Drinks green tea every morning\n- Vegetarian\n",
    );
    expect((await consolidator.status()).runs[0]?.outcome?.changes).toEqual([
      'replaced "Likes tea", "Drinks tea every morning" with "Drinks green tea every morning"',
    ]);
  });

  it("keeps MEMORY.md within its budget by moving a section to a topic file that search indexes", async () => {
    const projects = Array.from(
      { length: 12 },
      (_, index) =>
        `- Project ${index}: renovate the ${["attic", "garage", "shed"][index % 3]} with budget ${index * 500} EUR`,
    );
    const memory = `# Memory\n\n## About me\n- Lives in Lyon\n\n## Projects\n${projects.join("\n")}\n\n## Food\n- Vegetarian\n`;
    await fixture.write("MEMORY.md", memory);
    fixture.llm.enqueue(
      read(),
      script.toolCalls([
        { name: "move_section_to_topic", arguments: { heading: "Projects", topic: "projects" } },
      ]),
      script.text("Moved the projects to their own file."),
    );
    const consolidator = fixture.consolidator({ clock: new ManualClock(NIGHT), budgetTokens: 60 });
    await consolidator.start();
    await consolidator.request("request");
    await consolidator.whenIdle();

    // No new logs, but over the budget: a pass that only makes it fit.
    const [first] = fixture.llm.chatRequests();
    expect(userText(first)).toMatch(/MEMORY\.md is \d+ tokens, over its budget/);
    expect(await fixture.read("MEMORY.md")).toBe(
      "# Memory\n\n## About me\n- Lives in Lyon\n\n## Projects\n- More in memory/topics/projects.md\n\n## Food\n- Vegetarian\n",
    );
    expect(await fixture.read("memory/topics/projects.md")).toBe(
      `# projects\n\n## Projects\n${projects.join("\n")}\n`,
    );
    expect(isPrivateMemoryPath("memory/topics/projects.md")).toBe(true);
    const outcome = (await consolidator.status()).runs[0]?.outcome;
    expect(outcome?.changedFiles).toEqual(["memory/topics/projects.md", "MEMORY.md"]);
    expect(outcome?.changes).toEqual(['moved "Projects" (12 more lines) to memory/topics/projects.md']);
    expect(outcome?.note).toBe("Moved the projects to their own file.");
  });

  it("refuses an edit that drops most of the memory, and the agent sees why", async () => {
    const facts = Array.from({ length: 20 }, (_, index) => `- Fact number ${index} about the garden`);
    await fixture.write("MEMORY.md", `# Memory\n\n## Garden\n${facts.join("\n")}\n`);
    await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 10:00 Planted tulips.\n");
    fixture.llm.enqueue(
      read(),
      edit(`${facts.join("\n")}\n`, "- Planted tulips\n"),
      script.text("Nothing changed after all."),
    );
    const consolidator = fixture.consolidator({ clock: new ManualClock(NIGHT) });
    await consolidator.start();
    await consolidator.request("request");
    await consolidator.whenIdle();

    expect(toolResults(fixture.llm.chatRequests()[2]).at(-1)).toContain("memory.shrink_refused");
    expect(await fixture.read("MEMORY.md")).toBe(`# Memory\n\n## Garden\n${facts.join("\n")}\n`);
    expect((await consolidator.status()).runs[0]).toMatchObject({
      state: "done",
      outcome: { changedFiles: [] },
    });
  });

  it("never commits a line the owner asked to forget, and never shows it the agent", async () => {
    await fixture.write("MEMORY.md", "# Memory\n\n## About me\n- Lives in Paris\n");
    await fixture.write(
      "memory/2026-11-30.md",
      "# 2026-11-30\n- 09:00 Moved to Lyon.\n- 09:05 Gym locker code 5521, keep it safe.\n",
    );
    // The agent writes it back anyway (a model that remembered it from elsewhere).
    fixture.llm.enqueue(
      read(),
      edit("- Lives in Paris", "- Lives in Lyon (since 2026-11-30)\n- Gym locker code 5521"),
      script.text("Updated; noted the gym locker code 5521."),
    );
    const consolidator = fixture.consolidator({
      clock: new ManualClock(NIGHT),
      forgotten: () => [normalizePhrase("LOCKER code 5521")],
    });
    await consolidator.start();
    await consolidator.request("request");
    await consolidator.whenIdle();

    expect(userText(fixture.llm.chatRequests()[0])).not.toContain("5521");
    expect(await fixture.read("MEMORY.md")).toBe(
      "# Memory\n\n## About me\n- Lives in Lyon (since 2026-11-30)\n",
    );
    const log = await fixture.read("memory/2026-12-01.md");
    expect(log).toContain('replaced "Lives in Paris" with "Lives in Lyon (since 2026-11-30)"');
    expect(log).not.toContain("5521");
    const status = JSON.stringify(await consolidator.status());
    expect(status).not.toContain("5521");
    expect(JSON.stringify(await fixture.journal())).not.toContain("5521");
  });

  it("reads only what a log gained since the last run, and a log edited otherwise whole", async () => {
    await fixture.write("MEMORY.md", "# Memory\n\n## About me\n- Lives in Lyon\n");
    await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 09:00 Started learning Italian.\n");
    const clock = new ManualClock(NIGHT);
    const consolidator = fixture.consolidator({ clock });
    await consolidator.start();
    fixture.llm.enqueue(
      read(),
      script.toolCalls([
        { name: "add_to_memory", arguments: { text: "- Learning Italian", heading: "About me" } },
      ]),
      script.text("Added."),
    );
    await consolidator.request("request");
    await consolidator.whenIdle();
    expect(await fixture.read("MEMORY.md")).toBe(
      "# Memory\n\n## About me\n- Lives in Lyon\n- Learning Italian\n",
    );

    await fixture.write(
      "memory/2026-11-30.md",
      "# 2026-11-30\n- 09:00 Started learning Italian.\n- 21:00 Booked a trip to Rome in May.\n",
    );
    fixture.llm.enqueue(script.text("Nothing lasting."));
    await consolidator.request("request");
    await consolidator.whenIdle();
    const second = userText(fixture.llm.chatRequests()[3]);
    expect(second).toContain(
      "### memory/2026-11-30.md (2026-11-30, added since the last consolidation)\n- 21:00 Booked a trip to Rome in May.",
    );
    expect(second).not.toContain("Started learning Italian");

    await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 09:00 Started learning Spanish.\n");
    fixture.llm.enqueue(script.text("Nothing lasting."));
    await consolidator.request("request");
    await consolidator.whenIdle();
    expect(userText(fixture.llm.chatRequests()[4])).toContain(
      "### memory/2026-11-30.md (2026-11-30)\n- 09:00 Started learning Spanish.",
    );
    // No file written by the runs that changed nothing.
    expect(await readdir(path.join(fixture.workspace, "memory"))).toEqual(["2026-11-30.md", "2026-12-01.md"]);
  });

  it("reads the logs of the last 31 days on a first run, not years of them", async () => {
    await fixture.write("memory/2026-10-30.md", "# 2026-10-30\n- 09:00 Bought a red bicycle.\n");
    await fixture.write("memory/2026-10-31.md", "# 2026-10-31\n- 09:00 Sold the red bicycle.\n");
    await fixture.write("memory/notes/2026-11-30.md", "# A note\n- Not a daily log.\n");
    await fixture.write(
      "shared/discord-default-group-1/2026-11-30.md",
      "# 2026-11-30\n- 09:00 A group's plans.\n",
    );
    fixture.llm.enqueue(script.text("Nothing lasting."));
    const consolidator = fixture.consolidator({ clock: new ManualClock(NIGHT) });
    await consolidator.start();
    await consolidator.request("request");
    await consolidator.whenIdle();
    const input = userText(fixture.llm.chatRequests()[0]);
    expect(input).toContain("Sold the red bicycle");
    expect(input).not.toContain("Bought a red bicycle");
    expect(input).not.toContain("Not a daily log");
    expect(input).not.toContain("A group's plans");
    expect((await consolidator.status()).runs[0]?.outcome?.logs).toEqual(["memory/2026-10-31.md"]);
  });
});
