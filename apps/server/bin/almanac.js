#!/usr/bin/env node
// Entry point of the `almanac` command (start, doctor, sessions, memory, chat; see docs/cli.md).
// Runs the compiled build (apps/server/dist, made by `pnpm build`) when it is current; otherwise, in a
// development checkout, the TypeScript sources through tsx's loader (see docs/build.md).
import { existsSync } from "node:fs";
import { staleReason } from "../scripts/build.mjs";

const distMain = new URL("../dist/main.js", import.meta.url);
const stale = existsSync(distMain) ? staleReason() : "no build yet";

/** The tsx loader when installed (a production install has only the build). */
async function tsxRegister() {
  try {
    return (await import("tsx/esm/api")).register;
  } catch {
    return undefined;
  }
}

const register = stale === undefined ? undefined : await tsxRegister();
if (register) {
  // A person at a terminal learns why start-up is slower; scripts and tests reading stderr see nothing.
  if (process.stderr.isTTY) {
    process.stderr.write(
      `almanac: running the TypeScript sources through tsx (${stale}; \`pnpm build\` compiles them)\n`,
    );
  }
  register();
  const { main } = await import("../src/main.ts");
  await main();
} else if (existsSync(distMain)) {
  process.setSourceMapsEnabled(true);
  const { main } = await import(distMain.href);
  await main();
} else {
  process.stderr.write(
    "almanac: apps/server/dist is missing and tsx is not installed: run `pnpm build` first\n",
  );
  process.exit(1);
}
