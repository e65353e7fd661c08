import { spawnSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../../console/scripts/build.mjs", import.meta.url));
let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the console build that `pnpm start` runs", () => {
  it("does nothing and prints nothing while dist/ is newer than every source, and names the change otherwise", async () => {
    dir = await mkdtemp(join(tmpdir(), "almanac-console-build-"));
    const consoleDir = join(dir, "apps", "console");
    await mkdir(join(consoleDir, "scripts"), { recursive: true });
    await mkdir(join(consoleDir, "src"), { recursive: true });
    await mkdir(join(consoleDir, "dist"), { recursive: true });
    await copyFile(script, join(consoleDir, "scripts", "build.mjs"));
    await writeFile(join(consoleDir, "src", "main.ts"), "export {};\n");
    await writeFile(join(consoleDir, "index.html"), "<!doctype html>\n");
    await writeFile(join(consoleDir, "package.json"), "{}\n");
    const past = new Date(Date.now() - 60_000);
    for (const file of ["src/main.ts", "src", "index.html", "package.json"])
      await utimes(join(consoleDir, file), past, past);
    await writeFile(join(consoleDir, "dist", "index.html"), "built\n");

    const run = spawnSync(process.execPath, [join(consoleDir, "scripts", "build.mjs")], { encoding: "utf8" });
    expect(run.status).toBe(0);
    expect(run.stdout + run.stderr).toBe("");

    const module = (await import(pathToFileURL(join(consoleDir, "scripts", "build.mjs")).href)) as {
      staleReason(): string | undefined;
    };
    expect(module.staleReason()).toBeUndefined();
    const future = new Date(Date.now() + 60_000);
    await utimes(join(consoleDir, "src", "main.ts"), future, future);
    expect(module.staleReason()).toBe(`${join("src", "main.ts")} changed`);
  });
});
