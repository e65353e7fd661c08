import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { summarySections } from "@almanac/compaction";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isSummarizerRequest, startTestServer, TEST_MODEL_KEY, type TestServer } from "./test-server.js";

const summary = summarySections.map((heading) => `## ${heading}\nRead reports.`).join("\n\n");
const SESSION = "api:default:api:originals";
const WINDOW = 8_192;

interface StoredMessage {
  readonly id: string;
  readonly role: string;
  readonly marks: readonly string[];
  readonly content: ReadonlyArray<{ readonly type: string; readonly content?: string }>;
}

const toolText = (message: StoredMessage): string =>
  message.content.map((block) => (block.type === "tool_result" ? (block.content ?? "") : "")).join("");

/** ~600 tokens of text only report `index` contains (distinct, so no output is a duplicate of another). */
function report(index: number): string {
  return Array.from(
    { length: 40 },
    (_, line) =>
      `report ${index} row ${line}: host web-${(line * 7 + index) % 13} served ${line * 31 + index} requests`,
  ).join("\n");
}

let llm: ScriptedLlm | undefined;
let running: TestServer | undefined;
let home: string | undefined;
afterEach(async () => {
  await running?.close();
  await llm?.close();
  if (home) await rm(home, { recursive: true, force: true });
  running = undefined;
  llm = undefined;
  home = undefined;
});

describe("compaction keeps what was said for the summarizer", () => {
  it.each([
    ["in the same process", false],
    ["after a restart in between", true],
  ])(
    "journals a tool output in full when a later compaction summarizes it, though cheap passes shortened it turns earlier (%s)",
    async (_name, restart) => {
      llm = await startScriptedLlm({ contextWindow: WINDOW, apiKey: TEST_MODEL_KEY });
      home = await mkdtemp(join(tmpdir(), "almanac-originals-"));
      const workspace = join(home, "workspace");
      await mkdir(workspace, { recursive: true });
      for (let index = 0; index < 12; index += 1)
        await writeFile(join(workspace, `report-${index}.txt`), report(index));
      llm.setFallback((request) => {
        if (request.model === "compactor") return script.text(summary);
        // Summarizer jobs fail once and are parked, so the journaled batches stay on disk to be read.
        if (isSummarizerRequest(request)) return script.error(500);
        const last = request.messages.at(-1);
        const asked = last?.role === "user" ? /report (\d+)/.exec(String(last.content)) : null;
        if (asked)
          return script.toolCalls([{ name: "read_file", arguments: { path: `report-${asked[1]}.txt` } }]);
        return script.text("Read it.");
      });
      const start = () =>
        startTestServer({
          llm,
          home,
          contextWindow: WINDOW,
          env: {
            ALMANAC_COMPACTION_MODEL: "compactor",
            ALMANAC_SUMMARIZER_MAX_ATTEMPTS: "1",
            ALMANAC_MEMORY_CONTEXT_TOKENS: "200",
          },
        });
      const say = async (content: string): Promise<string> => {
        const reply = await (running as TestServer).client.chat.completions.create({
          model: "almanac",
          user: "originals",
          messages: [{ role: "user", content }],
        });
        return reply.choices[0]?.message.content ?? "";
      };
      const messages = async (): Promise<StoredMessage[]> => {
        const response = await (running as TestServer).api(`/api/sessions/${encodeURIComponent(SESSION)}`);
        if (response.status === 404) return [];
        return ((await response.json()) as { messages: StoredMessage[] }).messages;
      };
      const firstOutput = (all: readonly StoredMessage[]) => all.find((message) => message.role === "tool");

      running = await start();
      // Turn after turn until the cheap passes have shortened the first tool output (it is out of the recent part).
      let turn = 0;
      while (!firstOutput(await messages())?.marks.includes("compressed")) {
        expect(turn, "the first output was never shortened").toBeLessThan(10);
        await say(`Please read report ${turn}.`);
        turn += 1;
      }
      const shortened = firstOutput(await messages()) as StoredMessage;
      expect(toolText(shortened)).not.toContain("row 39");
      // Nothing was summarized yet: no batch has been journaled.
      expect(await say("/status")).toMatch(/compactions: 0/);

      if (restart) {
        // The compactor of the reloaded session never saw the output in full: the transcript has it.
        await running.close();
        running = await start();
      }
      await say(`Please read report ${turn}.`);
      expect(await say("/compact")).toMatch(/Compacted \d+ messages into the rolling summary/);
      expect(llm.rejections()).toEqual([]);

      const jobsDir = join(home, "state", "summarizer", "jobs");
      const batches = await Promise.all(
        (await readdir(jobsDir))
          .filter((name) => name.endsWith(".json"))
          .map(async (name) => JSON.parse(await readFile(join(jobsDir, name), "utf8")) as unknown),
      );
      const journaled = batches
        .flatMap((batch) => (batch as { messages?: StoredMessage[] }).messages ?? [])
        .find((message) => message.id === shortened.id);
      expect(journaled, JSON.stringify(batches).slice(0, 400)).toBeDefined();
      expect(toolText(journaled as StoredMessage)).toContain(report(0));
    },
    60_000,
  );
});
