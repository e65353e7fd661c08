import { fileURLToPath } from "node:url";
import { MISSING_TOOL_RESULT_TEXT } from "@almanac/core";
import { script } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createProcessHarness, waitFor } from "./server-process.js";
import { TEST_TOKEN } from "./test-server.js";

const EVERYTHING_SERVER = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

const harness = createProcessHarness("almanac-approval-crash-", {
  ALMANAC_MCP_SERVERS: JSON.stringify({
    everything: { command: process.execPath, args: [EVERYTHING_SERVER] },
  }),
});
beforeEach(() => harness.setUp());
afterEach(() => harness.tearDown());

async function api(url: string, path: string): Promise<unknown> {
  return (await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).json();
}

describe("an approval pending when the server is killed", () => {
  it("is closed at the next start, the call answered as not run, and the conversation goes on", async () => {
    const first = await harness.start();
    await waitFor(
      async () =>
        ((await api(first.server.url, "/api/tools")) as { mcpServers: Array<{ state: string }> })
          .mcpServers[0]?.state === "ready",
      20_000,
      "the MCP server to be ready",
    );
    harness.llm.enqueue(script.toolCalls([{ name: "mcp__everything__get-sum", arguments: { a: 1, b: 2 } }]));
    const inFlight = first.client.chat.completions
      .create({ model: "almanac", user: "crash", messages: [{ role: "user", content: "Add 1 and 2." }] })
      .catch((error: unknown) => error);
    let id = "";
    await waitFor(
      async () => {
        const body = (await api(first.server.url, "/api/approvals")) as { pending: Array<{ id: string }> };
        id = body.pending[0]?.id ?? "";
        return id !== "";
      },
      10_000,
      "the approval to be pending",
    );
    first.server.child.kill("SIGKILL");
    await first.server.exited;
    await inFlight;

    const second = await harness.start();
    const history = (await api(second.server.url, "/api/approvals")) as {
      pending: unknown[];
      approvals: Array<{ id: string; state: string; reason?: string }>;
    };
    expect(history.pending).toEqual([]);
    expect(history.approvals.find((approval) => approval.id === id)).toMatchObject({
      state: "closed",
      reason: "the server restarted before the owner answered",
    });
    // The next turn sends a valid history: the call has a result that says it did not complete.
    harness.llm.setFallback(() => script.text("Sorry, that call did not run. 1 + 2 = 3."));
    const reply = await second.client.chat.completions.create({
      model: "almanac",
      user: "crash",
      messages: [{ role: "user", content: "Did it work?" }],
    });
    expect(reply.choices[0]?.message.content).toBe("Sorry, that call did not run. 1 + 2 = 3.");
    expect(harness.llm.rejections()).toEqual([]);
    const sent = harness.llm.chatRequests().at(-1)?.messages ?? [];
    const result = sent.find((message) => message.role === "tool");
    expect(String(result?.content)).toBe(MISSING_TOOL_RESULT_TEXT);
  }, 90_000);
});
