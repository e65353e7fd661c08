#!/usr/bin/env node
// Builds the web console into apps/console/dist with Vite, only when a source is newer than the last build
// (`--force` builds anyway): `pnpm start` runs this on every start, and a current build costs a few stat calls.
// Prints one line when it builds, nothing when it skips. Plain JavaScript: runs without a TypeScript loader.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const consoleDir = fileURLToPath(new URL("..", import.meta.url));
const builtIndex = join(consoleDir, "dist", "index.html");
/** What the build reads besides node_modules: a change to any of them means the output may differ. */
const inputs = ["src", "index.html", "package.json", "tsconfig.json", "../../tsconfig.base.json"].map(
  (path) => join(consoleDir, path),
);

/** The newest modification time under `path` (a file, or a directory walked recursively), and which file. */
function newest(path) {
  const info = statSync(path);
  if (!info.isDirectory()) return { path, mtimeMs: info.mtimeMs };
  let found = { path, mtimeMs: info.mtimeMs };
  for (const entry of readdirSync(path)) {
    const inner = newest(join(path, entry));
    if (inner.mtimeMs > found.mtimeMs) found = inner;
  }
  return found;
}

/** Why the console must be built, or undefined when dist/ is current. */
export function staleReason() {
  if (!existsSync(builtIndex)) return "no build yet";
  const built = statSync(builtIndex).mtimeMs;
  for (const input of inputs) {
    if (!existsSync(input)) continue;
    const changed = newest(input);
    if (changed.mtimeMs > built) return `${relative(consoleDir, changed.path)} changed`;
  }
  return undefined;
}

function build(reason) {
  const started = performance.now();
  const vite = join(
    createRequire(join(consoleDir, "package.json")).resolve("vite/package.json"),
    "../bin/vite.js",
  );
  const result = spawnSync(process.execPath, [vite, "build", "--logLevel", "warn"], {
    cwd: consoleDir,
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`web console built into apps/console/dist in ${seconds} s (${reason})\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const reason = process.argv.includes("--force") ? "--force" : staleReason();
  if (reason !== undefined) build(reason);
}
