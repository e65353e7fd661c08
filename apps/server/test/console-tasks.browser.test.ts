import { copyFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTIFACT_DIR,
  DOC_SCREENSHOT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  logIn,
  openWatchedPage,
} from "./browser-console.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

/** The console conversation the tasks are given to (the one the browser had open last). */
const CONVERSATION = "tasks-chat";
const CHAT_KEY = `web:default:web:${CONVERSATION}`;

interface Task {
  readonly id: string;
  readonly state: string;
  readonly sessionKey: string;
  readonly title: string;
}
interface Firing {
  readonly state: string;
  readonly reply?: string;
}

describe("the Tasks page in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  async function screenshot(name: string, forDocs = false): Promise<void> {
    const file = join(ARTIFACT_DIR, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    if (forDocs && process.env.UPDATE_DOC_SCREENSHOTS === "1") {
      await mkdir(DOC_SCREENSHOT_DIR, { recursive: true });
      await copyFile(file, join(DOC_SCREENSHOT_DIR, `console-${name}.png`));
    }
  }

  async function createTask(body: Record<string, string>): Promise<Task> {
    const response = await running.api("/api/tasks", { method: "POST", body: JSON.stringify(body) });
    expect(response.status).toBe(201);
    return (await response.json()) as Task;
  }

  /** What the server answers a schedule it refuses (the page is to show exactly this). */
  async function refusalOf(body: Record<string, string>): Promise<string> {
    const response = await running.api("/api/tasks", { method: "POST", body: JSON.stringify(body) });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("task.schedule_invalid");
    return error.message;
  }

  const taskItem = (id: string) => page.locator(`li.task[data-task="${id}"]`);

  async function goToTasks(): Promise<void> {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Tasks" }).click();
    await page.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
    await page.locator(".live-badge", { hasText: "live" }).waitFor();
  }

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer();
    // A scheduled turn is answered with its instruction (the second line of the schedule's message).
    running.llm.setFallback((request) => {
      const text = lastUserText(request);
      if (text.startsWith("[Scheduled task")) return script.text(`Reminder: ${text.split("\n")[1] ?? ""}`);
      return script.text("Noted.");
    });
    page = await openWatchedPage(browser, running.server.url, pageErrors);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it("creates a task for the console's conversation from the form, and shows it fire and be delivered, live", async () => {
    // The console's own conversation: the one this browser has open, with a first message as its title.
    await logIn(page, running.server.url, TEST_TOKEN, `/chat?conversation=${CONVERSATION}`);
    await page.locator("textarea[name=message]:enabled").fill("Tide tables, please.");
    await page.keyboard.press("Enter");
    await page.locator(".bubble.assistant:not(.streaming)", { hasText: "Noted." }).waitFor();

    await goToTasks();
    await page.getByText("Nothing scheduled.").waitFor();
    const form = page.getByRole("form", { name: "New task" });
    const conversation = form.getByLabel("Conversation");
    await expect(conversation.inputValue()).resolves.toBe(CHAT_KEY);
    // The conversations' titles come with their own request, which may answer after the tasks list.
    await conversation
      .locator("option:checked", { hasText: "This console's chat: Tide tables, please." })
      .waitFor({ state: "attached" });
    await form.getByLabel("Instruction").fill("Remind me to stretch.");
    await form.getByLabel(/^Title/).fill("Stretch");
    await form.getByRole("radio", { name: "In", exact: true }).check();
    await form.getByLabel("Delay").fill("2s");
    await form.getByRole("button", { name: "Create task" }).click();

    const created = form.getByRole("status");
    await created.getByText(/^Created T[A-Z0-9]+: Stretch\.$/).waitFor();
    const id = /Created (\S+):/.exec((await created.textContent()) ?? "")?.[1] ?? "";
    const item = taskItem(id);
    await item.getByRole("button", { name: "Stretch", exact: true }).waitFor();
    await expect(item.locator(".task-schedule").textContent()).resolves.toMatch(
      /^once, \w{3} \d+ \w{3} \d{4}, \d\d:\d\d \(/,
    );
    await expect(item.getByRole("link", { name: CHAT_KEY }).getAttribute("href")).resolves.toBe(
      `/sessions/${encodeURIComponent(CHAT_KEY)}`,
    );
    await expect(item.getByRole("link", { name: "open chat" }).getAttribute("href")).resolves.toBe(
      `/chat?conversation=${CONVERSATION}`,
    );
    await screenshot("tasks-created");

    // Open it: its instruction, and its firing as it goes, without a reload.
    await page.evaluate(() => {
      (window as unknown as { marker: string }).marker = "same page";
    });
    await item.getByRole("button", { name: "Stretch", exact: true }).click();
    await expect(item.locator(".task-instruction").textContent()).resolves.toBe("Remind me to stretch.");
    const delivered = item.locator('li.firing[data-state="delivered"]');
    await delivered.waitFor({ timeout: 20_000 });
    await expect(delivered.locator(".firing-reply").textContent()).resolves.toBe(
      "Reminder: Remind me to stretch.",
    );
    // Nothing failed on the way: no attempts to count.
    await expect(delivered.locator(".firing-attempts").count()).resolves.toBe(0);
    // Fired once, it is done: listed with the finished ones (opened, since it is the task open).
    await item.locator(".task-state", { hasText: "done" }).waitFor();
    await page.locator(".finished-tasks summary", { hasText: "Done and cancelled (1)" }).waitFor();
    await page
      .locator('.card:has(h2:text("Recent firings")) li.firing[data-state="delivered"]', {
        hasText: "Stretch",
      })
      .waitFor();
    expect(await page.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe("same page");
    const detail = (await (await running.api(`/api/tasks/${id}`)).json()) as {
      task: Task;
      firings: Firing[];
    };
    expect(detail.task).toMatchObject({ sessionKey: CHAT_KEY, title: "Stretch", state: "done" });
    expect(detail.firings).toMatchObject([{ state: "delivered", reply: "Reminder: Remind me to stretch." }]);
    await screenshot("tasks-fired");

    // The chat has the reminder.
    await item.getByRole("link", { name: "open chat" }).click();
    await page
      .locator(".bubble.assistant", { hasText: "Reminder: Remind me to stretch." })
      .waitFor({ timeout: 10_000 });
  });

  it("shows a reminder in the chat that is open when it is delivered", async () => {
    await page.locator("textarea[name=message]:enabled").waitFor();
    const before = await page.locator(".bubble.assistant").count();
    await createTask({ sessionKey: CHAT_KEY, instruction: "Drink some water.", in: "2s" });
    await page
      .locator(".bubble.assistant", { hasText: "Reminder: Drink some water." })
      .waitFor({ timeout: 20_000 });
    await expect(page.locator(".bubble.assistant").count()).resolves.toBe(before + 1);
    await screenshot("tasks-chat");
  });

  it("pauses, resumes, runs now and deletes a task, each seen live", async () => {
    const weekly = await createTask({
      sessionKey: "api:default:api:weekly",
      instruction: "Summarise the week.",
      title: "Weekly review",
      cron: "30 8 * * 1",
      timeZone: "Europe/Berlin",
    });
    await goToTasks();
    const item = taskItem(weekly.id);
    await expect(item.locator(".task-schedule").textContent()).resolves.toBe(
      'cron "30 8 * * 1" (Europe/Berlin)',
    );
    await expect(item.locator(".task-next time").textContent()).resolves.toMatch(
      /^Mon \d+ \w{3} \d{4}, 08:30 \(Europe\/Berlin\)$/,
    );
    await expect(item.locator(".next-relative").textContent()).resolves.toMatch(/^\(in \d+ (min|h|d)/);
    await expect(item.getByRole("link", { name: "open chat" }).count()).resolves.toBe(0);

    await item.getByRole("button", { name: "Pause: Weekly review" }).click();
    await item.locator(".task-state", { hasText: "paused" }).waitFor();
    await page.getByRole("status").getByText(`Paused ${weekly.id}`).waitFor();
    await expect(item.locator(".task-next").textContent()).resolves.toBe("paused");
    await item.getByRole("button", { name: "Resume: Weekly review" }).click();
    await item.locator(".task-state", { hasText: "active" }).waitFor();
    await item.locator(".task-next time").waitFor();

    await item.getByRole("button", { name: "Run now: Weekly review" }).click();
    const firing = item.locator('li.firing[data-state="delivered"]');
    await firing.waitFor({ timeout: 20_000 });
    await expect(firing.locator(".firing-reply").textContent()).resolves.toBe(
      "Reminder: Summarise the week.",
    );
    // Run now leaves the schedule as it was.
    await item.locator(".task-state", { hasText: "active" }).waitFor();
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await screenshot("tasks", true);

    // Delete asks first, in the page; Keep it keeps it.
    await item.getByRole("button", { name: "Delete: Weekly review" }).click();
    const confirm = item.getByRole("group", { name: "Delete Weekly review?" });
    await confirm.waitFor();
    // Focus is on the safe answer: an Enter pressed next keeps the task.
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent?.trim())).toBe("Keep it");
    await page.keyboard.press("Enter");
    await confirm.waitFor({ state: "detached" });
    // Back on Delete, where the question was asked.
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute("aria-label")))
      .toBe("Delete: Weekly review");
    expect((await running.api(`/api/tasks/${weekly.id}`)).status).toBe(200);
    await item.getByRole("button", { name: "Delete: Weekly review" }).click();
    await confirm.getByRole("button", { name: "Delete task" }).click();
    await item.waitFor({ state: "detached" });
    await page.getByRole("status").getByText(`Deleted ${weekly.id}; its history stays.`).waitFor();
    expect((await running.api(`/api/tasks/${weekly.id}`)).status).toBe(404);

    // A task deleted elsewhere (over the API) goes from the page too.
    const other = await createTask({
      sessionKey: CHAT_KEY,
      instruction: "Water the plants.",
      every: "1 day",
    });
    await taskItem(other.id).locator(".task-schedule", { hasText: "every 1 day" }).waitFor();
    expect((await running.api(`/api/tasks/${other.id}`, { method: "DELETE" })).status).toBe(200);
    await taskItem(other.id).waitFor({ state: "detached" });
  });

  it("shows the server's message beside the schedule when it refuses one, and creates nothing", async () => {
    const form = page.getByRole("form", { name: "New task" });
    await form.getByLabel("Instruction").fill("Check the tide.");
    const tasksBefore = ((await (await running.api("/api/tasks")).json()) as { tasks: Task[] }).tasks.length;

    await form.getByRole("radio", { name: "Every" }).check();
    await form.getByLabel("Interval").fill("10s");
    await form.getByRole("button", { name: "Create task" }).click();
    const expected = await refusalOf({ sessionKey: CHAT_KEY, instruction: "x", every: "10s" });
    const refusal = form.getByRole("alert");
    await expect(refusal.textContent()).resolves.toBe(expected);
    expect(expected).toMatch(/at least|once a minute/);
    await expect(form.getByLabel("Interval").getAttribute("aria-invalid")).resolves.toBe("true");

    await form.getByRole("radio", { name: "Cron" }).check();
    await form.getByLabel("Cron expression").fill("61 * * * *");
    await form.getByRole("button", { name: "Create task" }).click();
    await expect(refusal.textContent()).resolves.toBe(
      await refusalOf({ sessionKey: CHAT_KEY, instruction: "x", cron: "61 * * * *" }),
    );
    await expect(refusal.textContent()).resolves.toContain('"61 * * * *"');

    await form.getByRole("radio", { name: "At a time" }).check();
    await form.getByLabel("Date and time").fill("2020-01-01T09:00");
    await form.getByRole("button", { name: "Create task" }).click();
    await form
      .getByRole("alert")
      .getByText(/in the past; give a time after now\.$/)
      .waitFor();
    await screenshot("tasks-refused");
    // Editing the schedule takes the message away.
    await form.getByLabel("Date and time").fill("2099-01-01T09:00");
    await form.getByRole("alert").waitFor({ state: "detached" });

    const tasksAfter = ((await (await running.api("/api/tasks")).json()) as { tasks: Task[] }).tasks.length;
    expect(tasksAfter).toBe(tasksBefore);
  });

  it("fits a phone, and ran under the Content-Security-Policy without a violation or a page error", async () => {
    await createTask({
      sessionKey: CHAT_KEY,
      instruction: "A long instruction that wraps on a phone and never scrolls the page sideways at all.",
      title: "Morning briefing with a rather long title for a small screen",
      cron: "0 7 * * 1-5",
      timeZone: "America/Argentina/Buenos_Aires",
    });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
    await page.locator("li.task").first().waitFor();
    await page.locator("li.task button.task-title").first().click();
    await page.locator(".task-detail").first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot("tasks-phone");
    await expect(
      page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations),
    ).resolves.toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(running.llm.rejections()).toEqual([]);
  });
});
