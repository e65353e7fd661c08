import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createProcessHarness, waitFor } from "./server-process.js";
import { isSummarizerRequest, TEST_TOKEN } from "./test-server.js";

const TIME_ZONE = "Europe/Berlin";
const harness = createProcessHarness("almanac-summarizer-crash-", { ALMANAC_TIME_ZONE: TIME_ZONE });
beforeEach(() => harness.setUp());
afterEach(() => harness.tearDown());

const isSummarizer = isSummarizerRequest;
/** The fact a summarizer job stores: taken from the conversation it was given. */
function factOf(request: RecordedChatRequest): string {
  const text = JSON.stringify(request.messages);
  return /fact-[a-z]+/.exec(text)?.[0] ?? "fact-unknown";
}

describe("the summarizer across a server crash", () => {
  it("completes a running and a pending job exactly once after SIGKILL", async () => {
    let hang = true;
    harness.llm.setFallback((request) => {
      if (!isSummarizer(request)) return script.text("noted");
      if (hang) return script.hang();
      const last = request.messages.at(-1);
      if (last?.role === "tool") return script.text("Stored.");
      return script.toolCalls([
        { name: "append_day_log", arguments: { text: `- Remember ${factOf(request)}.` } },
      ]);
    });
    const first = await harness.start();
    const say = (user: string, content: string) =>
      first.client.chat.completions.create({ model: "almanac", user, messages: [{ role: "user", content }] });
    await say("one", "Please keep fact-alpha in mind.");
    await say("one", "/new");
    await waitFor(() => harness.llm.chatRequests().some(isSummarizer), 10_000, "the first job to be running");
    await say("two", "Please keep fact-beta in mind.");
    await say("two", "/new");
    // Job one is running (its model call hangs), job two is pending: kill the server now.
    first.server.child.kill("SIGKILL");
    await first.server.exited;

    hang = false;
    const second = await harness.start();
    const adminUrl = `${second.server.url}/api/summarizer/jobs`;
    let done = 0;
    for (let attempt = 0; attempt < 200 && done < 2; attempt += 1) {
      const body = (await (
        await fetch(adminUrl, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })
      ).json()) as {
        stats: { done: number };
      };
      done = body.stats.done;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(done).toBe(2);
    const date = new Intl.DateTimeFormat("en-CA", {
      timeZone: TIME_ZONE,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    }).format(new Date());
    const log = await readFile(join(harness.home, "workspace", "memory", `${date}.md`), "utf8");
    expect(log.match(/fact-alpha/g)).toHaveLength(1);
    expect(log.match(/fact-beta/g)).toHaveLength(1);
  }, 60_000);
});
