import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import { startFakeDingTalk } from "@almanac/testkit/dingtalk";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import { afterEach, describe, expect, it } from "vitest";
import { dingTalkEnv, startTestServer, type TestServer } from "./test-server.js";

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of running.splice(0).reverse()) await item.close();
});

interface Task {
  readonly id: string;
  readonly state: string;
  readonly sessionKey: string;
  readonly nextFireAt?: number;
}
interface Firing {
  readonly state: string;
  readonly late: boolean;
  readonly reply?: string;
}

/** The model: schedules when asked to remind, and speaks the reminder when the schedule says so. */
function remindingModel(server: TestServer, delay: string): void {
  server.llm.setFallback((request) => {
    const last = request.messages.at(-1);
    const text = lastUserText(request);
    if (last?.role === "tool") return script.text(`OK: ${String(last.content).split("\n")[0]}`);
    if (text.startsWith("[Scheduled task")) return script.text("Time to stretch!");
    if (/remind me/i.test(text))
      return script.toolCalls([
        { name: "task_create", arguments: { instruction: "Remind them to stretch.", in: delay } },
      ]);
    return script.text("Hello.");
  });
}

describe("reminders through the real server", () => {
  it("a Discord DM asks to be reminded in 2 s, and the reminder arrives there once", async () => {
    const discord: FakeDiscord = await startFakeDiscord();
    running.push(discord);
    const server = await startTestServer({
      env: {
        ALMANAC_DISCORD_TOKEN: discord.token(),
        ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
        ALMANAC_DISCORD_ALLOW_FROM: discord.world.user.id,
      },
    });
    running.push(server);
    await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000 });
    remindingModel(server, "2s");
    discord.dispatchMessage({ where: "dm", content: "remind me in 2 s to stretch" });
    await waitUntil(() => discord.sent().length === 1, { timeoutMs: 10_000 });
    expect(discord.sent()[0]?.content).toMatch(/^OK: Scheduled task T[A-Z2-9]{5}\./);
    await waitUntil(() => discord.sent().length === 2, { timeoutMs: 10_000 });
    expect(discord.sent()[1]?.content).toBe("Time to stretch!");
    expect(discord.sent()[1]?.channelId).toBe(discord.world.ids.dmChannel);
    // Nothing more: it fired once.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(discord.sent()).toHaveLength(2);
    const list = (await (await server.api("/api/tasks")).json()) as { tasks: Task[] };
    const [task] = list.tasks;
    expect(task).toMatchObject({ state: "done", sessionKey: `discord:default:dm:${discord.world.user.id}` });
    const detail = (await (await server.api(`/api/tasks/${task?.id}`)).json()) as { firings: Firing[] };
    expect(detail.firings).toMatchObject([{ state: "delivered", late: false, reply: "Time to stretch!" }]);
    // The schedule's message is marked as such: the person asked once, the schedule spoke once.
    const session = (await (
      await server.api(`/api/sessions/${encodeURIComponent(`discord:default:dm:${discord.world.user.id}`)}`)
    ).json()) as { messages: Array<{ role: string; marks: string[] }> };
    const users = session.messages.filter((message) => message.role === "user");
    expect(users.map((message) => message.marks.includes("scheduled"))).toEqual([false, true]);
    expect(server.llm.rejections()).toEqual([]);
  }, 30_000);

  it("a DingTalk chat asks to be reminded in 2 s; the reminder comes through the OpenAPI, once", async () => {
    const dingtalk = await startFakeDingTalk();
    running.push(dingtalk);
    const server = await startTestServer({
      env: dingTalkEnv(dingtalk),
    });
    running.push(server);
    await waitUntil(() => dingtalk.isConnected(), { timeoutMs: 10_000 });
    remindingModel(server, "2s");
    dingtalk.sendRobotMessage({ conversation: "single", text: "remind me in 2 s to stretch" });
    await waitUntil(() => dingtalk.sent().length === 1, { timeoutMs: 10_000 });
    expect(dingtalk.sent()[0]).toMatchObject({ route: "sessionWebhook" });
    expect(dingtalk.sent()[0]?.text).toMatch(/^OK: Scheduled task T[A-Z2-9]{5}\./);
    await waitUntil(() => dingtalk.sent().length === 2, { timeoutMs: 10_000 });
    // Spoken first, with no message to answer: never through a session webhook that may have expired.
    expect(dingtalk.sent()[1]).toMatchObject({ route: "openapi", text: "Time to stretch!" });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(dingtalk.sent()).toHaveLength(2);
    const list = (await (await server.api("/api/tasks")).json()) as { tasks: Task[] };
    expect(list.tasks[0]).toMatchObject({ state: "done", sessionKey: "dingtalk:default:dm:staff-001" });
    expect(dingtalk.problems()).toEqual([]);
  }, 30_000);

  it("the API creates, lists, pauses, resumes, runs and deletes a task, with clear errors for a bad schedule", async () => {
    const server = await startTestServer();
    running.push(server);
    server.llm.setFallback((request) => script.text(`Did: ${lastUserText(request).split("\n")[1] ?? ""}`));
    const create = (body: unknown) =>
      server.api("/api/tasks", { method: "POST", body: JSON.stringify(body) });
    const bad = await create({ sessionKey: "api:default:api:me", instruction: "x", cron: "61 * * * *" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "task.schedule_invalid",
    });
    expect((await server.api("/api/tasks/firings?limit=abc")).status).toBe(400);
    const past = await create({ sessionKey: "api:default:api:me", instruction: "x", at: "2020-01-01T09:00" });
    expect(((await past.json()) as { error: { message: string } }).error.message).toContain("in the past");

    const created = await create({
      sessionKey: "api:default:api:me",
      instruction: "Summarise the week.",
      cron: "30 8 * * 1",
      timeZone: "Europe/Berlin",
    });
    expect(created.status).toBe(201);
    const task = (await created.json()) as Task;
    expect(task.state).toBe("active");
    expect(new Date(task.nextFireAt ?? 0).getUTCDay()).toBe(1);
    expect(
      (await (await server.api(`/api/tasks/${task.id}/pause`, { method: "POST" })).json()) as Task,
    ).toMatchObject({
      state: "paused",
    });
    expect(
      (await (await server.api(`/api/tasks/${task.id}/resume`, { method: "POST" })).json()) as Task,
    ).toMatchObject({
      state: "active",
    });
    expect((await server.api(`/api/tasks/${task.id}/run`, { method: "POST" })).status).toBe(202);
    await waitUntil(
      async () => {
        const detail = (await (await server.api(`/api/tasks/${task.id}`)).json()) as { firings: Firing[] };
        return detail.firings[0]?.state === "delivered";
      },
      { timeoutMs: 10_000 },
    );
    // The reply is in the conversation's transcript.
    const session = (await (
      await server.api(`/api/sessions/${encodeURIComponent("api:default:api:me")}`)
    ).json()) as {
      messages: Array<{ role: string; content: Array<{ text?: string }> }>;
    };
    expect(session.messages.at(-1)?.content[0]?.text).toBe("Did: Summarise the week.");
    expect((await server.api(`/api/tasks/${task.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await server.api(`/api/tasks/${task.id}`)).status).toBe(404);
  }, 30_000);

  it("a group's task runs in the group's shared scope: no private memory, no workspace tools", async () => {
    const discord: FakeDiscord = await startFakeDiscord();
    running.push(discord);
    const server = await startTestServer({
      env: {
        ALMANAC_DISCORD_TOKEN: discord.token(),
        ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
        ALMANAC_DISCORD_ALLOW_FROM: discord.world.user.id,
        ALMANAC_DISCORD_GROUPS: discord.world.ids.channel,
      },
    });
    running.push(server);
    await mkdir(join(server.home, "workspace"), { recursive: true });
    await writeFile(join(server.home, "workspace", "MEMORY.md"), "# Memory\n\n- The safe code is 4711.\n");
    await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000 });
    remindingModel(server, "1s");
    discord.dispatchMessage({ where: "channel", content: " remind me in 1 s to stretch", mention: "user" });
    await waitUntil(() => discord.sent().length === 2, { timeoutMs: 10_000 });
    expect(discord.sent()[1]).toMatchObject({
      content: "Time to stretch!",
      channelId: discord.world.ids.channel,
    });
    const fired = server.llm
      .chatRequests()
      .find((request) => lastUserText(request).startsWith("[Scheduled task"));
    const prompt = JSON.stringify(fired?.messages);
    expect(prompt).not.toContain("4711");
    const tools = JSON.stringify(fired?.tools ?? []);
    expect(tools).toContain('"task_create"');
    expect(tools).not.toContain('"read_file"');
  }, 30_000);

  it("the heartbeat reads HEARTBEAT.md in its own conversation and speaks only when something needs attention", async () => {
    const discord: FakeDiscord = await startFakeDiscord();
    running.push(discord);
    const owner = `discord:default:dm:${discord.world.user.id}`;
    const server = await startTestServer({
      env: {
        ALMANAC_DISCORD_TOKEN: discord.token(),
        ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
        ALMANAC_DISCORD_ALLOW_FROM: discord.world.user.id,
        ALMANAC_HEARTBEAT_MINUTES: "30",
        ALMANAC_HEARTBEAT_SESSION: owner,
      },
    });
    running.push(server);
    await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000 });
    let answer = "[silent]";
    server.llm.setFallback(() => script.text(answer));
    const run = async (expected: string) => {
      expect((await server.api("/api/tasks/heartbeat/run", { method: "POST" })).status).toBe(202);
      await waitUntil(
        async () => {
          const detail = (await (await server.api("/api/tasks/heartbeat")).json()) as { firings: Firing[] };
          return detail.firings[0]?.state === expected;
        },
        { timeoutMs: 10_000 },
      );
    };
    // No checklist: nothing runs, nothing is said.
    await run("silent");
    expect(server.llm.chatRequests()).toHaveLength(0);
    await mkdir(join(server.home, "workspace"), { recursive: true });
    await writeFile(join(server.home, "workspace", "HEARTBEAT.md"), "- Passport renewal due before March.\n");
    await run("silent");
    expect(server.llm.chatRequests()).toHaveLength(1);
    expect(lastUserText(server.llm.chatRequests()[0] as never)).toContain(
      "Passport renewal due before March.",
    );
    expect(discord.sent()).toEqual([]);
    answer = "Your passport renewal is due before March: book an appointment this week.";
    await run("delivered");
    expect(discord.sent().map((sent) => sent.content)).toEqual([answer]);
    // The checks happened in the heartbeat's own conversation, not in the DM.
    const sessions = (await (await server.api("/api/sessions")).json()) as {
      sessions: Array<{ key: string }>;
    };
    expect(sessions.sessions.map((session) => session.key)).toEqual(["api:default:api:heartbeat"]);
  }, 30_000);
});
