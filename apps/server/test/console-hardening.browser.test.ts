import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import type { Browser, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTIFACT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  logIn,
  openConversation,
  openWatchedPage,
} from "./browser-console.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

const CHART_TITLES = ["Tokens per day, by model", "Summarizer jobs per day", "Memory files and chunks"];

/** Text that reads as JSON: an object or array opening on a quoted key or string, or a `"key":` pair. */
const JSON_LIKE = /[{[]\s*"|"\s*:\s*["{[\d]/;

describe("console: empty charts, the system page and hostile memory links in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer();
    running.llm.setFallback(() => script.text("Noted."));
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    // Shorter than the test's own timeout, so a failure names what never appeared.
    page.setDefaultTimeout(15_000);
    page.on("request", (request: Request) => requests.push(new URL(request.url()).pathname));
    await logIn(page, running.server.url, TEST_TOKEN, "/charts");
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it("says No data yet on every chart of a server that has recorded nothing", async () => {
    await page.getByRole("heading", { name: "Charts", level: 1 }).waitFor();
    for (const title of CHART_TITLES) {
      const figure = page.getByRole("figure", { name: title });
      await figure.getByText("No data yet").waitFor();
      await expect(figure.locator("canvas").count(), title).resolves.toBe(0);
      await expect(figure.getAttribute("data-points"), title).resolves.toBe("0");
    }
    await page.screenshot({ path: join(ARTIFACT_DIR, "charts-empty.png") });
  });

  it("shows the system page with labels and formatted values, no raw JSON", async () => {
    await page.getByRole("link", { name: "System" }).click();
    const index = page.locator(".card", { has: page.getByRole("heading", { name: "Memory index" }) });
    await index.getByText("Last sync", { exact: true }).waitFor();
    for (const label of ["State", "Files", "Chunks", "Embeddings"])
      await index.getByText(label, { exact: true }).first().waitFor();
    // The details stay available, folded away and readable.
    for (const summary of await page.locator("main details > summary").all()) await summary.click();
    const config = page.locator(".card", { has: page.getByRole("heading", { name: "Server and model" }) });
    await config.getByText("scripted-model").first().waitFor();
    await config.getByText("***").first().waitFor();
    await page.screenshot({ path: join(ARTIFACT_DIR, "system-details.png"), fullPage: true });
    const text = (await page.locator("main").textContent()) ?? "";
    expect(text).not.toMatch(JSON_LIKE);
    expect(text).not.toContain("[object Object]");
    expect(text).not.toContain("sk-test-model-key-must-not-leak");
    expect(text).not.toContain(TEST_TOKEN);
    await expect(
      page.locator("main pre, main code").evaluateAll((nodes) => nodes.map((node) => node.textContent ?? "")),
    ).resolves.toSatisfy((blocks: string[]) => blocks.every((block) => !JSON_LIKE.test(block)));
  });

  it("refuses a memory file link that climbs out of the memory API, without requesting what it points at", async () => {
    await page.getByRole("link", { name: "Memory" }).click();
    await page.getByRole("heading", { name: "Memory", level: 1 }).waitFor();
    const hostile = [
      "../../info",
      "memory/../../../info",
      "..\\..\\info",
      "/api/info",
      "memory%2F..%2F..%2F..%2Finfo",
      ".",
    ];
    for (const file of hostile) {
      requests.length = 0;
      // A link inside the console (as a search hit or a crafted link would be followed): no reload.
      await page.evaluate(
        (href) => {
          history.pushState(null, "", href);
          window.dispatchEvent(new PopStateEvent("popstate"));
        },
        `/memory?file=${encodeURIComponent(file)}`,
      );
      await page.locator(".editor [role=alert]").waitFor();
      await expect(page.locator(".editor [role=alert]").textContent(), file).resolves.toMatch(
        /not a memory file/i,
      );
      await page.waitForTimeout(200);
      expect(
        requests.filter((path) => !path.startsWith("/api/memory/")),
        file,
      ).toEqual([]);
      await expect(page.getByRole("textbox", { name: "File content" }).count(), file).resolves.toBe(0);
    }
    // Opened directly (a link from elsewhere), the page shows the error and asks for nothing more than a plain
    // load of the memory page does (the app's own check of the server, once).
    const loadAndCount = async (search: string) => {
      requests.length = 0;
      await page.goto(`${running.server.url}/memory${search}`);
      await page.getByRole("heading", { name: "Files" }).waitFor();
      await page.waitForTimeout(500);
      return requests.filter((path) => path === "/api/info").length;
    };
    const plain = await loadAndCount("");
    expect(await loadAndCount("?file=..%2F..%2Finfo")).toBe(plain);
    await expect(page.locator(".editor [role=alert]").textContent()).resolves.toMatch(/not a memory file/i);
    await expect(page.getByRole("textbox", { name: "File content" }).count()).resolves.toBe(0);
    // A real file still opens.
    const put = await running.api("/api/memory/files/memory/notes.md", {
      method: "PUT",
      body: JSON.stringify({ content: "# Notes\n" }),
    });
    expect(put.status).toBeLessThan(300);
    await page.goto(`${running.server.url}/memory?file=${encodeURIComponent("memory/notes.md")}`);
    await expect(page.getByRole("textbox", { name: "File content" }).inputValue()).resolves.toBe("# Notes\n");
  });
});

describe("console under the server's Content-Security-Policy", () => {
  let running: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer();
    running.llm.setFallback((request) =>
      lastUserText(request).startsWith("code")
        ? script.text("Some **bold** and code:\n\n```ts\nconst tide: string = 'high';\n```")
        : script.text("Noted."),
    );
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  it("serves a page with no inline script, event handler attribute or javascript: URL", async () => {
    const html = await (await fetch(`${running.server.url}/`)).text();
    const scripts = html.match(/<script\b[^>]*>/gi) ?? [];
    expect(scripts.length).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag).toMatch(/\ssrc="\/assets\//);
    // Nothing between a script's tags: its code comes from its file.
    expect(html).not.toMatch(/<script\b[^>]*>\s*[^<\s]/i);
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/javascript:/i);
  });

  it("runs every page with the policy in force and no violation", async () => {
    // The console's pages (not the API or the hashed assets) get the header, as the server will send it.
    const errors: string[] = [];
    const page = await openWatchedPage(browser, running.server.url, errors, {
      viewport: { width: 1280, height: 860 },
    });
    await page
      .context()
      .grantPermissions(["clipboard-read", "clipboard-write"], { origin: running.server.url });
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    const violations = () =>
      page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);

    await logIn(page, running.server.url, TEST_TOKEN);
    await openConversation(page, running.server.url, "csp");
    await page.fill("textarea[name=message]", "code: show me");
    await page.keyboard.press("Enter");
    const bubble = page.locator(".bubble.assistant:not(.streaming)").last();
    await bubble.locator("pre code.hljs").waitFor({ timeout: 20_000 });
    await bubble.getByRole("button", { name: "Copy code" }).click();
    await bubble.getByText("Copied").waitFor();
    await page.getByRole("button", { name: "New chat" }).click();
    // The server journals the turn and its model call after answering: wait until the charts can show them.
    const key = encodeURIComponent("web:default:web:csp");
    await expect
      .poll(async () => {
        const history = (await (await running.api(`/api/sessions/${key}/context-history`)).json()) as {
          turns?: unknown[];
        };
        const tokens = (await (await running.api("/api/stats/tokens?days=30")).json()) as {
          days?: Array<{ models?: Record<string, unknown> }>;
        };
        const used = tokens.days?.some((day) => Object.keys(day.models ?? {}).length > 0) ?? false;
        return (history.turns?.length ?? 0) > 0 && used;
      })
      .toBe(true);
    await page.getByRole("link", { name: "Sessions" }).click();
    await page.getByRole("link", { name: "web:default:web:csp" }).click();
    await page.getByRole("figure", { name: "Context per turn" }).locator("canvas").first().waitFor();
    await page.getByRole("link", { name: "Charts" }).click();
    await page.getByRole("figure", { name: "Tokens per day, by model" }).locator("canvas").first().waitFor();
    await page.getByRole("link", { name: "Memory" }).click();
    await page.getByRole("heading", { name: "Files" }).waitFor();
    await page.getByRole("link", { name: "System" }).click();
    await page.getByRole("heading", { name: "Memory index" }).waitFor();
    for (const summary of await page.locator("main details > summary").all()) await summary.click();
    await page.reload();
    await page.getByRole("heading", { name: "Memory index" }).waitFor();

    expect(await violations()).toEqual([]);
    expect(errors.filter((text) => /content security policy|refused to/i.test(text))).toEqual([]);
    // The policy is really in force (and the listener hears it): an inline script is refused.
    await page.evaluate(() => {
      const inline = document.createElement("script");
      inline.textContent = "window.inlineRan = true";
      document.head.append(inline);
    });
    await expect.poll(violations).toEqual([expect.stringMatching(/^script-src(-elem)? inline$/)]);
    expect(
      await page.evaluate(() => (window as unknown as { inlineRan?: boolean }).inlineRan),
    ).toBeUndefined();
    await page.context().close();
  });
});
