import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { summarySections } from "@almanac/compaction";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isSummarizerRequest, startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const SESSION = "api:default:api:meter";
const summary = summarySections.map((heading) => `## ${heading}\nNone.`).join("\n\n");

/** Within `share` of `reference` (both ways). */
function expectNear(value: number, reference: number, share = 0.02): void {
  expect(Math.abs(value - reference) / reference, `${value} vs ${reference}`).toBeLessThanOrEqual(share);
}

function numberIn(text: string, pattern: RegExp): number {
  const match = pattern.exec(text);
  expect(match, `${pattern} in:\n${text}`).not.toBeNull();
  return Number((match?.[1] ?? "").replaceAll(",", ""));
}

describe("one token meter for a session", () => {
  it("shows the same prompt size in /status, /history, /compact, the admin API and the metrics, within 2% of what the strict model server counted", async () => {
    running = await startTestServer({ env: { ALMANAC_COMPACTION_MODEL: "compactor" } });
    const server = running;
    const workspace = join(server.home, "workspace");
    await mkdir(workspace, { recursive: true });
    for (let index = 0; index < 4; index += 1) {
      const lines = Array.from(
        { length: 60 },
        (_, line) => `report ${index} row ${line}: p95 ${line * 3} ms`,
      );
      await writeFile(join(workspace, `report-${index}.txt`), lines.join("\n"));
    }
    server.llm.setFallback((request) => {
      if (request.model === "compactor") return script.text(summary);
      if (isSummarizerRequest(request)) return script.text("Nothing worth storing.");
      const last = request.messages.at(-1);
      const asked = last?.role === "user" ? /report (\d)/.exec(String(last.content)) : null;
      if (asked)
        return script.toolCalls([{ name: "read_file", arguments: { path: `report-${asked[1]}.txt` } }]);
      return script.text("Read it.");
    });
    const say = async (content: string): Promise<string> => {
      const reply = await server.client.chat.completions.create({
        model: "almanac",
        user: "meter",
        messages: [{ role: "user", content }],
      });
      return reply.choices[0]?.message.content ?? "";
    };
    const chatRequests = (): RecordedChatRequest[] =>
      server.llm
        .chatRequests()
        .filter((request) => request.model === "scripted-model" && !isSummarizerRequest(request));
    const measured = async () => {
      const status = await say("/status");
      const history = await say("/history");
      const detail = (await (await server.api(`/api/sessions/${encodeURIComponent(SESSION)}`)).json()) as {
        contextTokens: number;
      };
      const list = (await (await server.api("/api/sessions")).json()) as {
        sessions: Array<{ key: string; contextTokens: number }>;
      };
      const metrics = await (await server.api("/metrics")).text();
      return {
        status: numberIn(status, /Context: (\d+) \//),
        history: numberIn(history, /Total in the prompt: (\d+) of/),
        detail: detail.contextTokens,
        list: list.sessions.find((session) => session.key === SESSION)?.contextTokens ?? -1,
        metrics: numberIn(metrics, /^almanac_context_tokens_max (\d+)$/m),
      };
    };

    for (let turn = 0; turn < 4; turn += 1) await say(`Please read report ${turn} (turn ${turn}).`);
    expect(server.llm.rejections()).toEqual([]);
    const served = chatRequests().at(-1)?.promptTokens ?? 0;
    expect(served).toBeGreaterThan(3_000);
    const before = await measured();
    // Every view reads the one meter: the same number, to the token.
    expect(new Set(Object.values(before)).size).toBe(1);
    // The model server counted the last request (which lacked only the short final answer).
    expectNear(before.status, served);

    const compacted = await say("/compact");
    const [from, to] = [numberIn(compacted, /\(([\d,]+) →/), numberIn(compacted, /→ ([\d,]+) tokens/)];
    expect(from).toBe(before.status);
    const after = await measured();
    expect(new Set(Object.values(after)).size).toBe(1);
    expect(after.status).toBe(to);
    expect(to).toBeLessThan(from);

    // The next request is what the meter measured, plus the new user message.
    await say("Thanks, that is all.");
    const next = chatRequests().at(-1)?.promptTokens ?? 0;
    expectNear(after.status, next);
  }, 60_000);
});
