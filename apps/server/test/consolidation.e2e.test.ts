import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "./server-process.js";
import { startTestServer, type TestServer } from "./test-server.js";
import { filesUnder, readIfPresent } from "./workspace-files.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** The UTC date `days` before now: the logs of the simulated weeks lie in the past of the real clock. */
function daysAgo(days: number): string {
  return new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);
}

/** True for a request of the consolidation agent (it is the one offered MEMORY.md's tools). */
function isConsolidation(request: RecordedChatRequest): boolean {
  return JSON.stringify(request.tools ?? []).includes('"name":"read_memory"');
}

function inputOf(request: RecordedChatRequest): string {
  return String(request.messages.find((message) => message.role === "user")?.content ?? "");
}

interface SearchResult {
  readonly path: string;
  readonly snippet: string;
}

async function search(server: TestServer, query: string): Promise<SearchResult[]> {
  const body = (await (await server.api(`/api/memory/search?q=${encodeURIComponent(query)}`)).json()) as {
    results: SearchResult[];
  };
  return body.results;
}

interface Status {
  enabled: boolean;
  schedule: { at: string | null; timeZone: string } | null;
  nextRunAt: number | null;
  runs: Array<{ id: string; state: string; outcome?: { changes: string[]; changedFiles: string[] } }>;
}

async function status(server: TestServer): Promise<Status> {
  return (await (await server.api("/api/memory/consolidation")).json()) as Status;
}

/** Asks for a run and waits until it is done. */
async function consolidate(server: TestServer): Promise<Status["runs"][number]> {
  const response = await server.api("/api/memory/consolidate", { method: "POST", body: "{}" });
  expect(response.status).toBe(202);
  const { id } = (await response.json()) as { id: string };
  let run: Status["runs"][number] | undefined;
  await waitFor(
    async () => {
      run = (await status(server)).runs.find((candidate) => candidate.id === id);
      return run?.state === "done" || run?.state === "failed";
    },
    20_000,
    `consolidation run ${id}`,
  );
  expect(run?.state).toBe("done");
  return run as Status["runs"][number];
}

const PROJECTS = Array.from(
  { length: 12 },
  (_, index) =>
    `- Project ${index}: renovate the ${["attic", "cellar", "balcony"][index % 3]} for ${index * 400} EUR`,
);

describe("consolidation over simulated weeks", () => {
  it("keeps the newest value of a changed fact in MEMORY.md, and a forgotten fact nowhere", async () => {
    const server = await startTestServer({
      env: {
        ALMANAC_TIME_ZONE: "UTC",
        ALMANAC_CONSOLIDATE_AT: "off",
        // A small excerpt budget, so the first run also moves detail out of MEMORY.md.
        ALMANAC_MEMORY_CONTEXT_TOKENS: "120",
      },
    });
    running = server;
    const workspace = join(server.home, "workspace");
    const write = (relative: string, content: string) => writeFile(join(workspace, relative), content);
    const memoryFile = () => readFile(join(workspace, "MEMORY.md"), "utf8");

    // The scripted consolidation agent: reads MEMORY.md, then acts on what the input says, then stops.
    server.llm.setFallback((request) => {
      if (!isConsolidation(request)) return script.text("ok");
      const input = inputOf(request);
      const results = request.messages.filter((message) => message.role === "tool").length;
      if (results === 0) return script.toolCalls([{ name: "read_memory", arguments: {} }]);
      if (results > 1) return script.text("Done.");
      if (input.includes("over its budget"))
        return script.toolCalls([
          { name: "move_section_to_topic", arguments: { heading: "Projects", topic: "projects" } },
        ]);
      if (input.includes("moved to Lyon")) {
        return script.toolCalls([
          {
            name: "edit_memory",
            arguments: {
              old_text: `- Lives in Paris (since ${daysAgo(20)})`,
              new_text: `- Lives in Lyon (since ${daysAgo(3)})`,
            },
          },
          // A model that still remembers the forgotten fact from elsewhere writes it back.
          { name: "add_to_memory", arguments: { text: "- Gym locker code 5521", heading: "About me" } },
        ]);
      }
      return script.toolCalls([
        {
          name: "add_to_memory",
          arguments: {
            text: `- Lives in Paris (since ${daysAgo(20)})\n- Gym locker code 5521\n- Likes tea`,
            heading: "About me",
          },
        },
      ]);
    });

    expect(await status(server)).toMatchObject({
      enabled: true,
      schedule: { at: null, timeZone: "UTC" },
      nextRunAt: null,
      runs: [],
    });

    // Week 1: where Ann lives, a locker code, a preference; MEMORY.md holds a long projects list.
    await write("MEMORY.md", `# Memory\n\n## About me\n- Name: Ann\n\n## Projects\n${PROJECTS.join("\n")}\n`);
    await write(
      `memory/${daysAgo(20)}.md`,
      `# ${daysAgo(20)}\n- 09:00 Ann said she lives in Paris, near the canal.\n`,
    );
    await write(`memory/${daysAgo(19)}.md`, `# ${daysAgo(19)}\n- 18:00 Ann's gym locker code 5521.\n`);
    await write(`memory/${daysAgo(17)}.md`, `# ${daysAgo(17)}\n- 12:00 Ann likes tea.\n`);
    const first = await consolidate(server);
    expect(first.outcome?.changedFiles).toEqual(["memory/topics/projects.md", "MEMORY.md"]);
    expect(await memoryFile()).toBe(
      `# Memory\n\n## About me\n- Name: Ann\n- Lives in Paris (since ${daysAgo(20)})\n- Gym locker code 5521\n- Likes tea\n\n## Projects\n- More in memory/topics/projects.md\n`,
    );
    // What moved out of MEMORY.md is still found.
    expect((await search(server, "balcony")).map((result) => result.path)).toContain(
      "memory/topics/projects.md",
    );

    // Ann asks to forget the locker code.
    const forget = await server.api("/api/memory/forget", {
      method: "POST",
      body: JSON.stringify({ phrase: "locker code 5521" }),
    });
    expect(forget.status).toBe(200);

    // Weeks 2 and 3: she moves to Lyon.
    await write(`memory/${daysAgo(10)}.md`, `# ${daysAgo(10)}\n- 10:00 Ann is packing boxes for the move.\n`);
    await write(
      `memory/${daysAgo(3)}.md`,
      `# ${daysAgo(3)}\n- 10:00 Ann moved to Lyon today, leaving Paris.\n`,
    );
    const second = await consolidate(server);
    expect(second.outcome?.changes).toEqual([
      `replaced "Lives in Paris (since ${daysAgo(20)})" with "Lives in Lyon (since ${daysAgo(3)})"`,
    ]);

    // MEMORY.md holds the newest value and not the old one.
    const memory = await memoryFile();
    expect(memory).toContain(`- Lives in Lyon (since ${daysAgo(3)})`);
    expect(memory).not.toContain("Paris");
    // Recall gives the newest value: what search finds in MEMORY.md says Lyon, nothing there says Paris.
    const recalled = (await search(server, "Ann lives in")).filter((result) => result.path === "MEMORY.md");
    expect(recalled.length).toBeGreaterThan(0);
    expect(recalled.some((result) => result.snippet.includes("Lives in Lyon"))).toBe(true);
    expect((await search(server, "Paris")).filter((result) => result.path === "MEMORY.md")).toEqual([]);
    // The change is recorded in today's log.
    const today = await readFile(join(workspace, "memory", `${daysAgo(0)}.md`), "utf8");
    expect(today).toContain(
      `Consolidated memory: 1 change\n  - replaced "Lives in Paris (since ${daysAgo(20)})"`,
    );

    // The forgotten fact is found nowhere: no file of the workspace, no search, no run history.
    for (const file of await filesUnder(workspace))
      expect(await readIfPresent(file), file).not.toContain("5521");
    expect(await search(server, "5521")).toEqual([]);
    expect(await search(server, "locker code")).toEqual([]);
    expect(JSON.stringify(await status(server))).not.toContain("5521");
    expect(await readFile(join(server.home, "state", "consolidation", "state.json"), "utf8")).not.toContain(
      "5521",
    );
  }, 60_000);

  it("without a model, asking for a run is refused and the status says it is off", async () => {
    const server = await startTestServer({ withModel: false });
    running = server;
    const response = await server.api("/api/memory/consolidate", { method: "POST", body: "{}" });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ error: { code: "consolidation.no_model" } });
    expect(await status(server)).toMatchObject({ enabled: false, runs: [] });
  });

  it("says when the nightly run comes next, in the memory time zone", async () => {
    const server = await startTestServer({
      env: { ALMANAC_TIME_ZONE: "Asia/Shanghai", ALMANAC_CONSOLIDATE_AT: "04:15" },
    });
    running = server;
    const { schedule, nextRunAt } = await status(server);
    expect(schedule).toEqual({ at: "04:15", timeZone: "Asia/Shanghai" });
    expect(nextRunAt).toBeGreaterThan(Date.now());
    expect(nextRunAt).toBeLessThanOrEqual(Date.now() + 86_400_000);
    // 04:15 in Shanghai (UTC+8) is 20:15 UTC.
    expect(new Date(nextRunAt as number).toISOString().slice(11, 16)).toBe("20:15");
  });
});
