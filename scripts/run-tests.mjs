#!/usr/bin/env node
// Runs the whole Vitest suite and ends with the plain line CI reads: "N passed, N failed, N skipped" (CI
// matches "N passed, N failed" at the start of the last line; the skipped count follows it).
// Vitest's own summary is not machine-read by CI, and a run that executed no test must be visible.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
// A results file of this run's own, so two runs at once (or a test that runs this script) never share one.
const resultsDir = mkdtempSync(join(tmpdir(), "almanac-vitest-"));
const resultsFile = join(resultsDir, "results.json");

const vitest = spawnSync(
  process.execPath,
  [
    `${root}node_modules/vitest/vitest.mjs`,
    "run",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${resultsFile}`,
    ...process.argv.slice(2),
  ],
  { cwd: root, stdio: "inherit" },
);

let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(resultsFile)) {
  const report = JSON.parse(readFileSync(resultsFile, "utf8"));
  passed = report.numPassedTests ?? 0;
  // A file that failed to load has no test results of its own: count it as one failure.
  const brokenFiles = (report.testResults ?? []).filter(
    (file) => file.status === "failed" && (file.assertionResults ?? []).length === 0,
  ).length;
  failed = (report.numFailedTests ?? 0) + brokenFiles;
  skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
} else {
  failed = 1;
  console.error("No Vitest results were written; counting the run as failed.");
}
rmSync(resultsDir, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
const code = vitest.status ?? 1;
process.exit(code === 0 && failed === 0 && passed > 0 ? 0 : code || 1);
