import { mkdir, readFile, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "./server-process.js";
import { isSummarizerRequest, startTestServer, type TestServer } from "./test-server.js";
import { filesUnder, readIfPresent } from "./workspace-files.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function chat(server: TestServer, user: string, content: string): Promise<string> {
  const reply = await server.client.chat.completions.create({
    model: "almanac",
    user,
    messages: [{ role: "user", content }],
  });
  return reply.choices[0]?.message.content ?? "";
}

async function search(server: TestServer, query: string): Promise<string[]> {
  const body = (await (await server.api(`/api/memory/search?q=${encodeURIComponent(query)}`)).json()) as {
    results: Array<{ snippet: string }>;
  };
  return body.results.map((result) => result.snippet);
}

describe("forget means forget", () => {
  it("a fact asked to be forgotten leaves MEMORY.md, the daily logs and the index, and is not written back", async () => {
    const server = await startTestServer();
    running = server;
    const workspace = join(server.home, "workspace");
    await mkdir(join(workspace, "memory"), { recursive: true });
    await writeFile(
      join(workspace, "MEMORY.md"),
      "# Memory\n\n- The garage safe code is 4711.\n- Prefers tea over coffee.\n",
    );
    await writeFile(
      join(workspace, "memory", "2026-11-30.md"),
      "# 2026-11-30\n\n- 09:10 Told the assistant the garage safe code is 4711.\n- 09:12 Planned the garden.\n",
    );
    await waitFor(async () => (await search(server, "4711")).length > 0, 10_000, "the fact to be indexed");

    server.llm.setFallback((request) => {
      if (isSummarizerRequest(request)) {
        // A summarizer merging a transcript that still holds the fact tries to write it back.
        const last = request.messages.at(-1);
        if (last?.role === "tool") return script.text("Stored.");
        return script.toolCalls([
          {
            name: "append_day_log",
            arguments: { text: "- 10:00 The garage safe code is 4711.\n- 10:01 Asked to forget something." },
          },
        ]);
      }
      const last = request.messages.at(-1);
      if (last?.role === "tool") return script.text(String(last.content));
      if (/forget/i.test(lastUserText(request)))
        return script.toolCalls([{ name: "memory_forget", arguments: { phrase: "safe code is 4711" } }]);
      return script.text("Noted.");
    });
    await chat(server, "owner", "The garage safe code is 4711, by the way.");
    const answer = await chat(server, "owner", "Please forget the safe code.");
    expect(answer).toContain('Forgot "safe code is 4711": removed 2 lines');
    expect(answer).toContain("MEMORY.md: - The garage safe code is 4711.");
    expect(answer).toContain(
      "memory/2026-11-30.md: - 09:10 Told the assistant the garage safe code is 4711.",
    );

    // Gone from the files (the rest kept) and from search, at once.
    expect(await readFile(join(workspace, "MEMORY.md"), "utf8")).toBe(
      "# Memory\n\n- Prefers tea over coffee.\n",
    );
    expect(await readFile(join(workspace, "memory", "2026-11-30.md"), "utf8")).not.toContain("4711");
    expect(await search(server, "4711")).toEqual([]);

    // The conversation (which still holds the fact) goes to the summarizer: the fact is not written back.
    await chat(server, "owner", "/new");
    await waitFor(
      async () => {
        // Daily logs, not a durable write's hidden temp file.
        const logs = (await filesUnder(join(workspace, "memory"))).filter(
          (file) => !file.endsWith("2026-11-30.md") && !basename(file).startsWith("."),
        );
        if (logs.length === 0) return false;
        return (await readFile(logs[0] as string, "utf8")).includes("Asked to forget something");
      },
      15_000,
      "the summarizer's merge",
    );
    for (const file of [...(await filesUnder(join(workspace, "memory"))), join(workspace, "MEMORY.md")])
      expect(await readIfPresent(file), file).not.toContain("4711");
    expect(await search(server, "4711")).toEqual([]);
    const forgotten = (await (await server.api("/api/memory/forgotten")).json()) as {
      forgotten: Array<{ phrase: string; by: string }>;
    };
    expect(forgotten.forgotten).toMatchObject([{ phrase: "safe code is 4711", by: "api:default:api:owner" }]);
  }, 60_000);

  it("the REST route forgets too; a shared chat has no forget tool; a too-short phrase is refused", async () => {
    const server = await startTestServer();
    running = server;
    await mkdir(join(server.home, "workspace"), { recursive: true });
    await writeFile(
      join(server.home, "workspace", "MEMORY.md"),
      "# Memory\n\n- Locker 12 combination 3-14-15.\n",
    );
    const short = await server.api("/api/memory/forget", {
      method: "POST",
      body: JSON.stringify({ phrase: "a" }),
    });
    expect(short.status).toBe(400);
    const done = (await (
      await server.api("/api/memory/forget", { method: "POST", body: JSON.stringify({ phrase: "3-14-15" }) })
    ).json()) as { files: Array<{ path: string; removed: string[] }> };
    expect(done.files).toEqual([{ path: "MEMORY.md", removed: ["- Locker 12 combination 3-14-15."] }]);
    server.llm.setFallback(() => script.text("hi"));
    await chat(server, "owner", "hello");
    expect(JSON.stringify(server.llm.chatRequests().at(-1)?.tools)).toContain('"memory_forget"');
  }, 30_000);
});
