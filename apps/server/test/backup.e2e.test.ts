import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { script } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { closedPortUrl, runAlmanac } from "./cli-process.js";
import { waitFor } from "./server-process.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

const SESSION = "boat";
const SESSION_KEY = `api:default:api:${SESSION}`;
const FACT = "The boat's winter mooring is berth K-77 at Harbour North.";

let cwd: string;
const servers: TestServer[] = [];
beforeEach(async () => {
  cwd = await mkdtemp(join(tmpdir(), "almanac-backup-cli-"));
});
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  await rm(cwd, { recursive: true, force: true });
});

async function start(home?: string): Promise<TestServer> {
  const server = await startTestServer(home === undefined ? {} : { home });
  servers.push(server);
  return server;
}

async function say(server: TestServer, content: string): Promise<string> {
  const completion = await server.client.chat.completions.create(
    { model: "almanac", messages: [{ role: "user", content }] },
    { headers: { "x-almanac-session": SESSION } },
  );
  return completion.choices[0]?.message.content ?? "";
}

async function search(server: TestServer, query: string): Promise<string[]> {
  const answer = (await (await server.api(`/api/memory/search?q=${encodeURIComponent(query)}`)).json()) as {
    results: Array<{ path: string; snippet: string }>;
  };
  return answer.results.map((result) => `${result.path}: ${result.snippet}`);
}

const cliEnv = (server: TestServer) => ({ ALMANAC_ADMIN_TOKEN: TEST_TOKEN, ALMANAC_HOME: server.home });

describe("backup and restore", () => {
  it("archives a running server during a turn; the restored server finds the same memory and resumes the conversation", async () => {
    const original = await start();
    original.llm.enqueue(script.text("Noted: your boat is called Zephyr-12."));
    expect(await say(original, "My boat is called Zephyr-12.")).toBe("Noted: your boat is called Zephyr-12.");
    const written = await original.api("/api/memory/files/MEMORY.md", {
      method: "PUT",
      body: JSON.stringify({ content: `# Memory\n\n- ${FACT}\n` }),
    });
    expect(written.status).toBe(200);
    await waitFor(
      async () => (await search(original, "winter mooring")).length > 0,
      10_000,
      "the fact indexed",
    );

    // A turn is running (its model call held) while the CLI asks the server for the archive.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    original.llm.setFallback(async () => {
      await held;
      return script.text("Still thinking about boats.");
    });
    const running = say(original, "What else should I know about boats?");
    await waitFor(() => original.llm.chatRequests().length === 2, 10_000, "the second turn's model call");
    const out = join(cwd, "boat.tar.gz");
    const created = await runAlmanac(["backup", "create", "--out", out, "--url", original.server.url], {
      cwd,
      env: cliEnv(original),
    });
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect(created.stdout).toContain(`downloaded to ${out} (SHA-256 checked)`);
    release();
    expect(await running).toBe("Still thinking about boats.");
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    const onServer = (await (await original.api("/api/backups")).json()) as {
      backups: Array<{ name: string }>;
    };
    expect(onServer.backups).toHaveLength(1);

    const verified = await runAlmanac(["backup", "verify", out, "--json"], { cwd, env: {} });
    expect(verified.code).toBe(0);
    const report = JSON.parse(verified.stdout) as {
      ok: boolean;
      createdBy: string;
      excluded: Array<{ path: string }>;
    };
    expect(report).toMatchObject({ ok: true, createdBy: "server" });
    expect(report.excluded.map((entry) => entry.path)).toContain("state/almanac.lock");

    const home = join(cwd, "restored");
    const restored = await runAlmanac(["backup", "restore", out, "--home", home], { cwd, env: {} });
    expect(restored.stderr).toBe("");
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain(`into ${home}`);
    expect((await stat(home)).mode & 0o777).toBe(0o700);
    expect(await readdir(home)).not.toContain("backups");

    const copy = await start(home);
    await waitFor(
      async () => (await search(copy, "winter mooring")).length > 0,
      10_000,
      "the restored search",
    );
    expect((await search(copy, "winter mooring"))[0]).toContain("berth K-77");

    const detail = (await (await copy.api(`/api/sessions/${encodeURIComponent(SESSION_KEY)}`)).json()) as {
      messages: Array<{ role: string; content: Array<{ type: string; text?: string }> }>;
    };
    const texts = detail.messages.map((message) => message.content.map((block) => block.text ?? "").join(""));
    // The question of the turn that was running is kept (it was on disk before its model call), as after a crash.
    expect(texts).toEqual([
      "My boat is called Zephyr-12.",
      "Noted: your boat is called Zephyr-12.",
      "What else should I know about boats?",
    ]);
    // The index came with the archive: the start-up sync found MEMORY.md unchanged and indexed nothing again.
    await waitFor(() => copy.logs.some((line) => line.includes('"memory sync done"')), 10_000, "the sync");
    const sync = JSON.parse(copy.logs.find((line) => line.includes('"memory sync done"')) ?? "{}") as {
      filesIndexed?: number;
      filesUnchanged?: number;
    };
    expect(sync).toMatchObject({ filesIndexed: 0, filesUnchanged: 1 });

    copy.llm.enqueue(script.text("Your boat is called Zephyr-12."));
    expect(await say(copy, "What is my boat called?")).toBe("Your boat is called Zephyr-12.");
    const [request] = copy.llm.chatRequests();
    const sent = JSON.stringify(request?.messages);
    expect(sent).toContain("My boat is called Zephyr-12.");
    expect(sent).toContain("Noted: your boat is called Zephyr-12.");
  }, 60_000);

  it("lists, downloads and deletes archives over the API, with the admin token only", async () => {
    const server = await start();
    const created = await server.api("/api/backups", { method: "POST", body: "{}" });
    expect(created.status).toBe(201);
    const made = (await created.json()) as { name: string; size: number; sha256: string; path: string };
    expect(made.path).toBe(join(server.home, "backups", made.name));

    const anonymous = await fetch(`${server.server.url}/api/backups/${made.name}`);
    expect(anonymous.status).toBe(401);
    const download = await server.api(`/api/backups/${made.name}`);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/gzip");
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.equals(await readFile(made.path))).toBe(true);
    expect(bytes.length).toBe(made.size);

    const listed = await runAlmanac(["backup", "list", "--url", server.server.url], {
      cwd,
      env: cliEnv(server),
    });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${made.name.replaceAll(".", "\\.")}\\s+\\d`, "m"));

    expect((await server.api("/api/backups/..%2Fadmin-token")).status).toBe(404);
    expect((await server.api(`/api/backups/${made.name}`, { method: "DELETE" })).status).toBe(200);
    expect((await server.api(`/api/backups/${made.name}`)).status).toBe(404);
    const left = (await (await server.api("/api/backups")).json()) as { backups: unknown[] };
    expect(left.backups).toEqual([]);
  }, 30_000);

  it("archives the directory itself when no server runs, and refuses while another process holds it", async () => {
    const server = await start(join(cwd, "home"));
    server.llm.enqueue(script.text("Hello."));
    await say(server, "Hi.");
    const port = new URL(await closedPortUrl()).port;
    const env = { ...cliEnv(server), ALMANAC_PORT: port };

    const refused = await runAlmanac(["backup", "create"], { cwd, env });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/not running at .*Another Almanac \(pid \d+/);

    await server.close();
    servers.splice(servers.indexOf(server), 1);
    const out = join(cwd, "offline.tar.gz");
    const made = await runAlmanac(["backup", "create", "--out", out], { cwd, env });
    expect(made.code).toBe(0);
    expect(made.stderr).toContain(`archived ${server.home} directly`);
    const verified = await runAlmanac(["backup", "verify", out], { cwd, env: {} });
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/^ok .* by Almanac \S+ \(no server running\)/);
    // The lock the command took is released again.
    expect(await readdir(join(server.home, "state"))).not.toContain("almanac.lock");
  }, 60_000);

  it("verify fails on an altered archive, and restore refuses a directory that is not empty", async () => {
    const server = await start();
    const made = (await (await server.api("/api/backups", { method: "POST", body: "{}" })).json()) as {
      path: string;
    };
    const broken = join(cwd, "broken.tar.gz");
    const bytes = await readFile(made.path);
    await writeFile(broken, bytes.subarray(0, bytes.length - 40));
    const verified = await runAlmanac(["backup", "verify", broken], { cwd, env: {} });
    expect(verified.code).toBe(1);
    expect(verified.stderr).toMatch(/^FAILED /);

    const notEmpty = await runAlmanac(["backup", "restore", made.path, "--home", server.home], {
      cwd,
      env: {},
    });
    expect(notEmpty.code).toBe(1);
    expect(notEmpty.stderr).toContain("is not empty");
  }, 30_000);
});
