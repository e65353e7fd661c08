import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";

/** The repository root. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const CONSOLE_DIR = join(REPO_ROOT, "apps/console");
/** Where browser tests keep their screenshots (gitignored). */
export const ARTIFACT_DIR = join(REPO_ROOT, "test-artifacts/console");
/** Screenshots used by `docs/console.md`, refreshed with `UPDATE_DOC_SCREENSHOTS=1`. */
export const DOC_SCREENSHOT_DIR = join(REPO_ROOT, "docs/screenshots");

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
