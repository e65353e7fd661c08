import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli.js";

async function run(args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([]),
    env: {},
    cwd: "/nonexistent-almanac-cwd",
  });
  return { code, stdout, stderr };
}

describe("almanac argument handling", () => {
  it("prints the usage on stdout and exits 0 for help, --help and -h", async () => {
    for (const args of [["help"], ["--help"], ["doctor", "-h"]]) {
      const result = await run(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("Usage: almanac <command>");
    }
  });

  it("exits 2 with the usage on stderr without a command or with an unknown option", async () => {
    const missing = await run([]);
    expect(missing).toMatchObject({ code: 2, stdout: "" });
    expect(missing.stderr).toContain("Usage: almanac <command>");
    const unknown = await run(["doctor", "--frob"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("--frob");
  });

  it("exits 2 for a sessions or memory sub-command it does not know", async () => {
    expect((await run(["sessions", "drop"])).code).toBe(2);
    expect((await run(["memory"])).code).toBe(2);
    expect((await run(["memory", "search"])).code).toBe(2);
  });
});
