import { type RecordedChatRequest, script } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, TEST_MODEL_KEY, TEST_TOKEN, type TestServer } from "./test-server.js";

/**
 * The keys of a JSON object line at its top level, in order and with repeats (JSON.parse keeps only the last
 * of a repeated key, so it cannot see the problem).
 */
export function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let index = 0;
  while (index < line.length) {
    const char = line[index];
    if (char === '"') {
      let end = index + 1;
      while (end < line.length && line[end] !== '"') end += line[end] === "\\" ? 2 : 1;
      const after = line.slice(end + 1).trimStart();
      if (depth === 1 && after.startsWith(":")) keys.push(JSON.parse(line.slice(index, end + 1)) as string);
      index = end + 1;
      continue;
    }
    if (char === "{" || char === "[") depth += 1;
    if (char === "}" || char === "]") depth -= 1;
    index += 1;
  }
  return keys;
}

/** Each key that appears more than once, with the line it appears in. */
function duplicateKeys(lines: readonly string[]): string[] {
  return lines.flatMap((line) => {
    const keys = topLevelKeys(line);
    const repeated = [...new Set(keys.filter((key, position) => keys.indexOf(key) !== position))];
    return repeated.map((key) => `${key} in ${line}`);
  });
}

let discord: FakeDiscord;
let running: TestServer;
beforeAll(async () => {
  discord = await startFakeDiscord();
  running = await startTestServer({
    env: {
      ALMANAC_DISCORD_TOKEN: discord.token(),
      ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
      ALMANAC_DISCORD_ALLOW_FROM: discord.world.user.id,
      ALMANAC_LOG_LEVEL: "debug",
    },
  });
  running.llm.setFallback((request: RecordedChatRequest) => {
    const user = [...request.messages].reverse().find((message) => message.role === "user");
    return script.text(`echo: ${String(user?.content)}`);
  });
  await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000 });
}, 30_000);
afterAll(async () => {
  await running?.close();
  await discord?.close();
});

describe("log lines", () => {
  it("the key scanner sees a repeated key that JSON.parse would hide", () => {
    expect(topLevelKeys('{"a":1,"b":{"a":2},"c":"x\\":","a":3}')).toEqual(["a", "b", "c", "a"]);
  });

  it("carry each key once through a start, API turns with a compaction and a channel message", async () => {
    await running.client.chat.completions.create({
      model: "almanac",
      user: "log-keys",
      messages: [{ role: "user", content: "hello" }],
    });
    // A compaction hands the turns to the summarizer: both log through loggers of loggers.
    await running.client.chat.completions.create({
      model: "almanac",
      user: "log-keys",
      messages: [{ role: "user", content: "/compact" }],
    });
    discord.dispatchMessage({ where: "dm", content: "hello bot" });
    await waitUntil(() => discord.sent().length === 1, { timeoutMs: 10_000 });
    const lines = running.logs.flatMap((chunk) => chunk.split("\n")).filter((line) => line.startsWith("{"));
    expect(lines.some((line) => line.includes('"channel":"discord"'))).toBe(true);
    expect(lines.some((line) => line.includes('"component":"memory'))).toBe(true);
    expect(lines.some((line) => line.includes('"component":"compaction"'))).toBe(true);
    expect(duplicateKeys(lines)).toEqual([]);
  });

  it("never carry a secret's value, not even in an SDK's debug line", () => {
    // discord.js logs "Provided token: …" at debug level; the admin token and the model key are secrets too.
    const text = running.logs.join("");
    expect(text).toContain("Provided token");
    for (const secret of [discord.token(), TEST_TOKEN, TEST_MODEL_KEY]) expect(text).not.toContain(secret);
  });
});
