import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTIFACT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  logIn,
  openWatchedPage,
} from "./browser-console.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

/** The UTC date `days` before now (the memory time zone is UTC here). */
function daysAgo(days: number): string {
  return new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);
}

/** True for a request of the consolidation agent (it is the one offered MEMORY.md's tools). */
function isConsolidation(request: RecordedChatRequest): boolean {
  return JSON.stringify(request.tools ?? []).includes('"name":"read_memory"');
}

const LOG = `memory/${daysAgo(1)}.md`;

describe("memory care in the console, in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  let workspace: string;

  async function screenshot(name: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACT_DIR, `${name}.png`), fullPage: true });
  }

  const editor = () => page.getByRole("textbox", { name: "File content" });
  const forgetCard = () => page.locator(".memory-care-forget");
  const consolidationCard = () => page.locator(".memory-care-consolidation");
  const backupsCard = () => page.locator(".card.backups");

  async function forgetFromPage(phrase: string): Promise<void> {
    await forgetCard().getByRole("textbox", { name: "Phrase to forget" }).fill(phrase);
    await forgetCard().getByRole("button", { name: "Forget…" }).click();
    await forgetCard()
      .getByRole("group", { name: `Forget “${phrase}”?` })
      .getByRole("button", { name: "Forget it" })
      .click();
  }

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer({ env: { ALMANAC_TIME_ZONE: "UTC", ALMANAC_CONSOLIDATE_AT: "03:30" } });
    workspace = join(running.home, "workspace");
    await mkdir(join(workspace, "memory"), { recursive: true });
    await writeFile(
      join(workspace, "MEMORY.md"),
      "# Memory\n\n- The garage safe code is 4711.\n- Prefers tea over coffee.\n",
    );
    await writeFile(
      join(workspace, LOG),
      `# ${daysAgo(1)}\n\n- 09:10 Told the assistant the garage safe code is 4711.\n- 09:12 Ann likes long walks by the sea.\n`,
    );
    // The consolidation agent: reads MEMORY.md (slowly, so the page shows the run working), adds a fact, stops.
    running.llm.setFallback((request) => {
      if (!isConsolidation(request)) return script.text("ok");
      const results = request.messages.filter((message) => message.role === "tool").length;
      if (results === 0) return script.toolCalls([{ name: "read_memory", arguments: {} }], { delayMs: 1500 });
      if (results === 1)
        return script.toolCalls([
          {
            name: "add_to_memory",
            arguments: { text: "- Likes long walks by the sea", heading: "About me" },
          },
        ]);
      return script.text("Done.");
    });
    page = await openWatchedPage(browser, running.server.url, pageErrors, {
      acceptDownloads: true,
    });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it("forgets a phrase after saying what will happen, lists each removed line with its file, and shows the file without it", async () => {
    await logIn(page, running.server.url, TEST_TOKEN, "/memory?file=MEMORY.md");
    await expect.poll(() => editor().inputValue()).toContain("safe code is 4711");

    // Asked first, in the page; the focus is on the safe answer, and keeping it changes nothing.
    await forgetCard().getByRole("textbox", { name: "Phrase to forget" }).fill("safe code is 4711");
    await forgetCard().getByRole("button", { name: "Forget…" }).click();
    const question = forgetCard().getByRole("group", { name: "Forget “safe code is 4711”?" });
    await expect(question.textContent()).resolves.toMatch(
      /removed from MEMORY\.md, every daily log.*backups until about .+never write a line with it back/s,
    );
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent?.trim())).toBe("Keep it");
    await screenshot("memory-forget-question");
    await question.getByRole("button", { name: "Keep it" }).click();
    await question.waitFor({ state: "detached" });
    expect(await readFile(join(workspace, "MEMORY.md"), "utf8")).toContain("4711");

    await forgetCard().getByRole("button", { name: "Forget…" }).click();
    await question.getByRole("button", { name: "Forget it" }).click();
    const result = forgetCard().locator(".memory-care-result");
    await result.getByText("Forgot “safe code is 4711”: 2 lines removed from 2 files.").waitFor();
    await expect(
      result.locator('li[data-file="MEMORY.md"] .removed-line').allTextContents(),
    ).resolves.toEqual(["- The garage safe code is 4711."]);
    await expect(result.locator(`li[data-file="${LOG}"] .removed-line`).allTextContents()).resolves.toEqual([
      "- 09:10 Told the assistant the garage safe code is 4711.",
    ]);
    await result.getByText(/stay in the backups until .+\d/).waitFor();

    // Gone from the file on disk and from the editor (read again), the rest kept.
    expect(await readFile(join(workspace, "MEMORY.md"), "utf8")).toBe(
      "# Memory\n\n- Prefers tea over coffee.\n",
    );
    expect(await readFile(join(workspace, LOG), "utf8")).not.toContain("4711");
    await expect.poll(() => editor().inputValue()).toBe("# Memory\n\n- Prefers tea over coffee.\n");

    // Recorded as forgotten, by the console.
    const forgotten = forgetCard().getByRole("list", { name: "Forgotten phrases" });
    await forgotten.getByText("safe code is 4711").waitFor();
    await forgotten.getByText(/by console/).waitFor();
    const recorded = (await (await running.api("/api/memory/forgotten")).json()) as {
      forgotten: Array<{ phrase: string; by: string }>;
    };
    expect(recorded.forgotten).toMatchObject([{ phrase: "safe code is 4711", by: "console" }]);
    await screenshot("memory-forgot");

    // A phrase nothing mentions is recorded all the same, and the page says so.
    await forgetFromPage("purple elephant");
    await result
      .getByText("Nothing mentioned “purple elephant”; recorded as forgotten, so it is never written back.")
      .waitFor();
    await forgotten.getByText("purple elephant").waitFor();
  });

  it("shows consolidation's next run, runs it on request with progress, then what it changed", async () => {
    const card = consolidationCard();
    await expect(card.locator(".consolidation-phase").textContent()).resolves.toBe("idle");
    await expect(card.locator(".consolidation-schedule").textContent()).resolves.toMatch(
      /next run \w{3}.*\d\d:\d\d.*\(nightly at 03:30, UTC\)/,
    );
    await expect(card.locator(".consolidation-last").textContent()).resolves.toBe("none yet");

    await card.getByRole("button", { name: "Consolidate now" }).click();
    await card
      .getByRole("status")
      .getByText(/Consolidating|Starting/)
      .waitFor();
    await expect(card.locator(".consolidation-phase").textContent()).resolves.toBe("running");
    await expect(card.getByRole("button", { name: "Consolidating…" }).isDisabled()).resolves.toBe(true);
    await screenshot("memory-consolidating");

    await card.locator(".consolidation-phase", { hasText: "idle" }).waitFor({ timeout: 20_000 });
    await expect(card.locator(".consolidation-last").textContent()).resolves.toMatch(/asked for\): 1 change/);
    await expect(card.locator(".consolidation-changes li").allTextContents()).resolves.toEqual([
      'added "## About me", "Likes long walks by the sea"',
    ]);
    await card.getByRole("button", { name: "Consolidate now" }).waitFor();
    // The open file is read again: it has the new fact.
    await expect.poll(() => editor().inputValue()).toContain("- Likes long walks by the sea");
    await screenshot("memory-consolidated");
  });

  it("shows a failed run with its message, and consolidation off with the reason the button is disabled", async () => {
    // The server's answers for states this server does not reach on its own (a model that keeps failing, no
    // model at all), in the shape it documents.
    const isStatus = (url: URL) => url.pathname === "/api/memory/consolidation";
    const answer = (body: unknown) =>
      page.route(isStatus, (route) =>
        route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(body) }),
      );
    const now = Date.now();
    await answer({
      enabled: true,
      schedule: { at: null, timeZone: "UTC" },
      nextRunAt: null,
      budgetTokens: 2000,
      running: null,
      runs: [
        {
          id: "000002-0123abcd",
          seq: 2,
          trigger: "schedule",
          state: "failed",
          attempts: 3,
          createdAt: now - 120_000,
          updatedAt: now - 60_000,
          finishedAt: now - 60_000,
          lastError: {
            code: "model.unavailable",
            message: "The model server answered 503.",
            retryable: true,
            at: now,
          },
        },
      ],
    });
    await page.reload();
    const card = consolidationCard();
    await expect(card.locator(".consolidation-phase").textContent()).resolves.toBe("failed");
    await expect(card.locator(".consolidation-schedule").textContent()).resolves.toBe(
      "off: runs only when asked (ALMANAC_CONSOLIDATE_AT=off)",
    );
    await expect(card.locator(".consolidation-last").textContent()).resolves.toMatch(
      /\(nightly\): failed: The model server answered 503\.$/,
    );
    await expect(card.getByRole("button", { name: "Consolidate now" }).isEnabled()).resolves.toBe(true);
    await page.unroute(isStatus);

    await answer({ enabled: false, schedule: null, nextRunAt: null, running: null, runs: [] });
    await page.reload();
    const button = card.getByRole("button", { name: "Consolidate now" });
    await expect(button.isDisabled()).resolves.toBe(true);
    const reason = page.locator(`#${await button.getAttribute("aria-describedby")}`);
    await expect(reason.textContent()).resolves.toMatch(
      /^off Consolidation needs a model: set ALMANAC_MODEL_BASE_URL and ALMANAC_MODEL_NAME/,
    );
    await screenshot("memory-consolidation-off");
    await page.unroute(isStatus);
  });

  it("makes a backup on the System page, lists it, downloads its bytes, and deletes it after asking", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "System" }).click();
    const card = backupsCard();
    await card.getByText("No backups yet.").waitFor();
    await card
      .getByText(/holds every secret of the data directory \(the admin token, every transcript\)/)
      .waitFor();

    await card.getByRole("button", { name: "Create backup" }).click();
    const made = card.getByRole("status").getByText(/^Made (almanac-backup-\S+\.tar\.gz) \(/);
    await made.waitFor({ timeout: 30_000 });
    const name = /^Made (\S+) /.exec((await made.textContent()) ?? "")?.[1] ?? "";
    const listed = (await (await running.api("/api/backups")).json()) as {
      backups: Array<{ name: string; size: number }>;
    };
    expect(listed.backups.map((backup) => backup.name)).toEqual([name]);
    const item = card.locator(`li.backup[data-backup="${name}"]`);
    await item.locator(".backup-name", { hasText: name }).waitFor();
    await expect(item.locator(".backup-size").textContent()).resolves.toMatch(/^\d+(\.\d)? (B|KiB|MiB)$/);
    await screenshot("system-backups");

    // The download is the server's file, byte for byte, under its name; no API URL was followed for it.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      item.getByRole("button", { name: `Download ${name}` }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(name);
    expect(download.url()).toMatch(/^blob:/);
    const saved = await readFile(await download.path());
    const onServer = await readFile(join(running.home, "backups", name));
    expect(saved.length).toBe(listed.backups[0]?.size);
    expect(saved.equals(onServer)).toBe(true);
    await card.getByRole("status").getByText(`Downloaded ${name}.`).waitFor();

    // One being made elsewhere: the server's 409 is told in words.
    await page.route(
      (url) => url.pathname === "/api/backups",
      (route) =>
        route.request().method() === "POST"
          ? route.fulfill({
              status: 409,
              contentType: "application/json",
              body: JSON.stringify({
                error: {
                  code: "backup.running",
                  message: "A backup is being made already; wait for it to finish.",
                },
              }),
            })
          : route.fallback(),
    );
    await card.getByRole("button", { name: "Create backup" }).click();
    await card
      .getByRole("alert")
      .getByText("A backup is being made already; it is listed here once it is done.")
      .waitFor();
    await page.unroute((url) => url.pathname === "/api/backups");

    // Delete asks first; Keep it keeps it.
    await item.getByRole("button", { name: `Delete ${name}` }).click();
    const confirm = item.getByRole("group", { name: `Delete ${name}?` });
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent?.trim())).toBe("Keep it");
    await confirm.getByRole("button", { name: "Keep it" }).click();
    await confirm.waitFor({ state: "detached" });
    expect(await readdir(join(running.home, "backups"))).toContain(name);
    await item.getByRole("button", { name: `Delete ${name}` }).click();
    await confirm.getByRole("button", { name: "Delete backup" }).click();
    await item.waitFor({ state: "detached" });
    await card.getByRole("status").getByText(`Deleted ${name}.`).waitFor();
    await card.getByText("No backups yet.").waitFor();
    expect(await readdir(join(running.home, "backups"))).not.toContain(name);
  });

  it("fits a phone, and ran under the Content-Security-Policy without a violation or a page error", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${running.server.url}/memory`);
    await page.locator(".memory-care-forget").waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot("memory-care-phone");
    expect((await running.api("/api/backups", { method: "POST" })).status).toBe(201);
    await page.goto(`${running.server.url}/system`);
    await page.locator("li.backup").waitFor();
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    ).toBeLessThanOrEqual(0);
    await screenshot("system-backups-phone");
    await expect(
      page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations),
    ).resolves.toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(running.llm.rejections()).toEqual([]);
  });
});
