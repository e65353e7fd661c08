import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sessionKeyToFileStem } from "@almanac/core";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import { afterEach, describe, expect, it } from "vitest";
import { runAlmanac } from "./cli-process.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

/** The reference MCP server from npm, started by Almanac over stdio. */
const EVERYTHING_SERVER = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of running.splice(0).reverse()) await item.close();
});

interface Approval {
  readonly id: string;
  readonly state: string;
  readonly tool: string;
  readonly arguments: string;
  readonly decidedBy?: string;
  readonly reason?: string;
}

const everything = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    everything: {
      command: process.execPath,
      args: [EVERYTHING_SERVER],
      tools: { echo: { approval: "never" } },
      ...extra,
    },
  });

async function startWithMcp(env: Record<string, string> = {}, home?: string): Promise<TestServer> {
  const server = await startTestServer({
    env: { ALMANAC_MCP_SERVERS: everything(), ...env },
    ...(home === undefined ? {} : { home }),
  });
  running.push(server);
  await waitUntil(
    async () => {
      const body = (await (await server.api("/api/tools")).json()) as {
        mcpServers: Array<{ state: string }>;
      };
      return body.mcpServers[0]?.state === "ready";
    },
    { timeoutMs: 20_000 },
  );
  return server;
}

/** The tool result the model was sent last, from the recorded requests. */
function lastToolResult(requests: readonly RecordedChatRequest[]): string {
  for (const request of [...requests].reverse()) {
    const tool = request.messages.findLast((message) => message.role === "tool");
    if (tool !== undefined) return String(tool.content);
  }
  return "";
}

/** The model: calls `tool` with `args` when asked to, then answers with what the tool said. */
function scriptToolUse(server: TestServer, tool: string, args: Record<string, unknown>): void {
  server.llm.setFallback((request) => {
    const last = request.messages.at(-1);
    if (last?.role === "tool") return script.text(`Tool said: ${String(last.content)}`);
    return script.toolCalls([{ name: tool, arguments: args }]);
  });
}

async function pendingApproval(server: TestServer): Promise<Approval> {
  let found: Approval | undefined;
  await waitUntil(
    async () => {
      const body = (await (await server.api("/api/approvals")).json()) as { pending: Approval[] };
      found = body.pending[0];
      return found !== undefined;
    },
    { timeoutMs: 10_000 },
  );
  return found as Approval;
}

describe("tools from an MCP server, through the real server", () => {
  it("lists the server's tools, runs a call that needs no approval, and hands its result to the model", async () => {
    const server = await startWithMcp();
    const listed = (await (await server.api("/api/tools")).json()) as {
      tools: Array<{ name: string; source: string; requiresApproval: boolean; scopes: string[] }>;
      mcpServers: Array<{ name: string; transport: string; state: string }>;
    };
    expect(listed.mcpServers).toMatchObject([{ name: "everything", transport: "stdio", state: "ready" }]);
    expect(listed.tools).toContainEqual(
      expect.objectContaining({
        name: "mcp__everything__echo",
        source: "mcp",
        requiresApproval: false,
        scopes: ["owner"],
      }),
    );
    expect(listed.tools).toContainEqual(
      expect.objectContaining({ name: "mcp__everything__get-sum", requiresApproval: true }),
    );
    expect(listed.tools).toContainEqual(expect.objectContaining({ name: "web_fetch", source: "web" }));

    scriptToolUse(server, "mcp__everything__echo", { message: "hello from the model" });
    const reply = await server.client.chat.completions.create({
      model: "almanac",
      user: "mcp",
      messages: [{ role: "user", content: "Echo something." }],
    });
    expect(reply.choices[0]?.message.content).toBe("Tool said: Echo: hello from the model");
    // The model saw the MCP tool among its tools, under its namespaced name.
    const first = server.llm.chatRequests()[0];
    expect(JSON.stringify(first?.tools)).toContain('"mcp__everything__get-sum"');
    const metrics = await (await server.api("/metrics")).text();
    expect(metrics).toMatch(
      /almanac_tool_calls_total\{tool="mcp__everything__echo",source="mcp",outcome="ok"\} 1/,
    );
  }, 60_000);

  it("waits for the owner's approval over the API: approved runs the call, denied tells the model", async () => {
    const server = await startWithMcp();
    scriptToolUse(server, "mcp__everything__get-sum", { a: 2, b: 3 });
    const approved = server.client.chat.completions.create({
      model: "almanac",
      user: "approve",
      messages: [{ role: "user", content: "Add 2 and 3." }],
    });
    const asked = await pendingApproval(server);
    expect(asked).toMatchObject({ tool: "mcp__everything__get-sum", state: "pending" });
    expect(JSON.parse(asked.arguments)).toEqual({ a: 2, b: 3 });
    const answer = await server.api(`/api/approvals/${asked.id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(answer.status).toBe(200);
    expect((await approved).choices[0]?.message.content).toBe("Tool said: The sum of 2 and 3 is 5.");
    // The transcript records the decision on the call's result.
    const stem = sessionKeyToFileStem("api:default:api:approve");
    const transcript = await readFile(join(server.home, "sessions", `${stem}.jsonl`), "utf8");
    expect(transcript).toContain(`"approval:${asked.id}:approved:by:api"`);
    // Answering twice says it is settled already.
    const again = await server.api(`/api/approvals/${asked.id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny" }),
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("approval.not_pending");

    const denied = server.client.chat.completions.create({
      model: "almanac",
      user: "deny",
      messages: [{ role: "user", content: "Add 2 and 3 again." }],
    });
    const second = await pendingApproval(server);
    await server.api(`/api/approvals/${second.id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny" }),
    });
    const text = (await denied).choices[0]?.message.content ?? "";
    expect(text).toContain("The owner denied this call of mcp__everything__get-sum");
    expect(lastToolResult(server.llm.chatRequests())).not.toContain("The sum of");
    const history = (await (await server.api("/api/approvals?state=denied")).json()) as {
      approvals: Approval[];
    };
    expect(history.approvals).toMatchObject([{ id: second.id, state: "denied", decidedBy: "api" }]);
  }, 60_000);

  it("counts an unanswered approval as denied once it expires, the turn's own timeout paused meanwhile", async () => {
    const server = await startWithMcp({ ALMANAC_APPROVAL_TIMEOUT_MS: "400", ALMANAC_TURN_TIMEOUT_MS: "300" });
    scriptToolUse(server, "mcp__everything__get-sum", { a: 1, b: 1 });
    const reply = await server.client.chat.completions.create({
      model: "almanac",
      user: "expire",
      messages: [{ role: "user", content: "Add 1 and 1." }],
    });
    expect(reply.choices[0]?.message.content).toContain(
      "Nobody approved this call of mcp__everything__get-sum",
    );
  }, 60_000);

  it("streams the approval question to an OpenAI client, which can answer it in a second request", async () => {
    const server = await startWithMcp();
    scriptToolUse(server, "mcp__everything__get-sum", { a: 4, b: 5 });
    const stream = await server.client.chat.completions.create({
      model: "almanac",
      user: "stream",
      stream: true,
      messages: [{ role: "user", content: "Add 4 and 5." }],
    });
    let text = "";
    let answered = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      const id = /approve ([A-Z2-9]{4})/.exec(text)?.[1];
      if (id !== undefined && !answered) {
        answered = true;
        const answer = await server.client.chat.completions.create({
          model: "almanac",
          user: "stream",
          messages: [{ role: "user", content: `approve ${id}` }],
        });
        expect(answer.choices[0]?.message.content).toBe(
          `Approved ${id}: running \`mcp__everything__get-sum\`.`,
        );
      }
    }
    expect(text).toContain("Approval needed");
    expect(text).toContain('"a": 4');
    expect(text).toContain("Tool said: The sum of 4 and 5 is 9.");
  }, 60_000);

  it("closes an approval left pending by a stop, and says so after the restart", async () => {
    const first = await startWithMcp();
    scriptToolUse(first, "mcp__everything__get-sum", { a: 7, b: 8 });
    const reply = first.client.chat.completions.create({
      model: "almanac",
      user: "restart",
      messages: [{ role: "user", content: "Add 7 and 8." }],
    });
    const asked = await pendingApproval(first);
    const stopping = Date.now();
    await first.server.close();
    // The waiting turn was answered with a refusal at once, not left hanging until the shutdown deadline.
    expect(Date.now() - stopping).toBeLessThan(5_000);
    await reply.catch(() => undefined);
    const second = await startWithMcp({}, first.home);
    const history = (await (await second.api("/api/approvals")).json()) as {
      pending: Approval[];
      approvals: Approval[];
    };
    expect(history.pending).toEqual([]);
    expect(history.approvals.find((approval) => approval.id === asked.id)).toMatchObject({ state: "closed" });
  }, 60_000);
});

describe("web_fetch through the real server", () => {
  it("reads a page the operator allowed as Markdown, and refuses loopback otherwise", async () => {
    const page = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(
        "<html><head><title>Release notes</title></head><body><nav>menu</nav><article><h1>Version 2</h1><p>The <b>deploy</b> step is now one command, and rollbacks take a minute instead of an hour.</p><p>Upgrade by pulling the new image and restarting the service.</p></article></body></html>",
      );
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    running.push({ close: () => new Promise<void>((resolve) => page.close(() => resolve())) });
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}/notes`;

    const refusing = await startTestServer();
    running.push(refusing);
    scriptToolUse(refusing, "web_fetch", { url });
    const refused = await refusing.client.chat.completions.create({
      model: "almanac",
      user: "web",
      messages: [{ role: "user", content: "Read the notes." }],
    });
    expect(refused.choices[0]?.message.content).toContain(`web_fetch could not read ${url}`);
    expect(refused.choices[0]?.message.content).toMatch(/loopback/);

    const allowing = await startTestServer({ env: { ALMANAC_WEB_FETCH_ALLOW: "127.0.0.1" } });
    running.push(allowing);
    scriptToolUse(allowing, "web_fetch", { url });
    const read = await allowing.client.chat.completions.create({
      model: "almanac",
      user: "web",
      messages: [{ role: "user", content: "Read the notes." }],
    });
    const text = read.choices[0]?.message.content ?? "";
    expect(text).toContain("# Release notes");
    expect(text).toContain("The **deploy** step is now one command");
    expect(text).not.toContain("menu");
  }, 60_000);
});

describe("the MCP servers on the command line", () => {
  it("tools list shows the tools and servers; doctor reports a ready server and a command that is missing", async () => {
    const server = await startWithMcp();
    const env = { ALMANAC_HOME: server.home, ALMANAC_ADMIN_TOKEN: TEST_TOKEN };
    const list = await runAlmanac(["tools", "list", "--url", server.server.url], { cwd: server.home, env });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^TOOL\s+SOURCE\s+APPROVAL\s+OFFERED TO/);
    expect(list.stdout).toMatch(/^mcp__everything__get-sum\s+mcp\s+asks owner\s+owner$/m);
    expect(list.stdout).toMatch(/^memory_search\s+memory\s+-\s+owner \+ shared chats$/m);
    expect(list.stdout).toMatch(/^everything\s+stdio\s+ready\s+\d+/m);

    const doctor = await runAlmanac(["doctor", "--url", server.server.url], {
      cwd: server.home,
      env: {
        ...env,
        ALMANAC_MCP_SERVERS: JSON.stringify({
          ...JSON.parse(everything()),
          missing: { command: "no-such-mcp-server-binary" },
        }),
      },
    });
    expect(doctor.stdout).toMatch(/^ok\s+mcp everything\s+ready over stdio, \d+ tools/m);
    // Not configured in the running server: checked from the configuration alone.
    expect(doctor.stdout).toMatch(
      /^fail\s+mcp missing\s+command "no-such-mcp-server-binary" not found on PATH/m,
    );
  }, 60_000);
});

describe("approvals in a chat app", () => {
  let discord: FakeDiscord;

  async function startWithDiscord(): Promise<TestServer> {
    discord = await startFakeDiscord();
    running.push(discord);
    const { ids, user } = discord.world;
    const server = await startWithMcp({
      ALMANAC_DISCORD_TOKEN: discord.token(),
      ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
      ALMANAC_DISCORD_ALLOW_FROM: user.id,
      ALMANAC_DISCORD_GROUPS: ids.channel,
      ALMANAC_DISCORD_DM_POLICY: "open",
    });
    await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000 });
    return server;
  }

  it("asks in the conversation, refuses a stranger's answer, and takes the owner's", async () => {
    const server = await startWithDiscord();
    scriptToolUse(server, "mcp__everything__get-sum", { a: 20, b: 22 });
    discord.dispatchMessage({ where: "dm", content: "Please add 20 and 22." });
    await waitUntil(() => discord.sent().some((sent) => sent.content.includes("Approval needed")), {
      timeoutMs: 10_000,
    });
    const question = discord.sent().find((sent) => sent.content.includes("Approval needed"));
    expect(question?.channelId).toBe(discord.world.ids.dmChannel);
    expect(question?.content).toContain('"b": 22');
    const id = /approve ([A-Z2-9]{4})/.exec(question?.content ?? "")?.[1] as string;

    // A bare "yes" is not consent: the owner is told what to type.
    discord.dispatchMessage({ where: "dm", content: "yes" });
    await waitUntil(() => discord.sent().some((sent) => sent.content.startsWith("An approval is waiting")), {
      timeoutMs: 10_000,
    });
    // Someone else who may talk to the assistant (DMs are open) cannot approve the owner's call.
    discord.dispatchMessage({
      where: "dm",
      content: `approve ${id}`,
      author: { id: "1600000000000000099", username: "mallory" },
    });
    await waitUntil(() => discord.sent().some((sent) => sent.content.startsWith("Only the owner")), {
      timeoutMs: 10_000,
    });
    discord.dispatchMessage({ where: "dm", content: `approve ${id}` });
    await waitUntil(
      () => discord.sent().some((sent) => sent.content.includes("The sum of 20 and 22 is 42")),
      {
        timeoutMs: 10_000,
      },
    );
    const approvals = (await (await server.api("/api/approvals")).json()) as { approvals: Approval[] };
    expect(approvals.approvals[0]).toMatchObject({
      id,
      state: "approved",
      decidedBy: `discord:${discord.world.user.id}`,
    });
  }, 60_000);
});
