import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTIFACT_DIR,
  DOC_SCREENSHOT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  openConversation as openConversationAt,
} from "./browser-console.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

/** A reply that tries every way a model's output could run code in the console. */
const HOSTILE = [
  "Here is **bold** text, a [safe link](https://example.com/docs) and a [bad link](javascript:window.__pwned='link').",
  "",
  "<img src=x onerror=\"window.__pwned='img'; alert('img')\">",
  "",
  "<script>window.__pwned='script'</script>",
  "",
  "<iframe src=\"javascript:window.__pwned='iframe'\"></iframe>",
  "",
  "![pixel](javascript:window.__pwned='image')",
  "",
  "<a href=\"javascript:window.__pwned='raw'\" onclick=\"window.__pwned='click'\">raw link</a>",
  "",
  "```ts",
  "const answer: number = 42; // the answer",
  "```",
].join("\n");

/** A reply that shows what the console renders, for the screenshot. */
const SHOWCASE = [
  "Here is how to **reset** a session from the shell:",
  "",
  "1. Find its key with `almanac sessions list`",
  "2. Reset it over the admin API:",
  "",
  "```bash",
  'curl -X POST -H "Authorization: Bearer $TOKEN" \\',
  '  "http://127.0.0.1:8787/api/sessions/web%3Adefault%3Aweb%3Adocs/reset"',
  "```",
  "",
  "| command | what it does |",
  "|---|---|",
  "| `/compact` | summarizes the older turns now |",
  "| `/new` | archives the conversation and starts fresh |",
  "",
  "> The transcript is kept: nothing said is ever lost.",
].join("\n");

/**
 * Six earlier days of history, as an operator's server would have them after a week: a daily log per day in the
 * workspace, and the stats journal's usage and memory samples for those days, written before the server starts.
 * The charts then show a week (two models, a memory that grew) and today's sample continues it.
 */
async function seedWeekOfHistory(home: string, now: number): Promise<void> {
  const stats = join(home, "state", "stats");
  const memory = join(home, "workspace", "memory");
  await mkdir(stats, { recursive: true });
  await mkdir(memory, { recursive: true });
  const samples: string[] = [];
  for (let daysAgo = 6; daysAgo >= 1; daysAgo -= 1) {
    const at = now - daysAgo * 86_400_000;
    const date = new Date(at).toISOString().slice(0, 10);
    const topics = ["tides at the harbour", "the dinghy's new sail", "knots for mooring"];
    const exchange = (topic: string) =>
      `- User: Tell me more about ${topic}; what did we settle last time, and what is still open?\n` +
      `- Assistant: We settled most of ${topic} already. What is open is the timing and who checks it next week.\n`;
    const log = topics
      .map((topic, index) => `## Session ${index + 1}\n\n${exchange(topic).repeat(8)}`)
      .join("\n");
    await writeFile(join(memory, `${date}.md`), `# ${date}\n\n${log}`);
    const usage = [
      { at, model: "scripted-model", promptTokens: 9_000 + (daysAgo % 3) * 4_100, completionTokens: 800 },
      {
        at: at + 1,
        model: "summarizer-model",
        promptTokens: 2_500 + (daysAgo % 2) * 900,
        completionTokens: 300,
      },
    ];
    await writeFile(
      join(stats, `usage-${date}.jsonl`),
      usage.map((line) => `${JSON.stringify(line)}\n`).join(""),
    );
    const files = 7 - daysAgo;
    samples.push(JSON.stringify({ date, at, files, chunks: files * 3 }));
  }
  await writeFile(join(stats, "memory-samples.jsonl"), `${samples.join("\n")}\n`);
}

const LONG_REPLY = Array.from({ length: 80 }, (_, index) => `word${index}`).join(" ");

describe("console: Markdown, Stop and charts in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let page: Page;
  let home: string | undefined;
  const dialogs: string[] = [];
  const updateDocs = process.env.UPDATE_DOC_SCREENSHOTS === "1";

  async function screenshot(name: string, forDocs = false): Promise<void> {
    const file = join(ARTIFACT_DIR, `${name}.png`);
    await page.screenshot({ path: file, fullPage: false });
    if (forDocs && updateDocs) {
      await mkdir(DOC_SCREENSHOT_DIR, { recursive: true });
      await copyFile(file, join(DOC_SCREENSHOT_DIR, `console-${name}.png`));
    }
  }

  async function openConversation(id: string): Promise<void> {
    await openConversationAt(page, running.server.url, id);
  }

  async function send(text: string): Promise<void> {
    // `fill` waits until the composer is enabled (the conversation's history has loaded).
    await page.fill("textarea[name=message]", text);
    await page.keyboard.press("Enter");
  }

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    home = await mkdtemp(join(tmpdir(), "almanac-console-ui-"));
    await seedWeekOfHistory(home, Date.now());
    running = await startTestServer({ home, env: { ALMANAC_MEMORY_TIME_ZONE: "UTC" } });
    running.llm.setFallback((request) => {
      const text = lastUserText(request);
      if (text.startsWith("hostile")) return script.text(HOSTILE, { chunkDelayMs: 5 });
      if (text.startsWith("showcase")) return script.text(SHOWCASE);
      if (text.startsWith("long")) return script.text(LONG_REPLY, { chunkDelayMs: 150 });
      if (text.startsWith("q:"))
        return script.text(`Noted: ${text}. ${"Some more words to fill the context. ".repeat(40)}`);
      // Anything else (the compaction's summary, the summarizer) gets a short answer.
      return script.text("The user asked about tides, sails and knots.");
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${running.server.url}/chat`);
    await page.fill("#token", TEST_TOKEN);
    await page.click("button[type=submit]");
    await page.getByRole("link", { name: "Sessions" }).waitFor();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await running?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("renders a hostile reply as Markdown without running any of it", async () => {
    await openConversation("hostile");
    await send("hostile: show me everything");
    const bubble = page.locator(".bubble.assistant:not(.streaming)").last();
    await bubble.locator("pre code.hljs").waitFor({ timeout: 20_000 });
    // Highlighted: the keyword is its own span.
    await expect(bubble.locator(".hljs-keyword", { hasText: "const" }).count()).resolves.toBeGreaterThan(0);
    await expect(bubble.locator("strong", { hasText: "bold" }).count()).resolves.toBe(1);
    // No element that could run or load anything made it into the page.
    for (const selector of ["script", "iframe", "img", "[onerror]", "[onclick]", "object", "embed"]) {
      await expect(bubble.locator(selector).count(), selector).resolves.toBe(0);
    }
    const links = await bubble.locator("a").evaluateAll((anchors) =>
      anchors.map((anchor) => ({
        text: anchor.textContent,
        href: anchor.getAttribute("href"),
        rel: anchor.getAttribute("rel"),
      })),
    );
    expect(links.length).toBeGreaterThanOrEqual(2);
    for (const link of links) {
      expect(link.rel, String(link.text)).toBe("noopener noreferrer");
      expect(link.href ?? "", String(link.text)).not.toMatch(/^\s*javascript:/i);
    }
    expect(links.find((link) => link.text === "safe link")?.href).toBe("https://example.com/docs");
    // Raw HTML is shown as the text it is.
    await expect(bubble.textContent()).resolves.toContain("<script>window.__pwned='script'</script>");
    // Clicking the neutralized links does nothing either.
    for (const name of ["bad link", "pixel"]) {
      const link = bubble.getByText(name, { exact: true });
      if ((await link.count()) > 0) await link.click();
    }
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    await screenshot("chat-hostile");
  });

  it("renders lists, code, tables and quotes in chat and in the session's history", async () => {
    await openConversation("docs");
    await send("showcase: how do I reset a session?");
    const bubble = page.locator(".bubble.assistant:not(.streaming)").last();
    await bubble.locator("table").waitFor({ timeout: 20_000 });
    await expect(bubble.locator("ol > li").count()).resolves.toBe(2);
    await expect(bubble.locator("pre[data-lang=bash] code.hljs").count()).resolves.toBe(1);
    await expect(bubble.locator("blockquote").count()).resolves.toBe(1);
    // Listed under its title once its first turn is stored.
    await page
      .getByRole("navigation", { name: "Conversations" })
      .getByRole("link", { name: /^showcase/ })
      .waitFor();
    await screenshot("chat-markdown", true);
    await page.getByRole("link", { name: "Sessions" }).click();
    await page.getByRole("link", { name: "web:default:web:docs" }).click();
    await page.locator(".message.assistant .markdown table").waitFor();
  });

  it("stops a streaming reply with the Stop button and keeps what was written", async () => {
    await openConversation("stoppable");
    await send("long: tell me a long story");
    const stop = page.getByRole("button", { name: "Stop" });
    await stop.waitFor();
    // Let a few words arrive first.
    await page.locator(".bubble.assistant.streaming", { hasText: "word3" }).waitFor({ timeout: 20_000 });
    await stop.click();
    const bubble = page.locator(".bubble.assistant:not(.streaming)").last();
    await bubble.locator(".stopped-mark").waitFor({ timeout: 10_000 });
    const text = (await bubble.locator(".markdown").textContent())?.trim() ?? "";
    expect(text.length).toBeGreaterThan(0);
    expect(LONG_REPLY.startsWith(text)).toBe(true);
    expect(text.length).toBeLessThan(LONG_REPLY.length);
    await page.getByRole("button", { name: "Send" }).waitFor();
    await expect(page.getByRole("alert").count()).resolves.toBe(0);
  });

  it("charts a session's context per turn with its compaction marked", async () => {
    await openConversation("charted");
    const ask = async (message: string) => {
      await send(message);
      await page.locator(".bubble.assistant:not(.streaming)", { hasText: `Noted: ${message}` }).waitFor();
    };
    for (const topic of ["tides", "sails", "knots", "charts", "weather"]) await ask(`q: ${topic}`);
    const compact = await running.api(
      `/api/sessions/${encodeURIComponent("web:default:web:charted")}/compact`,
      {
        method: "POST",
      },
    );
    expect(compact.status).toBe(200);
    await ask("q: anchors");
    await page.getByRole("link", { name: "Sessions" }).click();
    await page.getByRole("link", { name: "web:default:web:charted" }).click();
    const figure = page.getByRole("figure", { name: "Context per turn" });
    await figure.locator("canvas").first().waitFor();
    await expect(figure.getAttribute("data-points")).resolves.toBe("6");
    await figure.getByText(/before turn 6 \(command/).waitFor();
    // The canvas has a drawn line, not just a blank area.
    const drawn = await figure
      .locator("canvas")
      .first()
      .evaluate((canvas: HTMLCanvasElement) => {
        const context = canvas.getContext("2d");
        if (!context) return 0;
        const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
        let painted = 0;
        for (let index = 3; index < data.length; index += 4) if ((data[index] ?? 0) > 0) painted += 1;
        return painted;
      });
    expect(drawn).toBeGreaterThan(200);
    await figure.scrollIntoViewIfNeeded();
    await screenshot("session-context-chart", true);
  });

  it("charts tokens per day per model, summarizer jobs and memory growth", async () => {
    const put = await running.api("/api/memory/files/MEMORY.md", {
      method: "PUT",
      body: JSON.stringify({ content: "# Facts\n\n- The user sails a dinghy called Marigold.\n" }),
    });
    expect(put.status).toBeLessThan(300);
    // The index follows the write through its watcher; reading the chart data samples it once it is idle.
    await expect
      .poll(
        async () => {
          const body = (await (await running.api("/api/stats/memory?days=7")).json()) as {
            samples: Array<{ chunks: number }>;
          };
          return body.samples.at(-1)?.chunks ?? 0;
        },
        { timeout: 10_000 },
      )
      .toBeGreaterThan(0);
    await page.getByRole("link", { name: "Charts" }).click();
    for (const title of ["Tokens per day, by model", "Summarizer jobs per day", "Memory files and chunks"]) {
      const figure = page.getByRole("figure", { name: title });
      await figure.locator("canvas").first().waitFor();
      const points = Number(await figure.getAttribute("data-points"));
      expect(points, title).toBeGreaterThan(0);
    }
    await page
      .getByRole("figure", { name: "Tokens per day, by model" })
      .locator(".u-legend", { hasText: "scripted-model" })
      .waitFor();
    // The week recorded before this start is read back from the journal on disk.
    await page
      .getByRole("figure", { name: "Tokens per day, by model" })
      .locator(".u-legend", { hasText: "summarizer-model" })
      .waitFor();
    await page.getByRole("button", { name: "7 days" }).click();
    await expect
      .poll(() => page.getByRole("figure", { name: "Tokens per day, by model" }).getAttribute("data-points"))
      .toBe("7");
    await screenshot("charts", true);
  });
});

describe("console: first-run setup page", () => {
  it("opens on the setup page with the doctor's checks and examples when no model is configured", async () => {
    const running = await startTestServer({ withModel: false });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${running.server.url}/`);
      await page.fill("#token", TEST_TOKEN);
      await page.click("button[type=submit]");
      await page.getByRole("heading", { name: "No model is configured yet" }).waitFor();
      expect(new URL(page.url()).pathname).toBe("/setup");
      await page.locator("code.missing", { hasText: "ALMANAC_MODEL_BASE_URL" }).waitFor();
      await page.locator("code.missing", { hasText: "ALMANAC_MODEL_NAME" }).waitFor();
      const model = page.locator(".check", { hasText: "model" }).first();
      await expect(model.locator(".state").textContent()).resolves.toBe("fail");
      await page.locator(".check", { hasText: "data directory" }).waitFor();
      const tabs = await page.getByRole("tab").allTextContents();
      expect(tabs).toEqual(["OpenAI", "DashScope (Qwen)", "Ollama", "vLLM", "LM Studio"]);
      await page.getByRole("tab", { name: "Ollama" }).click();
      await expect(page.locator("pre.env-example").textContent()).resolves.toContain(
        "ALMANAC_MODEL_BASE_URL=http://127.0.0.1:11434/v1",
      );
      await page.getByRole("link", { name: "Setup" }).waitFor();
      await page.screenshot({ path: join(ARTIFACT_DIR, "setup.png") });
      if (process.env.UPDATE_DOC_SCREENSHOTS === "1") {
        await mkdir(DOC_SCREENSHOT_DIR, { recursive: true });
        await copyFile(join(ARTIFACT_DIR, "setup.png"), join(DOC_SCREENSHOT_DIR, "console-setup.png"));
      }
    } finally {
      await browser.close();
      await running.close();
    }
  }, 60_000);
});
