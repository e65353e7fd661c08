import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RecordedChatRequest, type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { closedPortUrl, runAlmanac } from "./cli-process.js";
import { startTestServer, TEST_MODEL_KEY, TEST_TOKEN, type TestServer } from "./test-server.js";

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "almanac-cli-"));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe("almanac doctor", () => {
  let llm: ScriptedLlm;
  beforeAll(async () => {
    llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
  });
  afterAll(async () => {
    await llm.close();
  });
  /** A configured model; the port is one nothing listens on, so the server check sees no server. */
  const modelEnv = async (apiKey: string) => ({
    ALMANAC_HOME: home,
    ALMANAC_PORT: new URL(await closedPortUrl()).port,
    ALMANAC_MODEL_BASE_URL: llm.baseURL,
    ALMANAC_MODEL_NAME: "scripted-model",
    ALMANAC_MODEL_API_KEY: apiKey,
  });

  it("says what to set and exits non-zero when no model is configured", async () => {
    const run = await runAlmanac(["doctor"], { cwd: home, env: { ALMANAC_HOME: home } });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^fail\s+model\s.*set ALMANAC_MODEL_BASE_URL and ALMANAC_MODEL_NAME/m);
    expect(run.stdout).toMatch(/^ok\s+config\s/m);
    expect(run.stdout).toMatch(/^ok\s+data directory\s/m);
  });

  it("passes with a reachable model, the stopped server being only a warning", async () => {
    const run = await runAlmanac(["doctor"], { cwd: home, env: await modelEnv(TEST_MODEL_KEY) });
    expect(run.stdout).toMatch(/^ok\s+model\s+scripted-model at 127\.0\.0\.1:\d+ is reachable/m);
    expect(run.stdout).toMatch(/^warn\s+server\s+not running at http:\/\/127\.0\.0\.1:\d+/m);
    expect(run.stdout).toMatch(/^warn\s+embeddings\s.*full-text search only/m);
    expect(run.stdout).not.toContain(TEST_MODEL_KEY);
    expect(run.code).toBe(0);
  });

  it("prints valid JSON with --json", async () => {
    const run = await runAlmanac(["doctor", "--json"], { cwd: home, env: await modelEnv(TEST_MODEL_KEY) });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as { ok: boolean; checks: Array<{ name: string; status: string }> };
    expect(report.ok).toBe(true);
    expect(report.checks.map((entry) => entry.name)).toEqual(
      expect.arrayContaining(["config", "data directory", "model", "embeddings", "server", "index"]),
    );
    expect(report.checks.find((entry) => entry.name === "index")).toMatchObject({
      status: "warn",
      message: "not checked: server not running",
    });
  });

  it("names a refused model API key as an auth problem without printing the key", async () => {
    const wrongKey = "sk-wrong-key-that-must-not-be-printed";
    const run = await runAlmanac(["doctor"], { cwd: home, env: await modelEnv(wrongKey) });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^fail\s+model\s.*refused the API key \(HTTP 401\).*ALMANAC_MODEL_API_KEY/m);
    expect(run.stdout + run.stderr).not.toContain(wrongKey);
  });

  it("names the bad key of an invalid configuration and skips the rest", async () => {
    const run = await runAlmanac(["doctor", "--json"], {
      cwd: home,
      env: { ALMANAC_HOME: home, ALMANAC_PORT: "eighty" },
    });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as {
      ok: boolean;
      checks: Array<{ name: string; message: string }>;
    };
    expect(report.ok).toBe(false);
    expect(report.checks).toHaveLength(1);
    expect(report.checks[0]?.message).toContain("ALMANAC_PORT");
  });
});

describe("commands against a running server", () => {
  let running: TestServer;
  beforeAll(async () => {
    running = await startTestServer();
    running.llm.setFallback((request: RecordedChatRequest) => {
      const user = [...request.messages].reverse().find((message) => message.role === "user");
      return script.text(`echo: ${String(user?.content)}`);
    });
  });
  afterAll(async () => {
    await running.close();
  });
  const clientEnv = (token = TEST_TOKEN) => ({ ALMANAC_HOME: home, ALMANAC_ADMIN_TOKEN: token });

  it("chat answers each piped line and exits at the end of input", async () => {
    // U+2028 is not a line break for a pipe (Node 24's readline would split the message there).
    const run = await runAlmanac(["chat", "--session", "piped", "--url", running.server.url], {
      cwd: home,
      env: clientEnv(),
      stdin: "Hello\u2028there\nSecond question\n",
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("echo: Hello\u2028there\necho: Second question\n");
    const sent = running.llm
      .chatRequests()
      .at(-1)
      ?.messages.map((message) => String(message.content));
    expect(sent?.slice(1)).toEqual(["Hello\u2028there", "echo: Hello\u2028there", "Second question"]);
  });

  it("sessions list shows the session the chat created, as a table and as JSON", async () => {
    const [json, table] = await Promise.all(
      [["--json"], []].map((extra) =>
        runAlmanac(["sessions", "list", ...extra, "--url", running.server.url], {
          cwd: home,
          env: clientEnv(),
        }),
      ),
    );
    expect(json?.code).toBe(0);
    const body = JSON.parse(json?.stdout ?? "") as { sessions: Array<{ key: string; turns: number }> };
    expect(body.sessions).toContainEqual(expect.objectContaining({ key: "api:default:api:piped", turns: 2 }));
    expect(table?.code).toBe(0);
    expect(table?.stdout).toMatch(/^KEY\s+CHANNEL\s+MESSAGES\s+TOKENS\s+TURNS\s+COMPACTIONS\s+LAST ACTIVITY/);
    expect(table?.stdout).toMatch(
      /^api:default:api:piped\s+api\s+4\s+\d+\s+2\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d$/m,
    );
  });

  it("doctor sees the running server and asks it about the index", async () => {
    const run = await runAlmanac(["doctor", "--json"], {
      cwd: home,
      env: { ...clientEnv(), ALMANAC_PORT: new URL(running.server.url).port },
    });
    const report = JSON.parse(run.stdout) as {
      checks: Array<{ name: string; status: string; message: string }>;
    };
    expect(report.checks.find((entry) => entry.name === "server")).toMatchObject({
      status: "ok",
      message: `running at ${running.server.url}`,
    });
    expect(report.checks.find((entry) => entry.name === "index")?.message).not.toContain(
      "server not running",
    );
  });

  it("memory reindex rebuilds the index and memory search finds a remembered fact", async () => {
    await writeFile(
      join(running.home, "workspace", "MEMORY.md"),
      "# Memory\n\nThe staging deploy key is K-77.\n",
    );
    const reindex = await runAlmanac(["memory", "reindex", "--url", running.server.url], {
      cwd: home,
      env: clientEnv(),
    });
    expect(reindex.stderr).toBe("");
    expect(reindex.code).toBe(0);
    expect(reindex.stdout).toMatch(/^reindexed: 1 files, \d+ chunks/m);
    const search = await runAlmanac(
      ["memory", "search", "deploy key", "--max", "2", "--url", running.server.url],
      {
        cwd: home,
        env: clientEnv(),
      },
    );
    expect(search.code).toBe(0);
    expect(search.stdout).toMatch(/^MEMORY\.md:\d+-\d+ {2}\d{4}-\d\d-\d\d {2}\d\.\d{3} {2}.*K-77/m);
  });

  it("exits 4 and says where the token comes from when it is refused", async () => {
    const run = await runAlmanac(["sessions", "list", "--url", running.server.url], {
      cwd: home,
      env: clientEnv("not-the-token-0123456789"),
    });
    expect(run.code).toBe(4);
    expect(run.stderr).toContain("the admin token was refused; set ALMANAC_ADMIN_TOKEN or check");
    expect(run.stderr).toContain(join(home, "admin-token"));
  });

  it("exits 3 with a clear message when the server is not running", async () => {
    const url = await closedPortUrl();
    const [sessions, chat] = await Promise.all([
      runAlmanac(["sessions", "list", "--url", url], { cwd: home, env: clientEnv() }),
      runAlmanac(["chat", "--url", url], { cwd: home, env: clientEnv(), stdin: "anyone there?\n" }),
    ]);
    for (const run of [sessions, chat]) {
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(`Almanac is not running at ${url} (start it with \`almanac start\`)`);
    }
  });
});

describe("usage", () => {
  it("prints the usage and exits 2 for an unknown command", async () => {
    const run = await runAlmanac(["frobnicate"], { cwd: home });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown command: frobnicate");
    expect(run.stderr).toContain("Usage: almanac <command>");
  });
});
