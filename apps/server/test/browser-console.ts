import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContextOptions, chromium, type Page } from "playwright-core";

/** The repository root. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const CONSOLE_DIR = join(REPO_ROOT, "apps/console");
/** Where browser tests keep their screenshots (gitignored). */
export const ARTIFACT_DIR = join(REPO_ROOT, "test-artifacts/console");
/** Screenshots used by `docs/console.md`, refreshed with `UPDATE_DOC_SCREENSHOTS=1`. */
export const DOC_SCREENSHOT_DIR = join(REPO_ROOT, "docs/screenshots");

/**
 * The Content-Security-Policy the server is to send with the console. The console must work under it: no
 * inline script, no eval or `new Function`, no `javascript:` URLs, nothing loaded from another origin.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' blob:; " +
  "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; " +
  "frame-ancestors 'none'";

const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestMtime(join(path, name))));
}

/** Builds the console with Vite when `dist` is missing or older than its sources. */
export function ensureConsoleBuilt(): void {
  const index = join(CONSOLE_DIR, "dist/index.html");
  const sources = Math.max(
    newestMtime(join(CONSOLE_DIR, "src")),
    newestMtime(join(CONSOLE_DIR, "index.html")),
  );
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  const vite = join(CONSOLE_DIR, "node_modules/vite/bin/vite.js");
  const result = spawnSync(process.execPath, [vite, "build", "--logLevel", "warn"], {
    cwd: CONSOLE_DIR,
    encoding: "utf8",
    timeout: 120_000,
  });
  if (result.status !== 0)
    throw new Error(`Building the console failed (vite build):\n${result.stdout}\n${result.stderr}`);
}

/** Launches headless Chromium; fails (never skips) when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}. Run scripts/ensure-chromium.sh (CI installs it), ` +
        "or set CHROMIUM_PATH to a Chromium binary.",
    );
  mkdirSync(ARTIFACT_DIR, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-quic",
      "--no-first-run",
    ],
  });
}

/** Opens the console at `path` and logs in with `token`; resolves once the app shows its navigation. */
export async function logIn(page: Page, baseUrl: string, token: string, path = "/chat"): Promise<void> {
  await page.goto(`${baseUrl}${path}`);
  await page.fill("#token", token);
  await page.click("button[type=submit]");
  await page.locator("header.top nav").waitFor({ state: "attached" });
}

/**
 * Opens a console conversation by its id, as a link to it does (`/chat?conversation=…`); the token stays in
 * the tab's sessionStorage across the load. The composer is enabled once its history has loaded.
 */
export async function openConversation(page: Page, baseUrl: string, id: string): Promise<void> {
  await page.goto(`${baseUrl}/chat?conversation=${encodeURIComponent(id)}`);
  await page.locator("textarea[name=message]:enabled").waitFor();
}

/**
 * A page of the console as a person sees it: the Content-Security-Policy the server sends applied to every page
 * (see console-hardening), violations collected in `window.cspViolations`, page errors and any browser dialog
 * pushed to `pageErrors` (a test ends by expecting none).
 */
export async function openWatchedPage(
  browser: Browser,
  serverUrl: string,
  pageErrors: string[],
  options: BrowserContextOptions = {},
): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const origin = new URL(serverUrl).origin;
  await context.route(
    (url) => url.origin === origin && !/^\/(api|assets)\//.test(url.pathname),
    async (route) => {
      const response = await route.fetch();
      await route.fulfill({
        response,
        headers: { ...response.headers(), "content-security-policy": CONSOLE_CSP },
      });
    },
  );
  await context.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { cspViolations: string[] }).cspViolations = seen;
    document.addEventListener("securitypolicyviolation", (event) =>
      seen.push(`${event.effectiveDirective} ${event.blockedURI}`),
    );
  });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  page.on("dialog", (browserDialog) => {
    pageErrors.push(`unexpected browser dialog: ${browserDialog.message()}`);
    void browserDialog.dismiss();
  });
  return page;
}
