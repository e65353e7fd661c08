import { sessionKeyToFileStem } from "@almanac/core";
import { lastUserText, script } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createProcessHarness, waitFor } from "./server-process.js";
import { readTranscriptLines, TEST_TOKEN } from "./test-server.js";

const harness = createProcessHarness("almanac-tasks-crash-");
beforeEach(() => harness.setUp());
afterEach(() => harness.tearDown());

const SESSION = "api:default:api:crash";

async function api(url: string, path: string, init: RequestInit = {}): Promise<unknown> {
  const response = await fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
  });
  return response.json();
}

interface Firing {
  readonly state: string;
  readonly late: boolean;
}

async function firingsOf(url: string): Promise<Firing[]> {
  return ((await api(url, "/api/tasks/firings")) as { firings: Firing[] }).firings;
}

async function transcriptReplies(): Promise<string[]> {
  const lines = await readTranscriptLines(harness.home, sessionKeyToFileStem(SESSION));
  return lines.filter((line) => line.role === "assistant").map((line) => line.text);
}

describe("a reminder across a SIGKILL", () => {
  it("killed between the claim and the delivery: the turn runs again after the restart, delivered once", async () => {
    const first = await harness.start();
    let hang = true;
    harness.llm.setFallback((request) => {
      if (lastUserText(request).startsWith("[Scheduled task"))
        return hang ? script.hang() : script.text("Stretch now.");
      return script.text("ok");
    });
    await api(first.server.url, "/api/tasks", {
      method: "POST",
      body: JSON.stringify({ sessionKey: SESSION, instruction: "Remind them to stretch.", in: "1s" }),
    });
    await waitFor(
      () => harness.llm.chatRequests().some((request) => lastUserText(request).startsWith("[Scheduled task")),
      10_000,
      "the task's turn to reach the model",
    );
    expect((await firingsOf(first.server.url))[0]?.state).toBe("claimed");
    first.server.child.kill("SIGKILL");
    await first.server.exited;

    hang = false;
    const second = await harness.start();
    await waitFor(
      async () => (await firingsOf(second.server.url))[0]?.state === "delivered",
      15_000,
      "the firing to be delivered after the restart",
    );
    const firings = await firingsOf(second.server.url);
    expect(firings).toHaveLength(1);
    expect((await transcriptReplies()).filter((text) => text === "Stretch now.")).toHaveLength(1);
    expect(harness.llm.rejections()).toEqual([]);
  }, 60_000);

  it("killed before it was due: the restart runs it once, and a later restart repeats nothing", async () => {
    const first = await harness.start();
    harness.llm.setFallback((request) =>
      script.text(lastUserText(request).startsWith("[Scheduled task") ? "Stretch now." : "ok"),
    );
    await api(first.server.url, "/api/tasks", {
      method: "POST",
      body: JSON.stringify({ sessionKey: SESSION, instruction: "Remind them to stretch.", in: "2s" }),
    });
    first.server.child.kill("SIGKILL");
    await first.server.exited;
    await new Promise((resolve) => setTimeout(resolve, 2_500));

    const second = await harness.start();
    await waitFor(
      async () => (await firingsOf(second.server.url))[0]?.state === "delivered",
      15_000,
      "the missed reminder to be delivered",
    );
    second.server.child.kill("SIGTERM");
    await second.server.exited;
    const third = await harness.start();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await firingsOf(third.server.url)).toHaveLength(1);
    expect((await transcriptReplies()).filter((text) => text === "Stretch now.")).toHaveLength(1);
  }, 60_000);
});
