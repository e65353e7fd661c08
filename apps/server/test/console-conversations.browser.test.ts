import { copyFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTIFACT_DIR,
  DOC_SCREENSHOT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  logIn,
  openConversation,
} from "./browser-console.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

const CODE = 'def tide(hour):\n    return "high" if hour % 12 < 6 else "low"';
const CODE_REPLY = ["Here is the rule of twelfths, roughly:", "", "```python", CODE, "```"].join("\n");
const LONG_REPLY = Array.from({ length: 80 }, (_, index) => `word${index}`).join(" ");
const LONG_QUESTION =
  "Which knots hold a dinghy to a mooring ring overnight when the wind turns and the tide runs hard?";

describe("console conversations, code blocks, times and stopped replies in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const updateDocs = process.env.UPDATE_DOC_SCREENSHOTS === "1";

  async function screenshot(name: string, forDocs = false): Promise<void> {
    const file = join(ARTIFACT_DIR, `${name}.png`);
    await page.screenshot({ path: file, fullPage: false });
    if (forDocs && updateDocs) {
      await mkdir(DOC_SCREENSHOT_DIR, { recursive: true });
      await copyFile(file, join(DOC_SCREENSHOT_DIR, `console-${name}.png`));
    }
  }

  async function send(text: string): Promise<void> {
    // `fill` waits until the composer is enabled (the conversation's history has loaded).
    await page.fill("textarea[name=message]", text);
    await page.keyboard.press("Enter");
  }

  /** Sends `text` and waits until its reply is complete. */
  async function ask(text: string, reply: string): Promise<void> {
    await send(text);
    await page.locator(".bubble.assistant:not(.streaming)", { hasText: reply }).waitFor({ timeout: 20_000 });
  }

  const sidebar = () => page.getByRole("navigation", { name: "Conversations" });
  const conversationParam = () => new URL(page.url()).searchParams.get("conversation");

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer();
    running.llm.setFallback((request) => {
      const text = lastUserText(request);
      if (text.startsWith("code")) return script.text(CODE_REPLY);
      if (text.startsWith("long")) return script.text(LONG_REPLY, { chunkDelayMs: 150 });
      if (text.startsWith("How do tides")) return script.text("Tides follow the moon.");
      if (text.startsWith("Which knots")) return script.text("A round turn and two half hitches.");
      return script.text("Noted.");
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: running.server.url });
    // Shorter than the test's own timeout, so a failure names what never appeared.
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    await logIn(page, running.server.url, TEST_TOKEN);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it("lists the console's conversations newest first with titles and times, and switches between them", async () => {
    // A session of another channel is not a console conversation.
    await running.client.chat.completions.create({
      model: "almanac",
      user: "mobile-app",
      messages: [{ role: "user", content: "From the OpenAI API." }],
    });
    await sidebar().getByRole("button", { name: "New chat" }).click();
    const first = conversationParam();
    expect(first).toBeTruthy();
    await ask("How do tides work?", "Tides follow the moon.");
    await sidebar()
      .getByRole("link", { name: /How do tides work\?/ })
      .waitFor();

    await sidebar().getByRole("button", { name: "New chat" }).click();
    await expect.poll(conversationParam).not.toBe(first);
    const second = conversationParam();
    await expect(page.locator(".bubble").count()).resolves.toBe(0);
    await ask(LONG_QUESTION, "A round turn and two half hitches.");
    // Titles: the first message, cut to about 60 characters with an ellipsis.
    // The new conversation is listed as "New chat" until its first turn is stored, then by its title.
    await sidebar()
      .getByRole("link", { name: /^Which knots/ })
      .waitFor();
    const titles = sidebar().locator(".conversation-title");
    await expect.poll(() => titles.count()).toBe(2);
    const [newest, older] = await titles.allTextContents();
    expect(older).toBe("How do tides work?");
    expect(newest?.endsWith("…")).toBe(true);
    expect(LONG_QUESTION.startsWith(newest?.slice(0, -1).trimEnd() ?? "-")).toBe(true);
    expect(Array.from(newest ?? "").length).toBeLessThanOrEqual(60);
    await expect(sidebar().getByText("From the OpenAI API.").count()).resolves.toBe(0);
    // Each entry says when it was last active; the open one is highlighted.
    for (const time of await sidebar().locator("a time").all())
      expect(Number.isNaN(Date.parse((await time.getAttribute("datetime")) ?? ""))).toBe(false);
    const current = sidebar().locator('a[aria-current="page"]');
    await expect(current.locator(".conversation-title").textContent()).resolves.toBe(newest);
    await screenshot("chat", true);

    // Back to the first conversation: its history, and it is the highlighted one.
    await sidebar()
      .getByRole("link", { name: /How do tides work\?/ })
      .click();
    await expect.poll(conversationParam).toBe(first);
    await page.locator(".bubble.user", { hasText: "How do tides work?" }).waitFor();
    await page.locator(".bubble.assistant", { hasText: "Tides follow the moon." }).waitFor();
    await expect(page.locator(".bubble", { hasText: "half hitches" }).count()).resolves.toBe(0);
    await expect(current.locator(".conversation-title").textContent()).resolves.toBe("How do tides work?");
    // A reload keeps the conversation open and the list as the server has it.
    await page.reload();
    await page.locator(".bubble.assistant", { hasText: "Tides follow the moon." }).waitFor();
    await expect.poll(() => titles.count()).toBe(2);
    await sidebar()
      .getByRole("link", { name: newest ?? "" })
      .click();
    await expect.poll(conversationParam).toBe(second);
    await page.locator(".bubble.assistant", { hasText: "half hitches" }).waitFor();
  });

  it("copies a code block to the clipboard with its Copy button", async () => {
    await openConversation(page, running.server.url, "code");
    await ask("code: the rule of twelfths", "rule of twelfths");
    const bubble = page.locator(".bubble.assistant").last();
    const copy = bubble.getByRole("button", { name: "Copy code" });
    await copy.click();
    await bubble.getByText("Copied").waitFor();
    await expect(page.evaluate(() => navigator.clipboard.readText())).resolves.toBe(CODE);
  });

  it("shows when each message was said, live and from the history", async () => {
    const before = Date.now();
    await openConversation(page, running.server.url, "times");
    await ask("Noted?", "Noted.");
    const times = async () =>
      page
        .locator(".bubble time")
        .evaluateAll((elements) => elements.map((element) => element.getAttribute("datetime") ?? ""));
    const live = (await times()).map((value) => Date.parse(value));
    expect(live).toHaveLength(2);
    for (const at of live) {
      expect(at).toBeGreaterThanOrEqual(before - 60_000);
      expect(at).toBeLessThanOrEqual(Date.now() + 60_000);
    }
    await expect(page.locator(".bubble time").first().textContent()).resolves.toMatch(/\d/);
    // After a reload the times are the ones the history keeps.
    const detail = (await (
      await running.api(`/api/sessions/${encodeURIComponent("web:default:web:times")}`)
    ).json()) as { messages: Array<{ timestamp: number }> };
    await page.reload();
    await page.locator(".bubble.assistant", { hasText: "Noted." }).waitFor();
    expect((await times()).map((value) => Date.parse(value))).toEqual(
      detail.messages.map((message) => message.timestamp),
    );
  });

  it("marks a stopped reply with a stopped badge instead of the text marker, live and after a reload", async () => {
    await openConversation(page, running.server.url, "stoppable");
    await send("long: tell me a long story");
    await page.locator(".bubble.assistant.streaming", { hasText: "word3" }).waitFor({ timeout: 20_000 });
    await page.getByRole("button", { name: "Stop" }).click();
    const bubble = page.locator(".bubble.assistant:not(.streaming)").last();
    const check = async () => {
      await expect(bubble.locator(".stopped-mark").textContent()).resolves.toBe("stopped");
      const text = (await bubble.locator(".bubble-text").textContent())?.trim() ?? "";
      expect(text).not.toContain("[stopped]");
      expect(text.length).toBeGreaterThan(0);
      expect(LONG_REPLY.startsWith(text)).toBe(true);
    };
    await bubble.locator(".stopped-mark").waitFor({ timeout: 10_000 });
    await check();
    await page.reload();
    await bubble.locator(".stopped-mark").waitFor();
    await check();
    await screenshot("chat-stopped", true);
  });

  it("works on a phone: a menu for the pages, a drawer for the conversations, nothing scrolls sideways", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    await openConversation(page, running.server.url, "code");
    expect(await overflow()).toBeLessThanOrEqual(0);
    // The pages sit behind the menu button.
    const menu = page.getByRole("button", { name: "Menu" });
    await expect(page.getByRole("link", { name: "Sessions" }).isVisible()).resolves.toBe(false);
    await menu.click();
    await expect(menu.getAttribute("aria-expanded")).resolves.toBe("true");
    await screenshot("phone-menu", true);
    for (const [link, heading] of [
      ["Sessions", "Sessions"],
      ["Memory", "Memory"],
      ["Charts", "Charts"],
      ["System", "System"],
    ] as const) {
      if ((await menu.getAttribute("aria-expanded")) !== "true") await menu.click();
      await page.getByRole("link", { name: link, exact: true }).click();
      await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
      // Choosing a page closes the menu.
      await expect(menu.getAttribute("aria-expanded")).resolves.toBe("false");
      await page.waitForTimeout(300);
      expect(await overflow(), link).toBeLessThanOrEqual(0);
    }
    await menu.click();
    await page.getByRole("link", { name: "Chat", exact: true }).click();
    // The conversations are a drawer: hidden until asked for, closed again once one is chosen.
    await page.locator("textarea[name=message]:enabled").waitFor();
    await expect(sidebar().isVisible()).resolves.toBe(false);
    await page.getByRole("button", { name: "Conversations" }).click();
    await sidebar().waitFor();
    await screenshot("phone-conversations", true);
    await sidebar()
      .getByRole("link", { name: /How do tides work\?/ })
      .click();
    await page.locator(".bubble.assistant", { hasText: "Tides follow the moon." }).waitFor();
    await expect(sidebar().isVisible()).resolves.toBe(false);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await screenshot("phone-chat", true);
  });
});
