import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliRun, collectOutput, runAlmanac } from "./cli-process.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** Runs a command line through `sh -c` in the repository, as a person pastes it. */
function runShell(command: string, env: Record<string, string>): Promise<CliRun> {
  // npx needs HOME for its cache; nothing else of the test's environment leaks in.
  const child = spawn("sh", ["-c", command], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collectOutput(child, command, 60_000);
}

/** Every command line in the sh code blocks of a document that runs the `almanac` command. */
async function documentedCommands(document: string): Promise<string[]> {
  const text = await readFile(join(repoRoot, document), "utf8");
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
  return blocks
    .flatMap((block) => block.split("\n"))
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) =>
      /^(?:npx .*?\balmanac|pnpm .*?\balmanac|node apps\/server\/bin\/almanac\.js)\s/.test(line),
    );
}

/** The launcher of a documented command line: everything before the `almanac` command's own arguments. */
function launcherOf(line: string): string {
  const match = /^(.*?(?:\balmanac\.js|\balmanac))\s/.exec(line);
  return match?.[1] ?? line;
}

let running: TestServer;
let clientHome: string;
beforeAll(async () => {
  running = await startTestServer();
  running.llm.setFallback((request: RecordedChatRequest) => {
    const user = [...request.messages].reverse().find((message) => message.role === "user");
    return script.text(`echo: ${String(user?.content)}`);
  });
  clientHome = await mkdtemp(join(tmpdir(), "almanac-cli-output-"));
});
afterAll(async () => {
  await running?.close();
  await rm(clientHome, { recursive: true, force: true });
});

/** The environment of a client command pointed at the test server (no --url, as the docs show it). */
const clientEnv = () => ({
  ALMANAC_HOME: clientHome,
  ALMANAC_HOST: "127.0.0.1",
  ALMANAC_PORT: new URL(running.server.url).port,
  ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
});

describe("--json through every documented form of the command", () => {
  it("the README's and docs/cli.md's launchers print JSON that parses, with nothing before it", async () => {
    await running.client.chat.completions.create({
      model: "almanac",
      user: "json-forms",
      messages: [{ role: "user", content: "hello" }],
    });
    const lines = [...(await documentedCommands("README.md")), ...(await documentedCommands("docs/cli.md"))];
    const launchers = [...new Set(lines.map(launcherOf))];
    expect(launchers).toEqual(
      expect.arrayContaining(["npx --yes pnpm@10 --silent almanac", "node apps/server/bin/almanac.js"]),
    );
    // The README's own `--json` line, exactly as written up to the pipe into jq.
    const readmeJson = (await documentedCommands("README.md")).find((line) => line.includes("--json"));
    expect(readmeJson).toBeDefined();
    const commands = [
      (readmeJson ?? "").split("|")[0]?.trim() ?? "",
      ...launchers.map((launcher) => `${launcher} sessions list --json`),
    ];
    const runs = await Promise.all(commands.map((command) => runShell(command, clientEnv())));
    runs.forEach((run, index) => {
      expect(run.code, `${commands[index]}\n${run.stderr}`).toBe(0);
      const body = JSON.parse(run.stdout) as { sessions: Array<{ key: string }> };
      expect(body.sessions.map((session) => session.key)).toContain("api:default:api:json-forms");
    });
  }, 60_000);
});

describe("almanac chat --json", () => {
  it("prints one JSON object per turn and nothing else on stdout", async () => {
    const run = await runAlmanac(["chat", "--session", "scripted", "--json", "--url", running.server.url], {
      cwd: clientHome,
      env: { ALMANAC_HOME: clientHome, ALMANAC_ADMIN_TOKEN: TEST_TOKEN },
      stdin: "First question\nSecond question\n",
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const turns = run.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as unknown);
    expect(turns).toEqual([
      { session: "scripted", message: "First question", reply: "echo: First question", ok: true },
      { session: "scripted", message: "Second question", reply: "echo: Second question", ok: true },
    ]);
  });

  it("reports a failed turn as an object with ok false and its error, and exits 1", async () => {
    running.llm.enqueue(script.error(500, { message: "scripted outage" }));
    const run = await runAlmanac(["chat", "--session", "failing", "--json", "--url", running.server.url], {
      cwd: clientHome,
      env: { ALMANAC_HOME: clientHome, ALMANAC_ADMIN_TOKEN: TEST_TOKEN },
      stdin: "Will this work?\n",
    });
    expect(run.code).toBe(1);
    const turn = JSON.parse(run.stdout) as { ok: boolean; error?: string; message: string };
    expect(turn).toMatchObject({ ok: false, message: "Will this work?" });
    expect(turn.error).toEqual(expect.any(String));
    expect(run.stderr).toContain("error:");
  });
});

describe("output into a pipe that closes early", () => {
  it("doctor ends quietly with its own exit code instead of crashing with EPIPE", async () => {
    // `true` exits without reading, so the pipe is closed before doctor writes its first line.
    const run = await runShell(`(node apps/server/bin/almanac.js doctor; echo "exit $?" >&2) | true`, {
      ALMANAC_HOME: clientHome,
      ALMANAC_PORT: new URL(running.server.url).port,
    });
    expect(run.stderr).not.toMatch(/EPIPE|Error/);
    expect(run.stderr.trim()).toMatch(/^exit [01]$/);
  });
});

describe("the test command's last line", () => {
  it("has the form the README documents", async () => {
    const readme = await readFile(join(repoRoot, "README.md"), "utf8");
    expect(readme).toContain("ends with the line `N passed, N failed, N skipped`");
    const run = await runShell("node scripts/run-tests.mjs apps/server/src/metrics.test.ts", {});
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split("\n").at(-1)).toMatch(/^\d+ passed, \d+ failed, \d+ skipped$/);
  }, 30_000);
});
