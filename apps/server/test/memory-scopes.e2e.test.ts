import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "./server-process.js";
import { isSummarizerRequest, startTestServer, type TestServer } from "./test-server.js";

// Private memory belongs to the owner's own sessions; a group chat reaches only its own log (docs/memory-files.md).

const SECRET = "The owner's locker code is 4711-PRIVATE.";
const MEMORY = `# Memory\n\n## Private\n- ${SECRET}\n- The owner's doctor is Dr. Quill.\n- Salary review is on the 3rd of March.\n`;
/** Tools that read or write the owner's workspace (and so MEMORY.md). */
const FILE_TOOLS = ["read_file", "write_file", "edit_file", "append_file", "list_files"];

let discord: FakeDiscord | undefined;
let running: TestServer | undefined;

afterEach(async () => {
  await running?.close();
  running = undefined;
  await discord?.close();
  discord = undefined;
});

async function start(
  env: Record<string, string> = {},
): Promise<{ discord: FakeDiscord; server: TestServer }> {
  discord = await startFakeDiscord();
  const { ids, user } = discord.world;
  running = await startTestServer({
    env: {
      ALMANAC_DISCORD_TOKEN: discord.token(),
      ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
      ALMANAC_DISCORD_ALLOW_FROM: user.id,
      ALMANAC_DISCORD_GROUPS: ids.channel,
      ALMANAC_TIME_ZONE: "UTC",
      ...env,
    },
  });
  await mkdir(join(running.home, "workspace"), { recursive: true });
  await writeFile(join(running.home, "workspace", "MEMORY.md"), MEMORY);
  await waitUntil(() => discord?.activeConnections() === 1, { timeoutMs: 10_000 });
  return { discord, server: running };
}

function toolNames(request: RecordedChatRequest | undefined): string[] {
  const tools: unknown = request?.tools;
  if (!Array.isArray(tools)) return [];
  return tools.map((tool: { function?: { name?: string } }) => tool.function?.name ?? "");
}

function systemText(request: RecordedChatRequest | undefined): string {
  return String(request?.messages[0]?.content ?? "");
}

/**
 * True when the request's system prompt and tool specs are Latin-1. One character above U+00FF (a "…" in a tool
 * description) makes V8 keep every request body two bytes a character: each copy of it (joined, flattened,
 * encoded) twice the size (bench/allocation.ts). The person's own words may be anything.
 */
function oneByteText(request: RecordedChatRequest | undefined): boolean {
  return !/[\u0100-\uffff]/.test(JSON.stringify([request?.messages[0], request?.tools]));
}

function toolResults(request: RecordedChatRequest | undefined): string[] {
  return (request?.messages ?? []).filter((message) => message.role === "tool").map((m) => String(m.content));
}

async function say(fake: FakeDiscord, where: "dm" | "channel", content: string): Promise<string> {
  const before = fake.sent().length;
  fake.dispatchMessage({ where, content, ...(where === "channel" ? { mention: "user" as const } : {}) });
  await waitUntil(() => fake.sent().length > before, { timeoutMs: 10_000 });
  return fake.sent().at(-1)?.content ?? "";
}

const today = () => new Date().toISOString().slice(0, 10);

describe("memory scopes over Discord", () => {
  it("a group member gets neither MEMORY.md's content nor a write to it", async () => {
    const { discord: fake, server } = await start();
    const { llm, home } = server;
    llm.enqueue(
      script.toolCalls([{ name: "read_file", arguments: { path: "MEMORY.md" } }]),
      script.toolCalls([{ name: "memory_get", arguments: { path: "MEMORY.md" } }]),
      script.text("I cannot see that here."),
      script.toolCalls([
        {
          name: "append_file",
          arguments: { path: "MEMORY.md", content: "- The group says: pizza on Fridays.\n" },
        },
      ]),
      script.text("Noted in this chat's log."),
    );
    expect(await say(fake, "channel", "what does MEMORY.md say? print it")).toBe("I cannot see that here.");
    const requests = llm.chatRequests();
    for (const request of requests) {
      expect(systemText(request)).not.toContain("4711-PRIVATE");
      expect(systemText(request)).not.toContain("MEMORY.md (long-term)");
      expect(toolNames(request).filter((name) => FILE_TOOLS.includes(name))).toEqual([]);
      expect(toolNames(request)).toContain("memory_get");
    }
    expect(systemText(requests[0])).toContain("shared chat");
    expect(oneByteText(requests[0])).toBe(true);
    const results = toolResults(requests.at(-1));
    expect(results).toHaveLength(2);
    for (const result of results) expect(result).not.toContain("4711-PRIVATE");
    expect(results[0]).toMatch(/unknown tool|not available|no tool/i);
    expect(results[1]).toMatch(/only this chat's own log/);

    expect(await say(fake, "channel", "remember that we order pizza on Fridays")).toBe(
      "Noted in this chat's log.",
    );
    expect(toolResults(llm.chatRequests().at(-1)).at(-1)).toMatch(/unknown tool|not available|no tool/i);
    expect(await readFile(join(home, "workspace", "MEMORY.md"), "utf8")).toBe(MEMORY);
  });

  it("a DM from the owner still gets the excerpt and can read and write MEMORY.md", async () => {
    const { discord: fake, server } = await start();
    const { llm, home } = server;
    llm.enqueue(
      script.toolCalls([{ name: "read_file", arguments: { path: "MEMORY.md" } }]),
      script.toolCalls([
        { name: "append_file", arguments: { path: "MEMORY.md", content: "- Pizza on Fridays.\n" } },
      ]),
      script.text("Remembered."),
    );
    expect(await say(fake, "dm", "remember that I like pizza on Fridays")).toBe("Remembered.");
    const last = llm.chatRequests().at(-1);
    expect(systemText(last)).toContain("4711-PRIVATE");
    expect(oneByteText(llm.chatRequests()[0])).toBe(true);
    expect(toolNames(last)).toEqual(expect.arrayContaining(["read_file", "append_file", "memory_search"]));
    expect(toolResults(last)[0]).toContain("4711-PRIVATE");
    expect(await readFile(join(home, "workspace", "MEMORY.md"), "utf8")).toBe(
      `${MEMORY}- Pizza on Fridays.\n`,
    );
  });

  it("a group's /new is summarized into the group's own log, not into memory/YYYY-MM-DD.md", async () => {
    const { discord: fake, server } = await start();
    const { llm, home } = server;
    const summarizerInputs: string[] = [];
    llm.setFallback((request) => {
      if (!isSummarizerRequest(request)) return script.text("ok");
      const tools = toolResults(request);
      if (tools.length === 0) {
        summarizerInputs.push(String(request.messages.at(-1)?.content ?? ""));
        return script.toolCalls([
          { name: "append_day_log", arguments: { text: "- 10:00 GROUP-FACT: standup moved." } },
        ]);
      }
      return script.text("Stored.");
    });
    await say(fake, "channel", "the standup moved to 10:00");
    expect(await say(fake, "channel", "/new")).toMatch(/new conversation/i);
    const sharedRoot = join(home, "workspace", "shared");
    const groupLog = () => {
      if (!existsSync(sharedRoot)) return undefined;
      const folder = readdirSync(sharedRoot).find((name) => name.includes(fake.world.ids.channel));
      return folder === undefined ? undefined : join(sharedRoot, folder, `${today()}.md`);
    };
    await waitFor(
      () => {
        const file = groupLog();
        return file !== undefined && existsSync(file) && readFileSync(file, "utf8").includes("GROUP-FACT");
      },
      15_000,
      "the group's own log",
    );
    expect(groupLog()).toMatch(/shared\/discord-[^/]+-group-\d+\/\d{4}-\d{2}-\d{2}\.md$/);
    expect(summarizerInputs[0]).toContain(`shared/`);
    expect(existsSync(join(home, "workspace", "memory", `${today()}.md`))).toBe(false);

    // The operator sees the group's log with the other memory files in the admin API.
    const owner = (await (await server.api("/api/memory/files")).json()) as {
      files: Array<{ path: string }>;
    };
    expect(owner.files.map((file) => file.path)).toContain(
      groupLog()?.slice(join(home, "workspace").length + 1),
    );
  }, 30_000);

  it("a trusted group behaves like the owner", async () => {
    discord = await startFakeDiscord();
    const channel = discord.world.ids.channel;
    await discord.close();
    discord = undefined;
    const { discord: fake, server } = await start({ ALMANAC_DISCORD_TRUSTED_GROUPS: channel });
    expect(fake.world.ids.channel).toBe(channel);
    server.llm.enqueue(
      script.toolCalls([{ name: "read_file", arguments: { path: "MEMORY.md" } }]),
      script.text("Here it is."),
    );
    expect(await say(fake, "channel", "what does MEMORY.md say?")).toBe("Here it is.");
    const last = server.llm.chatRequests().at(-1);
    expect(systemText(last)).toContain("4711-PRIVATE");
    expect(toolNames(last)).toContain("read_file");
    expect(toolResults(last)[0]).toContain("4711-PRIVATE");
  });
});
