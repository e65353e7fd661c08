import { copyFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { script } from "@almanac/testkit";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTIFACT_DIR,
  DOC_SCREENSHOT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  openConversation,
} from "./browser-console.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

const REPLY = "The harbour master logs every arrival, the tide table and the pilot on duty for each ship.";
const KEY = "web:default:web:harbour";

describe("live console in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let watcher: Page;
  let chatter: Page;

  async function logIn(page: Page, path: string): Promise<void> {
    await page.goto(`${running.server.url}${path}`);
    await page.fill("#token", TEST_TOKEN);
    await page.click("button[type=submit]");
    await page.getByRole("link", { name: "Sessions" }).waitFor();
  }

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer();
    // Slow enough that the watching tab sees the turn running before it ends.
    running.llm.setFallback(() => script.text(REPLY, { chunkDelayMs: 120 }));
    // Two tabs of one browser: each keeps its own token (sessionStorage is per tab).
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    watcher = await context.newPage();
    chatter = await context.newPage();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it("shows another tab's chat on the sessions page as it runs and ends, without a reload", async () => {
    await logIn(watcher, "/sessions");
    await watcher.getByRole("link", { name: "Sessions" }).click();
    await watcher.locator(".live-badge", { hasText: "live" }).waitFor();
    // A reload would drop this marker.
    await watcher.evaluate(() => {
      (window as unknown as { marker: string }).marker = "same page";
    });

    await logIn(chatter, "/chat");
    await openConversation(chatter, running.server.url, "harbour");
    await chatter.fill("textarea[name=message]", "Who keeps the harbour log?");
    await chatter.keyboard.press("Enter");

    const row = watcher.locator(`tr[data-session="${KEY}"]`);
    await row.locator(".state.running").waitFor({ timeout: 10_000 });
    const file = join(ARTIFACT_DIR, "sessions-live.png");
    await watcher.screenshot({ path: file });
    if (process.env.UPDATE_DOC_SCREENSHOTS === "1") {
      await mkdir(DOC_SCREENSHOT_DIR, { recursive: true });
      await copyFile(file, join(DOC_SCREENSHOT_DIR, "console-sessions-live.png"));
    }
    await chatter
      .locator(".bubble.assistant:not(.streaming)", { hasText: REPLY })
      .waitFor({ timeout: 20_000 });
    await row.locator(".state.running").waitFor({ state: "detached", timeout: 10_000 });
    await row.locator('td[data-label="Messages"]', { hasText: "2" }).waitFor();
    expect(await watcher.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe("same page");
  });

  it("shows the summarizer job a /new queues on the system page, without a reload", async () => {
    await watcher.getByRole("link", { name: "System" }).click();
    await watcher.locator(".live-badge", { hasText: "live" }).waitFor();
    await watcher.getByText("No jobs.").waitFor();
    await chatter.fill("textarea[name=message]", "/new");
    await chatter.keyboard.press("Enter");
    await watcher.locator("table.jobs td.key", { hasText: KEY }).waitFor({ timeout: 10_000 });
    expect(await watcher.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe("same page");
  });
});
