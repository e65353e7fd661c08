import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonSchemaTool, ToolOutput } from "@almanac/agent";
import { silentLogger } from "@almanac/core";
import { afterEach, describe, expect, it } from "vitest";
import { EVERYTHING_SERVER, FILESYSTEM_SERVER, startEverythingOverHttp } from "../test/reference-servers.js";
import { mcpServersSchema } from "./mcp-settings.js";
import { McpToolSource } from "./mcp-tool-source.js";

let source: McpToolSource | undefined;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await source?.stop();
  source = undefined;
  for (const stop of stops.splice(0)) await stop();
});

function sourceOf(servers: unknown, options: { backoffMs?: number } = {}): McpToolSource {
  source = new McpToolSource({
    servers: mcpServersSchema.parse(servers),
    logger: silentLogger,
    clientVersion: "0.0.0-test",
    backoffMs: options.backoffMs ?? 100,
  });
  return source;
}

const owner = { kind: "owner" } as const;
const shared = { kind: "shared" } as const;

function toolNamed(tools: readonly JsonSchemaTool[], name: string): JsonSchemaTool {
  const tool = tools.find((candidate) => candidate.name === name);
  if (tool === undefined) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(", ")}`);
  return tool;
}

async function call(
  tool: JsonSchemaTool,
  args: Record<string, unknown>,
  timeoutMs = 30_000,
): Promise<ToolOutput> {
  return tool.execute(args, {
    signal: AbortSignal.timeout(timeoutMs),
    callId: "call-1",
    logger: silentLogger,
  });
}

const text = (output: ToolOutput) => (typeof output === "string" ? output : output.content);

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("MCP tools from the reference servers", () => {
  it("stdio: lists the everything server's tools under namespaced names, with provider-safe schemas, and calls one", async () => {
    const tools = sourceOf({ everything: { command: process.execPath, args: [EVERYTHING_SERVER] } });
    await tools.start();
    expect(tools.statuses()).toMatchObject([{ name: "everything", transport: "stdio", state: "ready" }]);
    const offered = tools.tools(owner);
    expect(offered.length).toBeGreaterThan(5);
    for (const tool of offered) {
      expect(tool.name).toMatch(/^mcp__everything__[a-zA-Z0-9_-]+$/);
      expect(tool.name.length).toBeLessThanOrEqual(64);
      expect(tool.inputSchema).toMatchObject({ type: "object" });
      expect(JSON.stringify(tool.inputSchema)).not.toContain("$schema");
      // New servers' tools wait for the owner's approval unless the settings say otherwise.
      expect(tool.requiresApproval).toBe(true);
    }
    const echo = toolNamed(offered, "mcp__everything__echo");
    expect(text(await call(echo, { message: "hello from Almanac" }))).toContain("hello from Almanac");
    // The owner's tools only: a shared chat gets none unless allowed.
    expect(tools.tools(shared)).toEqual([]);
  });

  it("stdio: a server killed mid-call gives a tool error, is restarted, and the next call works", async () => {
    const tools = sourceOf({
      everything: { command: process.execPath, args: [EVERYTHING_SERVER], approval: "never" },
    });
    await tools.start();
    expect(tools.statuses()[0]?.state).toBe("ready");
    const longRunning = toolNamed(tools.tools(owner), "mcp__everything__trigger-long-running-operation");
    const pending = call(longRunning, { duration: 10, steps: 10 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const pid = tools.statuses()[0]?.pid;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid as number, "SIGKILL");
    const failed = await pending;
    expect(failed).toMatchObject({ isError: true });
    expect(text(failed)).toMatch(/stopped during the call|not available/);
    await waitUntil(() => tools.statuses()[0]?.state === "ready", 15_000, "the restart");
    expect(tools.statuses()[0]?.restarts).toBeGreaterThanOrEqual(1);
    const echo = toolNamed(tools.tools(owner), "mcp__everything__echo");
    expect(text(await call(echo, { message: "back again" }))).toContain("back again");
  });

  it("a call that hangs past the server's timeout comes back as a tool error, and the server stays usable", async () => {
    const tools = sourceOf({
      everything: { command: process.execPath, args: [EVERYTHING_SERVER], timeoutMs: 500, approval: "never" },
    });
    await tools.start();
    const longRunning = toolNamed(tools.tools(owner), "mcp__everything__trigger-long-running-operation");
    const started = Date.now();
    const output = await call(longRunning, { duration: 20, steps: 2 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(output).toMatchObject({ isError: true });
    expect(text(output)).toContain("did not answer within 500 ms");
    const echo = toolNamed(tools.tools(owner), "mcp__everything__echo");
    expect(text(await call(echo, { message: "still here" }))).toContain("still here");
  });

  it("Streamable HTTP, and the HTTP+SSE fallback for an older server, both list and call tools", async () => {
    const streamable = await startEverythingOverHttp("streamableHttp");
    stops.push(streamable.stop);
    const sse = await startEverythingOverHttp("sse");
    stops.push(sse.stop);
    const tools = sourceOf({
      modern: {
        url: `http://127.0.0.1:${streamable.port}/mcp`,
        headers: { authorization: "Bearer not-checked" },
      },
      older: { url: `http://127.0.0.1:${sse.port}/sse` },
    });
    await tools.start();
    expect(tools.statuses().map((status) => [status.name, status.transport, status.state])).toEqual([
      ["modern", "http", "ready"],
      ["older", "http", "ready"],
    ]);
    for (const server of ["modern", "older"]) {
      const echo = toolNamed(tools.tools(owner), `mcp__${server}__echo`);
      expect(text(await call(echo, { message: `via ${server}` }))).toContain(`via ${server}`);
    }
  });

  it("a server that cannot start leaves the rest working, is marked down with the reason, and keeps being retried", async () => {
    const tools = sourceOf({
      broken: {
        command: process.execPath,
        args: ["-e", "console.error('missing API key'); process.exit(3)"],
      },
      everything: { command: process.execPath, args: [EVERYTHING_SERVER] },
    });
    await tools.start();
    const [broken, everything] = tools.statuses();
    expect(everything?.state).toBe("ready");
    expect(broken).toMatchObject({ state: "down" });
    expect(broken?.lastError).toContain("missing API key");
    await waitUntil(() => (tools.statuses()[0]?.restarts ?? 0) >= 2, 10_000, "retries");
    expect(tools.tools(owner).some((tool) => tool.name.startsWith("mcp__broken__"))).toBe(false);
  });

  it("per-tool rules: a disabled tool is hidden, a tool allowed in shared chats is offered there, approval per tool", async () => {
    const workspace = await mkdtemp(join(tmpdir(), "almanac-mcp-fs-"));
    stops.push(() => rm(workspace, { recursive: true, force: true }));
    await writeFile(join(workspace, "notes.txt"), "The boiler code is QX-5531.\n");
    const tools = sourceOf({
      files: {
        command: process.execPath,
        args: [FILESYSTEM_SERVER, workspace],
        tools: {
          read_text_file: { sharedChats: true, approval: "never" },
          write_file: { enabled: false },
        },
      },
    });
    await tools.start();
    const names = tools.tools(owner).map((tool) => tool.name);
    expect(names).toContain("mcp__files__read_text_file");
    expect(names).not.toContain("mcp__files__write_file");
    expect(tools.tools(shared).map((tool) => tool.name)).toEqual(["mcp__files__read_text_file"]);
    const read = toolNamed(tools.tools(shared), "mcp__files__read_text_file");
    expect(read.requiresApproval).toBe(false);
    expect(toolNamed(tools.tools(owner), "mcp__files__list_directory").requiresApproval).toBe(true);
    expect(text(await call(read, { path: join(workspace, "notes.txt") }))).toContain("QX-5531");
  });
});

describe("a server whose tool list changes", () => {
  it("is listed again on tools/list_changed, and the new tool is offered from the next turn on", async () => {
    const fixture = new URL("../test/list-changing-server.ts", import.meta.url).pathname;
    const tools = sourceOf({
      changing: { command: process.execPath, args: ["--import", "tsx", fixture], approval: "never" },
    });
    await tools.start();
    expect(tools.tools(owner).map((tool) => tool.name)).toEqual(["mcp__changing__add_tool"]);
    const revision = tools.revision;
    await call(toolNamed(tools.tools(owner), "mcp__changing__add_tool"), {});
    await waitUntil(() => tools.tools(owner).length === 2, 10_000, "the new tool");
    expect(tools.revision).toBeGreaterThan(revision);
    expect(text(await call(toolNamed(tools.tools(owner), "mcp__changing__extra"), {}))).toBe("extra ran");
  });
});
