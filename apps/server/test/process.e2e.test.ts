import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { formatSessionKey, sessionKeyToFileStem } from "@almanac/core";
import { script } from "@almanac/testkit";
import type OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createProcessHarness, spawnServer, waitFor } from "./server-process.js";
import { readTranscriptLines } from "./test-server.js";

const harness = createProcessHarness("almanac-process-", { ALMANAC_SHUTDOWN_DEADLINE_MS: "5000" });
beforeEach(() => harness.setUp());
afterEach(() => harness.tearDown());

const ask = (client: OpenAI, content: string) =>
  client.chat.completions.create({ model: "almanac", user: "crash", messages: [{ role: "user", content }] });

describe("the server process", () => {
  it("resumes a conversation with nothing lost after SIGKILL in the middle of a turn", async () => {
    const first = await harness.start();
    harness.llm.enqueue(script.text("Noted: the deploy key is K-77."));
    await ask(first.client, "The deploy key is K-77.");
    harness.llm.enqueue(script.hang());
    const inFlight = ask(first.client, "Also remember the port 9443.").catch((error: unknown) => error);
    await waitFor(
      () => harness.llm.chatRequests().length === 2,
      10_000,
      "the second turn to reach the model",
    );
    first.server.child.kill("SIGKILL");
    await first.server.exited;
    await inFlight;

    const second = await harness.start();
    harness.llm.setFallback(() => script.text("K-77 and 9443."));
    const reply = await ask(second.client, "What did I tell you?");
    expect(reply.choices[0]?.message.content).toBe("K-77 and 9443.");
    const resumed = harness.llm
      .chatRequests()
      .at(-1)
      ?.messages.map((message) => `${message.role}:${String(message.content)}`);
    expect(resumed?.slice(1)).toEqual([
      "user:The deploy key is K-77.",
      "assistant:Noted: the deploy key is K-77.",
      "user:Also remember the port 9443.",
      "user:What did I tell you?",
    ]);
    const stem = sessionKeyToFileStem(
      formatSessionKey({ channel: "api", account: "default", kind: "api", id: "crash" }),
    );
    const transcript = await readTranscriptLines(harness.home, stem);
    expect(transcript.map((line) => line.text)).toEqual([
      "The deploy key is K-77.",
      "Noted: the deploy key is K-77.",
      "Also remember the port 9443.",
      "What did I tell you?",
      "K-77 and 9443.",
    ]);
    expect(harness.llm.rejections()).toEqual([]);
    const snapshot = JSON.parse(await readFile(join(harness.home, "sessions", `${stem}.json`), "utf8")) as {
      stats: { openTurn?: unknown };
    };
    expect(snapshot.stats.openTurn).toBeUndefined();
  }, 60_000);

  it("finishes a running turn on SIGTERM, then exits 0", async () => {
    const { server, client } = await harness.start();
    harness.llm.enqueue({ ...script.text("finished in time"), delayMs: 800 });
    const pending = ask(client, "slow question");
    await waitFor(() => harness.llm.chatRequests().length === 1, 10_000, "the turn to reach the model");
    server.child.kill("SIGTERM");
    const reply = await pending;
    expect(reply.choices[0]?.message.content).toBe("finished in time");
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain('"msg":"stopped"');
  }, 60_000);

  it("refuses to start on a bad configuration value and names the key", async () => {
    await expect(spawnServer({ ...harness.env(), ALMANAC_PORT: "not-a-port" }, 10_000)).rejects.toThrow(
      /ALMANAC_PORT = "not-a-port" \(environment variable; config key server\.port\): expected a number/,
    );
  }, 30_000);

  it("refuses a second server on the same data directory, and takes over the lock of a killed one", async () => {
    const first = await harness.start();
    await expect(spawnServer(harness.env(), 15_000)).rejects.toThrow(
      /Another Almanac \(pid \d+ on .*\) is using/,
    );
    first.server.child.kill("SIGKILL");
    await first.server.exited;
    const second = await harness.start();
    expect((await fetch(`${second.server.url}/healthz`)).status).toBe(200);
  }, 60_000);
});
