import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { summarySections } from "@almanac/compaction";
import { script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isSummarizerRequest, startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const summary = summarySections.map((heading) => `## ${heading}\nNone.`).join("\n\n");
const READS = 25;

/** A MEMORY.md far larger than the default excerpt budget (2,000 tokens), so the excerpt is full. */
function largeMemory(): string {
  const lines = ["# Memory", ""];
  for (let index = 1; index <= 2_600; index += 1) {
    lines.push(
      `- Fact ${index}: the ${index % 7 === 0 ? "staging" : "production"} host db-${index} runs on port ${5000 + index}.`,
    );
  }
  return lines.join("\n");
}

async function runLongToolTurn(contextWindow: number): Promise<TestServer> {
  const server = await startTestServer({
    contextWindow,
    env: {
      ALMANAC_MODEL_MAX_OUTPUT_TOKENS: "1024",
      ALMANAC_COMPACTION_MODEL: "compactor",
      ALMANAC_AGENT_MAX_ITERATIONS: "30",
    },
  });
  running = server;
  const workspace = join(server.home, "workspace");
  await mkdir(workspace, { recursive: true });
  await writeFile(join(workspace, "MEMORY.md"), largeMemory());
  let reads = 0;
  server.llm.setFallback((request) => {
    if (request.model === "compactor") return script.text(summary);
    if (isSummarizerRequest(request)) return script.text("Nothing worth storing.");
    const last = request.messages.findLast((message) => message.role === "user");
    if (!String(last?.content).startsWith("Read MEMORY.md")) return script.text("You are welcome.");
    if (reads < READS) {
      reads += 1;
      return script.toolCalls([
        { name: "memory_get", arguments: { path: "MEMORY.md", fromLine: 1 + (reads - 1) * 100, lines: 100 } },
      ]);
    }
    return script.text("I read all of it: the hosts are listed in MEMORY.md.");
  });
  return server;
}

describe("a long tool turn on a small window", () => {
  for (const contextWindow of [8_192, 4_096]) {
    it(`completes a ${READS}-step memory_get turn at ${contextWindow} tokens with a full memory excerpt, with no request refused`, async () => {
      const server = await runLongToolTurn(contextWindow);
      const reply = await server.client.chat.completions.create({
        model: "almanac",
        user: "small",
        messages: [
          {
            role: "user",
            content: "Read MEMORY.md in 100-line pieces, all of it, then tell me what is there.",
          },
        ],
      });
      const text = reply.choices[0]?.message.content ?? "";
      expect(text).toContain("I read all of it");
      expect(server.llm.rejections()).toEqual([]);
      // Every read reached the model (the turn was not cut short), and the turn's compactions make one notice.
      expect(
        server.llm.chatRequests().filter((request) => request.model === "scripted-model").length,
      ).toBeGreaterThan(READS);
      expect(text.match(/Context compacted/g)).toHaveLength(1);
      // The session is left within its window, and the next turn goes through too.
      const detail = (await (
        await server.api(`/api/sessions/${encodeURIComponent("api:default:api:small")}`)
      ).json()) as {
        contextTokens: number;
      };
      expect(detail.contextTokens).toBeLessThan(contextWindow - 1024);
      const next = await server.client.chat.completions.create({
        model: "almanac",
        user: "small",
        messages: [{ role: "user", content: "Thanks." }],
      });
      expect(next.choices[0]?.message.content).toBeTruthy();
      expect(server.llm.rejections()).toEqual([]);
    }, 120_000);
  }
});
