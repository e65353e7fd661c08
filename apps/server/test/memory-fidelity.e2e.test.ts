import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type RecordedChatRequest,
  recordedText,
  type ScriptedLlm,
  script,
  startScriptedLlm,
} from "@almanac/testkit";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { fidelityStep, isCompactionRequest } from "./fidelity-script.js";
import { type ServerProcess, spawnServer, waitFor } from "./server-process.js";
import { isSummarizerRequest, TEST_MODEL_KEY, TEST_TOKEN } from "./test-server.js";

const WINDOW = 8_192;
const OUTPUT_CAP = 1_024;
const TURNS = 200;
const CRASH_TURN = 101;

/** Twenty facts a person tells their assistant over a long day: an id and a sentence no other fact shares. */
const FACTS: ReadonlyArray<readonly [id: string, detail: string]> = [
  ["FACT-K16", "my sister Mirela's birthday is on 14 March and she loves orchids"],
  ["FACT-B07", "the plumber Tomasz comes back on Friday to replace the boiler valve"],
  ["FACT-Q42", "the school trip to Ljubljana leaves from platform 9 at 06:40"],
  ["FACT-M23", "the landlord agreed to lower the rent to 1,180 euros from June"],
  ["FACT-T88", "Dr. Okafor moved my knee check-up to the clinic on Harbour Street"],
  ["FACT-A05", "the book club reads The Remains of the Day for September"],
  ["FACT-Z19", "the winter tyres are stored at the Vulcan depot under ticket 5532"],
  ["FACT-H64", "grandma Ilse prefers chamomile tea and cannot eat walnuts"],
  ["FACT-R31", "the team offsite is in Porto at hotel Infante Sagres from 12 to 14 October"],
  ["FACT-D72", "my passport expires on 3 February 2027"],
  ["FACT-W50", "the neighbour's cat is called Pimento and comes in through the balcony"],
  ["FACT-C13", "the insurance claim for the water damage is WD-2231-77"],
  ["FACT-P97", "I switched the electricity contract to Greenfield Energy at 0.27 per kWh"],
  ["FACT-L28", "the violin lesson with Ms Haraldsen moved to Thursday at 17:30"],
  ["FACT-F46", "the sourdough starter needs rye flour every 12 hours"],
  ["FACT-N81", "our anniversary dinner is booked at Osteria Fiume for 8 pm"],
  ["FACT-S09", "the bike shop on Canal Road gets the new chain next Wednesday"],
  ["FACT-G35", "my blood type is A negative"],
  ["FACT-V77", "allotment plot 47 has its tap key under the blue bucket"],
  ["FACT-J60", "Oskar from accounting leaves the company at the end of November"],
];

const TOPICS = ["the deploy checklist", "the quarterly budget", "the holiday plans", "the server migration"];

/** What the person says on turn `turn` (1-based): a fact every tenth turn, else mostly tool work. */
function userMessage(turn: number): string {
  if (turn % 10 === 0) {
    const [id, detail] = FACTS[turn / 10 - 1] ?? ["", ""];
    return `Please remember this: ${id} — ${detail}.`;
  }
  const report = `report-${turn % 12}.txt`;
  const topic = TOPICS[turn % TOPICS.length];
  switch (turn % 10) {
    case 1:
    case 3:
    case 5:
    case 7:
      return `Please read ${report} and tell me what stands out (turn ${turn}).`;
    case 2:
    case 6:
      return `Please look up ${topic} in my notes (turn ${turn}).`;
    case 4:
      return `Please read ${report} and look up ${topic} in my notes (turn ${turn}).`;
    default:
      return `Thanks. Anything else I should keep an eye on? (turn ${turn})`;
  }
}

/** ~1,300 tokens of a weekly report only `index` has. */
function report(index: number): string {
  return Array.from(
    { length: 48 },
    (_, line) =>
      `report ${index} row ${line}: host web-${(line * 7 + index) % 13} served ${line * 31 + index} requests, p95 ${(line * 17) % 400} ms`,
  ).join("\n");
}

/** An older daily log the owner already had: dialogue about the topics the session looks up. */
function olderLog(day: number): string {
  const date = `2025-03-${String(day).padStart(2, "0")}`;
  const lines = TOPICS.flatMap((topic, index) => [
    `- 09:${String(10 + index).padStart(2, "0")} Owner: we went through ${topic} again; item ${day * 4 + index} is still open.`,
    `- 09:${String(30 + index).padStart(2, "0")} Assistant: noted for ${topic}; the owner wants a reminder on day ${day + 3}.`,
  ]);
  return `# ${date}\n\n## Session ${day}\n${lines.join("\n")}\n`;
}

/** Prompt plus requested output of a request, as the strict server counted it (refused ones from its message). */
function requestTokens(request: RecordedChatRequest): number {
  const cap = Number(request.max_completion_tokens ?? request.max_tokens ?? 0);
  if (request.promptTokens !== undefined) return request.promptTokens + cap;
  const counted = /requested (\d+) tokens|resulted in (\d+) tokens/.exec(request.rejected?.message ?? "");
  return Number(counted?.[1] ?? counted?.[2] ?? 0) + (counted?.[1] === undefined ? cap : 0);
}

const isAgentRequest = (request: RecordedChatRequest): boolean =>
  !isSummarizerRequest(request) && !isCompactionRequest(request);

/** Which part of the server sent a request, for failure messages. */
function requestKind(request: RecordedChatRequest): string {
  if (isCompactionRequest(request)) return "compaction";
  if (isSummarizerRequest(request)) return "summarizer";
  const lastUser = [...request.messages].reverse().find((message) => message.role === "user");
  return `chat after "${recordedText(lastUser?.content).slice(0, 60)}"`;
}

interface JobsBody {
  readonly stats: { pending: number; running: number; parked: number; done: number };
  readonly jobs: ReadonlyArray<{ id: string; state: string; reason: string; lastError?: unknown }>;
}

interface SearchBody {
  readonly results: ReadonlyArray<{ path: string; startLine: number; endLine: number; snippet: string }>;
}

let llm: ScriptedLlm | undefined;
let home: string | undefined;
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) server.child.kill("SIGKILL");
  await llm?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

describe("memory fidelity end to end", () => {
  it("recalls every fact of a 200-turn tool-heavy day at 8K, across a SIGKILL and /new, with no request over the window", async () => {
    const started = Date.now();
    const model = await startScriptedLlm({ contextWindow: WINDOW, apiKey: TEST_MODEL_KEY });
    llm = model;
    const dataDir = await mkdtemp(join(tmpdir(), "almanac-fidelity-"));
    home = dataDir;
    const workspace = join(dataDir, "workspace");
    await mkdir(join(workspace, "memory"), { recursive: true });
    for (let index = 0; index < 12; index += 1)
      await writeFile(join(workspace, `report-${index}.txt`), report(index));
    for (let day = 1; day <= 8; day += 1)
      await writeFile(join(workspace, "memory", `2025-03-${String(day).padStart(2, "0")}.md`), olderLog(day));

    // The chat request of the crash turn that carries the tool result hangs; the server is killed then.
    let crashArmed = true;
    let crashReached = false;
    model.setFallback((request) => {
      const last = request.messages.at(-1);
      const lastUser = [...request.messages].reverse().find((message) => message.role === "user");
      if (
        crashArmed &&
        last?.role === "tool" &&
        !isSummarizerRequest(request) &&
        !isCompactionRequest(request) &&
        recordedText(lastUser?.content).includes(`(turn ${CRASH_TURN})`)
      ) {
        crashArmed = false;
        crashReached = true;
        return script.hang();
      }
      return fidelityStep(request);
    });

    const start = async () => {
      const server = await spawnServer({
        ALMANAC_HOME: dataDir,
        ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
        ALMANAC_MODEL_BASE_URL: model.baseURL,
        ALMANAC_MODEL_NAME: "scripted-model",
        ALMANAC_MODEL_API_KEY: TEST_MODEL_KEY,
        ALMANAC_MODEL_MAX_RETRIES: "0",
        ALMANAC_MODEL_CONTEXT_WINDOW: String(WINDOW),
        ALMANAC_MODEL_MAX_OUTPUT_TOKENS: String(OUTPUT_CAP),
        ALMANAC_TIME_ZONE: "UTC",
      });
      servers.push(server);
      return {
        server,
        client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 }),
        api: async <T>(path: string): Promise<T> => {
          const response = await fetch(`${server.url}${path}`, {
            headers: { authorization: `Bearer ${TEST_TOKEN}` },
          });
          expect(response.status, path).toBe(200);
          return (await response.json()) as T;
        },
      };
    };
    const say = async (client: OpenAI, user: string, content: string): Promise<string> => {
      const reply = await client.chat.completions.create({
        model: "almanac",
        user,
        messages: [{ role: "user", content }],
      });
      return reply.choices[0]?.message.content ?? "";
    };

    let running = await start();
    const unanswered: number[] = [];
    const turn = async (number: number) => {
      if ((await say(running.client, "owner", userMessage(number))).trim() === "") unanswered.push(number);
    };
    for (let number = 1; number < CRASH_TURN; number += 1) await turn(number);

    // SIGKILL in the middle of a turn: its tool ran, the model's answer never came.
    const cut = say(running.client, "owner", userMessage(CRASH_TURN)).catch((error: unknown) => error);
    await waitFor(() => crashReached, 10_000, "the crash turn to reach the model");
    running.server.child.kill("SIGKILL");
    expect(await running.server.exited).toBe("SIGKILL");
    expect(await cut).toBeInstanceOf(Error);

    running = await start();
    for (let number = CRASH_TURN; number <= TURNS; number += 1) await turn(number);
    expect(unanswered, "turns without an answer").toEqual([]);
    const sessionSeconds = (Date.now() - started) / 1000;
    expect(await say(running.client, "owner", "/new")).toMatch(/new conversation/i);

    const drained = async (): Promise<JobsBody> => {
      let jobs: JobsBody | undefined;
      await waitFor(
        async () => {
          jobs = await running.api<JobsBody>("/api/summarizer/jobs");
          return (
            jobs.stats.pending === 0 &&
            jobs.stats.running === 0 &&
            jobs.jobs.some((job) => job.reason === "new-session")
          );
        },
        30_000,
        "the summarizer queue to drain",
      );
      return jobs as JobsBody;
    };
    const jobs = await drained();
    const ownerEnd = model.chatRequests().length;
    expect(jobs.stats.parked, JSON.stringify(jobs.jobs.filter((job) => job.state === "parked"))).toBe(0);

    // 1. Every fact is in the owner's daily log of the day, with its sentence.
    const logNames = (await readdir(join(workspace, "memory"))).filter(
      (name) => /^\d{4}-\d\d-\d\d\.md$/.test(name) && !name.startsWith("2025-03-"),
    );
    const logs = (
      await Promise.all(logNames.map((name) => readFile(join(workspace, "memory", name), "utf8")))
    ).join("\n");
    const inLog = FACTS.filter(([id, detail]) => logs.includes(`${id} — ${detail}`));
    expect
      .soft(
        FACTS.filter((fact) => !inLog.includes(fact)).map(([id]) => id),
        "facts missing from the daily log",
      )
      .toEqual([]);

    // 2. Every fact is searchable, and the best hit's snippet shows its line.
    const searchable: string[] = [];
    await waitFor(
      async () => {
        searchable.length = 0;
        for (const [id, detail] of FACTS) {
          const body = await running.api<SearchBody>(`/api/memory/search?q=${encodeURIComponent(id)}`);
          if (body.results[0]?.snippet.includes(`${id} — ${detail}`)) searchable.push(id);
        }
        return searchable.length === FACTS.length;
      },
      15_000,
      "every fact to be searchable",
    ).catch(() => undefined);
    expect
      .soft(
        FACTS.map(([id]) => id).filter((id) => !searchable.includes(id)),
        "facts whose best search hit does not show them",
      )
      .toEqual([]);

    // 3. A fresh session asks for each fact; the agent searches memory and answers from what it found.
    const recalled: string[] = [];
    const answers: string[] = [];
    for (const [id, detail] of FACTS) {
      const answer = await say(running.client, "newcomer", `What do you remember about ${id}?`);
      answers.push(answer);
      if (answer.includes(detail)) recalled.push(id);
    }
    expect
      .soft(
        FACTS.map(([id]) => id).filter((id) => !recalled.includes(id)),
        `facts not recalled:\n${answers.join("\n")}`,
      )
      .toEqual([]);

    // 4. No request went over the window; nothing was parked.
    const chats = model.chatRequests();
    const largest = Math.max(...chats.map(requestTokens));
    const finalJobs = await drained();
    const compacted = servers
      .flatMap((server) => server.output().split("\n"))
      .filter((line) => line.includes('"msg":"context compacted"'));
    const phases = { owner: chats.slice(0, ownerEnd), recall: chats.slice(ownerEnd) };
    const figures = {
      turns: TURNS,
      chatRequests: chats.length,
      agentRequests: chats.filter(isAgentRequest).length,
      compactionRequests: chats.filter(isCompactionRequest).length,
      summarizingCompactions: compacted.filter((line) => line.includes('"outcome":"summarized"')).length,
      summarizerRequests: chats.filter(isSummarizerRequest).length,
      summarizerJobs: finalJobs.jobs.length,
      maxRequestTokens: largest,
      maxRequestShareOfWindow: Number((largest / WINDOW).toFixed(3)),
      rejections: Object.fromEntries(
        Object.entries(phases).map(([phase, list]) => [
          phase,
          list.filter((request) => request.rejected).length,
        ]),
      ),
      factsInLog: inLog.length,
      factsSearchable: searchable.length,
      factsRecalled: recalled.length,
      // Answers given on a memory_search result the compactor had already cut (head and tail kept).
      recallResultsCut: phases.recall.filter(
        (request) =>
          isAgentRequest(request) &&
          request.messages.at(-1)?.role === "tool" &&
          recordedText(request.messages.at(-1)?.content).includes("characters cut here to save context"),
      ).length,
      parkedJobs: finalJobs.stats.parked,
      sessionSeconds: Number(sessionSeconds.toFixed(1)),
      totalSeconds: Number(((Date.now() - started) / 1000).toFixed(1)),
    };
    console.log(`memory fidelity end to end: ${JSON.stringify(figures)}`);
    expect(
      model.rejections().map((request) => `${requestKind(request)}: ${request.rejected?.message}`),
      "requests the strict model refused",
    ).toEqual([]);
    expect(largest).toBeLessThanOrEqual(WINDOW);
    expect(finalJobs.stats.parked).toBe(0);
  }, 240_000);
});
