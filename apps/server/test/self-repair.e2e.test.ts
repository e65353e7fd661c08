import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RecordedChatRequest, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { startTestServer, TEST_MODEL_KEY, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
let home: string | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  if (home !== undefined) await rm(home, { recursive: true, force: true });
  home = undefined;
});

const indexStatus = z.object({
  state: z.string(),
  files: z.number(),
  repair: z.object({ reason: z.string(), movedTo: z.string(), at: z.number() }).loose().optional(),
});
const readiness = z.object({
  ready: z.boolean(),
  checks: z.object({ index: z.object({ ok: z.boolean(), state: z.string() }).loose() }),
});
const searchAnswer = z.object({
  results: z.array(z.object({ path: z.string() }).loose()),
  note: z.string().optional(),
});

/** Polls an asynchronous condition (the server's state over HTTP) until it holds. */
async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function json<T>(response: Response, schema: z.ZodType<T>): Promise<T> {
  return schema.parse(await response.json());
}

describe("a damaged memory index", () => {
  it("is moved aside and rebuilt while the server starts and serves, and says so meanwhile", async () => {
    home = await mkdtemp(join(tmpdir(), "almanac-index-repair-"));
    await mkdir(join(home, "state"), { recursive: true });
    await mkdir(join(home, "workspace"), { recursive: true });
    const garbage = randomBytes(16_384);
    await writeFile(join(home, "state", "index.sqlite"), garbage);
    await writeFile(join(home, "workspace", "MEMORY.md"), "# Facts\n\nThe boiler code is QX-5531.\n");
    const llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY, embeddingDimensions: 8 });
    // The rebuild's embedding request hangs until the scripted server closes, so the rebuild is still running
    // while we look, however slow the machine.
    llm.enqueueEmbeddings(script.hang());
    try {
      running = await startTestServer({
        home,
        llm,
        env: {
          ALMANAC_EMBEDDING_BASE_URL: llm.baseURL,
          ALMANAC_EMBEDDING_API_KEY: TEST_MODEL_KEY,
          ALMANAC_EMBEDDING_MODEL: "scripted-embedding",
          ALMANAC_EMBEDDING_DIMENSIONS: "8",
        },
      });
      const server = running;
      expect((await fetch(`${server.server.url}/healthz`)).status).toBe(200);
      // The rebuild has indexed the text and waits on its embeddings: it cannot finish before we look.
      await until(async () => llm.embeddingRequests().length > 0, 10_000, "the rebuild's embedding request");

      const during = await json(await fetch(`${server.server.url}/readyz`), readiness);
      expect(during.ready).toBe(true);
      expect(during.checks.index).toMatchObject({
        ok: true,
        state: "rebuilding",
        repair: { reason: expect.stringContaining("SQLITE_NOTADB") },
      });
      const status = await json(await server.api("/api/memory/index"), indexStatus);
      expect(status.state).toBe("rebuilding");
      const movedTo = status.repair?.movedTo ?? "";
      expect(movedTo).toMatch(/index\.sqlite\.corrupt-/u);
      expect(await readFile(movedTo)).toEqual(garbage);
      const early = await json(await server.api("/api/memory/search?q=boiler"), searchAnswer);
      expect(early.note).toMatch(/being rebuilt.*may be incomplete/u);

      await llm.close(); // the hanging embedding request fails; the rebuild finishes full-text only

      await until(
        async () => (await json(await server.api("/api/memory/index"), indexStatus)).state === "idle",
        15_000,
        "the rebuild",
      );
      expect((await json(await fetch(`${server.server.url}/readyz`), readiness)).checks.index.state).toBe(
        "idle",
      );
      const after = await json(await server.api("/api/memory/search?q=QX-5531"), searchAnswer);
      expect(after.results.map((result) => result.path)).toEqual(["MEMORY.md"]);
      expect(after.note ?? "").not.toMatch(/rebuilt/u);
      expect(server.logs.join("")).toMatch(/the memory index is damaged; moved it aside/u);
      expect((await readdir(join(home, "state"))).filter((name) => name.includes("corrupt"))).toHaveLength(1);
    } finally {
      await llm.close();
    }
  });
});

/** The text of the user messages a chat request showed the model. */
function userTexts(request: RecordedChatRequest | undefined): string[] {
  return (request?.messages ?? [])
    .filter((message) => message.role === "user")
    .map((message) =>
      typeof message.content === "string" ? message.content : JSON.stringify(message.content),
    );
}

describe("a damaged session snapshot", () => {
  it("is rebuilt from the transcript on restart, so the conversation goes on with its whole history", async () => {
    home = await mkdtemp(join(tmpdir(), "almanac-session-repair-"));
    const llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
    llm.setFallback(() => script.text("Noted."));
    const damages: Array<[string, (file: string) => Promise<void>]> = [
      ["truncated", async (file) => truncate(file, Math.floor((await readFile(file)).length / 2))],
      ["zero bytes", (file) => writeFile(file, "")],
      ["random bytes", (file) => writeFile(file, randomBytes(256))],
      [
        "working memory of the wrong shape",
        async (file) => {
          const snapshot = z
            .object({})
            .loose()
            .parse(JSON.parse(await readFile(file, "utf8")));
          await writeFile(file, JSON.stringify({ ...snapshot, memory: { version: 1, messages: 42 } }));
        },
      ],
      ["deleted", (file) => rm(file)],
    ];
    const said: string[] = [];
    const chat = async (server: TestServer, text: string): Promise<void> => {
      said.push(text);
      const reply = await server.client.chat.completions.create({
        model: "almanac",
        user: "repair-me",
        messages: [{ role: "user", content: text }],
      });
      expect(reply.choices[0]?.message.content).toBe("Noted.");
      // What the model was shown on this turn: every user message of the conversation so far.
      expect(userTexts(llm.chatRequests().at(-1))).toEqual(said);
    };
    try {
      running = await startTestServer({ home, llm });
      await chat(running, "My locker code is 4471.");
      // A new session writes its first snapshot with its first checkpoint, not with its first turn: after a
      // restart it is loaded from its transcript, which writes the snapshot the damages below start from.
      const sessions = join(home, "sessions");
      const snapshots = async () => (await readdir(sessions)).filter((entry) => entry.endsWith(".json"));
      expect(await snapshots()).toEqual([]);
      await running.close();
      running = await startTestServer({ home, llm });
      await chat(running, "Remember it, please.");
      expect(await snapshots()).toHaveLength(1);
      for (const [name, damage] of damages) {
        await running.close();
        running = undefined;
        const [snapshot] = await snapshots();
        await damage(join(sessions, snapshot ?? "missing.json"));
        running = await startTestServer({ home, llm });
        await chat(running, `After the snapshot was ${name}: what is my locker code?`);
      }
      const listed = z
        .object({ sessions: z.array(z.object({ key: z.string() }).loose()) })
        .loose()
        .parse(await (await running.api("/api/sessions")).json());
      expect(listed.sessions).toHaveLength(1);
      const key = listed.sessions[0]?.key ?? "";
      const detail = z
        .object({ messages: z.array(z.unknown()) })
        .loose()
        .parse(await (await running.api(`/api/sessions/${encodeURIComponent(key)}`)).json());
      expect(detail.messages).toHaveLength(said.length * 2);
    } finally {
      await llm.close();
    }
  });
});
