import { copyFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
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

/** The reference MCP server from npm, started by Almanac over stdio. */
const EVERYTHING_SERVER = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

interface Approval {
  readonly id: string;
  readonly sessionKey: string;
  readonly state: string;
  readonly tool: string;
  readonly decidedBy?: string;
}

describe("the Tools page and the approval dialog in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  async function screenshot(name: string, forDocs = false): Promise<void> {
    const file = join(ARTIFACT_DIR, `${name}.png`);
    await page.screenshot({ path: file });
    if (forDocs && process.env.UPDATE_DOC_SCREENSHOTS === "1") {
      await mkdir(DOC_SCREENSHOT_DIR, { recursive: true });
      await copyFile(file, join(DOC_SCREENSHOT_DIR, `console-${name}.png`));
    }
  }

  /** Starts a turn through the OpenAI endpoint in which the model adds `a` and `b` with the MCP tool. */
  function askToAdd(user: string, a: number, b: number) {
    return running.client.chat.completions.create({
      model: "almanac",
      user,
      messages: [{ role: "user", content: `Add ${a} and ${b}.` }],
    });
  }

  async function pendingApprovals(): Promise<Approval[]> {
    const body = (await (await running.api("/api/approvals")).json()) as { pending: Approval[] };
    return body.pending;
  }

  async function waitForPending(): Promise<Approval> {
    await expect.poll(async () => (await pendingApprovals()).length, { timeout: 15_000 }).toBe(1);
    return (await pendingApprovals())[0] as Approval;
  }

  const dialog = () => page.getByRole("dialog", { name: /Approval needed/ });

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer({
      env: {
        ALMANAC_MCP_SERVERS: JSON.stringify({
          everything: {
            command: process.execPath,
            args: [EVERYTHING_SERVER],
            tools: { echo: { approval: "never" } },
          },
        }),
      },
    });
    // The model adds the numbers it is asked to add with the MCP tool, then says what the tool said.
    running.llm.setFallback((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return script.text(`Tool said: ${String(last.content)}`);
      const [, a, b] = /Add (\d+) and (\d+)/.exec(lastUserText(request)) ?? [];
      if (a === undefined || b === undefined) return script.text("Noted.");
      return script.toolCalls([
        { name: "mcp__everything__get-sum", arguments: { a: Number(a), b: Number(b) } },
      ]);
    });
    page = await openWatchedPage(browser, running.server.url, pageErrors);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it("lists the MCP server, ready, and every tool by source with its approval and where it is offered", async () => {
    await logIn(page, running.server.url, TEST_TOKEN, "/tools");
    await page.getByRole("heading", { name: "Tools", level: 1 }).waitFor();
    await page.locator(".live-badge", { hasText: "live" }).waitFor();
    // The server may still be starting when the page opens: the page asks again until it settles.
    const server = page.locator('tr[data-server="everything"]');
    await server.locator(".state.ready", { hasText: "ready" }).waitFor({ timeout: 30_000 });
    await expect(server.locator('td[data-label="Transport"]').textContent()).resolves.toBe("stdio");
    const toolCount = Number(await server.locator('td[data-label="Tools"]').textContent());
    expect(toolCount).toBeGreaterThan(2);
    await expect(server.locator('td[data-label="Last error"]').textContent()).resolves.toBe("none");

    const mcp = page.getByRole("region", { name: "MCP servers" });
    await expect(mcp.locator("li[data-tool]").count()).resolves.toBe(toolCount);
    const sum = mcp.locator('li[data-tool="mcp__everything__get-sum"]');
    await sum.getByText("needs approval").waitFor();
    await sum.getByText("owner only").waitFor();
    await expect(sum.locator(".tool-description").textContent()).resolves.toMatch(/sum/i);
    const echo = mcp.locator('li[data-tool="mcp__everything__echo"]');
    await echo.getByText("owner only").waitFor();
    await expect(echo.getByText("needs approval").count()).resolves.toBe(0);
    await page.getByRole("region", { name: "Web" }).locator('li[data-tool="web_fetch"]').waitFor();
    await page.getByRole("region", { name: "Memory" }).locator("li[data-tool]").first().waitFor();
    const pending = page.locator(".pending-approvals");
    await pending.getByText("Nothing waits for you.").waitFor();
    await pending.getByText(/waits 10 min for an answer/).waitFor();
    await screenshot("tools-empty");
  });

  it("asks in a dialog on another page, and runs the call once approved there", async () => {
    await page.getByRole("link", { name: "Sessions" }).click();
    await page.getByRole("heading", { name: "Sessions", level: 1 }).waitFor();
    await page.locator(".live-badge", { hasText: "live" }).waitFor();
    const reply = askToAdd("approve-in-dialog", 2, 3);
    const asked = await waitForPending();

    await dialog().waitFor();
    await expect(dialog().getAttribute("data-approval")).resolves.toBe(asked.id);
    await dialog().locator(".approval-tool", { hasText: "mcp__everything__get-sum" }).waitFor();
    await expect(dialog().locator("pre.approval-arguments").textContent()).resolves.toBe(
      '{\n  "a": 2,\n  "b": 3\n}',
    );
    const session = dialog().getByRole("link", { name: asked.sessionKey });
    await expect(session.getAttribute("href")).resolves.toBe(
      `/sessions/${encodeURIComponent(asked.sessionKey)}`,
    );
    // The time left counts down.
    const timer = dialog().getByRole("timer");
    const first = await timer.textContent();
    expect(first).toMatch(/^\d+:\d\d left$/);
    await expect.poll(() => timer.textContent(), { timeout: 5_000 }).not.toBe(first);
    // Modal: the page behind cannot be used until the dialog is answered or set aside.
    await expect(dialog().evaluate((element) => element.matches(":modal"))).resolves.toBe(true);
    // Focus is on the title, not on a button an Enter meant for the page would press.
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe("approval-dialog-title");
    await page.getByRole("link", { name: /Tools.*1 approval waiting/ }).waitFor();
    await screenshot("approval-dialog", true);

    await dialog().getByRole("button", { name: "Approve" }).click();
    await dialog()
      .getByRole("status")
      .getByText(`Approved ${asked.id}: mcp__everything__get-sum runs now.`)
      .waitFor();
    const answer = await reply;
    expect(answer.choices[0]?.message.content).toContain("The sum of 2 and 3 is 5");
    // Answered here, the dialog stays to show the outcome until it is closed.
    await dialog().getByRole("button", { name: "Close" }).click();
    await dialog().waitFor({ state: "detached" });
    await expect(page.locator(".nav-count").count()).resolves.toBe(0);
    const history = (await (await running.api("/api/approvals?state=approved")).json()) as {
      approvals: Approval[];
    };
    expect(history.approvals).toMatchObject([{ id: asked.id, state: "approved", decidedBy: "console" }]);
  });

  it("sets the dialog aside with Escape and denies from the Tools page", async () => {
    await page.getByRole("link", { name: "Tools" }).click();
    await page.getByRole("heading", { name: "Tools", level: 1 }).waitFor();
    const reply = askToAdd("deny-on-page", 4, 5);
    const asked = await waitForPending();
    await dialog().waitFor();
    await page.keyboard.press("Escape");
    await dialog().waitFor({ state: "detached" });
    // Escape answers nothing: the call still waits.
    expect((await pendingApprovals()).map((approval) => approval.id)).toEqual([asked.id]);

    const item = page.locator(`.pending-approvals li[data-approval="${asked.id}"]`);
    await item.locator(".approval-tool", { hasText: "mcp__everything__get-sum" }).waitFor();
    await expect(item.locator("pre.approval-arguments").textContent()).resolves.toBe(
      '{\n  "a": 4,\n  "b": 5\n}',
    );
    await expect(item.getByRole("link", { name: asked.sessionKey }).getAttribute("href")).resolves.toBe(
      `/sessions/${encodeURIComponent(asked.sessionKey)}`,
    );
    await expect(item.getByRole("timer").textContent()).resolves.toMatch(/^\d+:\d\d left$/);
    // Escape put the focus back on the Tools link; the picture is of the page, not of that ring.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await screenshot("tools", true);

    await item.getByRole("button", { name: "Deny" }).click();
    await page
      .locator(".pending-approvals")
      .getByRole("status")
      .getByText(`Denied ${asked.id}: mcp__everything__get-sum will not run.`)
      .waitFor();
    const text = (await reply).choices[0]?.message.content ?? "";
    expect(text).toContain("The owner denied this call of mcp__everything__get-sum");
    expect(text).not.toContain("The sum of");
    await item.waitFor({ state: "detached" });
    const row = page.locator(`table.approvals tr[data-approval="${asked.id}"]`);
    await row.locator(".state.denied").waitFor();
    await row.getByText("by console").waitFor();
    await row.getByText("Show").click();
    await expect(row.locator("pre.approval-arguments").textContent()).resolves.toBe(
      '{\n  "a": 4,\n  "b": 5\n}',
    );
  });

  it("closes the dialog by itself when the approval is answered elsewhere", async () => {
    const reply = askToAdd("answered-elsewhere", 7, 8);
    const asked = await waitForPending();
    await dialog().waitFor();
    const answer = await running.api(`/api/approvals/${asked.id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(answer.status).toBe(200);
    await dialog().waitFor({ state: "detached" });
    expect((await reply).choices[0]?.message.content).toContain("The sum of 7 and 8 is 15");
  });

  it("says plainly when an answer comes after the approval was settled", async () => {
    // Cut the page off from the live events: it will not hear the approval answered elsewhere.
    await page.route("**/api/events", (route) => route.abort());
    await page.reload();
    await page.getByRole("heading", { name: "Tools", level: 1 }).waitFor();
    const reply = askToAdd("too-late", 1, 1);
    const asked = await waitForPending();
    await page.getByRole("button", { name: "Refresh" }).click();
    const item = page.locator(`.pending-approvals li[data-approval="${asked.id}"]`);
    await item.waitFor();
    await running.api(`/api/approvals/${asked.id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny" }),
    });
    await reply;
    await item.getByRole("button", { name: "Approve" }).click();
    await page
      .locator(".pending-approvals")
      .getByRole("alert")
      .getByText(`Already answered or expired: Approval ${asked.id} is already denied.`)
      .waitFor();
    await page.unroute("**/api/events");
  });

  it("fits a phone, and ran under the Content-Security-Policy without a violation or a page error", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.getByRole("heading", { name: "Tools", level: 1 }).waitFor();
    await page.locator('tr[data-server="everything"] .state.ready').waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot("tools-phone");
    // The dialog fits the phone too, and Deny works from it.
    const reply = askToAdd("phone", 6, 7);
    const asked = await waitForPending();
    await dialog().waitFor();
    const box = await dialog().boundingBox();
    expect(box?.x).toBeGreaterThanOrEqual(0);
    expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(390);
    await screenshot("approval-dialog-phone");
    await dialog().getByRole("button", { name: "Deny" }).click();
    await dialog().getByRole("status").getByText(`Denied ${asked.id}`).waitFor();
    expect((await reply).choices[0]?.message.content).toContain("The owner denied this call");
    await dialog().getByRole("button", { name: "Close" }).click();
    await dialog().waitFor({ state: "detached" });
    await expect(
      page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations),
    ).resolves.toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
