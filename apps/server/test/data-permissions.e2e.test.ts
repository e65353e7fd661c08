import { chmod, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isSummarizerRequest, startTestServer, TEST_MODEL_KEY, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
let home: string | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  if (home) await rm(home, { recursive: true, force: true });
});

/** Every file and directory under `root` (symbolic links excluded) with its permission bits. */
async function modes(root: string): Promise<Array<{ path: string; mode: number; directory: boolean }>> {
  const found: Array<{ path: string; mode: number; directory: boolean }> = [];
  const visit = async (path: string): Promise<void> => {
    const info = await lstat(path);
    if (info.isSymbolicLink()) return;
    found.push({ path, mode: info.mode & 0o777, directory: info.isDirectory() });
    if (info.isDirectory()) for (const entry of await readdir(path)) await visit(join(path, entry));
  };
  await visit(root);
  return found;
}

describe("the data directory is private", () => {
  it("keeps every file 0600 and every directory 0700 under a loose umask, and tightens what was there before", async () => {
    const previous = process.umask(0o022);
    const llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
    try {
      home = await mkdtemp(join(tmpdir(), "almanac-private-"));
      await chmod(home, 0o755);
      // What an editor or an older version left behind: world-readable memory.
      await mkdir(join(home, "workspace", "memory"), { recursive: true, mode: 0o755 });
      await writeFile(join(home, "workspace", "MEMORY.md"), "# Facts\n\n- The boiler code is QX-5531.\n", {
        mode: 0o644,
      });
      llm.setFallback((request) =>
        isSummarizerRequest(request) ? script.text("Nothing to add.") : script.text("Noted."),
      );
      running = await startTestServer({ home, llm });
      await running.client.chat.completions.create({
        model: "almanac",
        user: "private",
        messages: [{ role: "user", content: "Remember that the spare key is under the mat." }],
      });
      await running.client.chat.completions.create({
        model: "almanac",
        user: "private",
        messages: [{ role: "user", content: "/new" }],
      });
      const search = await running.api("/api/memory/search?q=boiler");
      expect(search.status).toBe(200);
      await running.close();
      running = undefined;
      const loose = (await modes(home)).filter(
        (entry) => (entry.mode & 0o077) !== 0 || entry.mode !== (entry.directory ? 0o700 : 0o600),
      );
      expect(loose.map((entry) => `${entry.path} ${entry.mode.toString(8)}`)).toEqual([]);
      // The run made the files that matter: the index, a transcript, the summarizer's journal.
      const names = (await modes(home)).map((entry) => entry.path);
      expect(names.some((path) => path.endsWith("index.sqlite"))).toBe(true);
      expect(names.some((path) => path.endsWith(".jsonl"))).toBe(true);
      expect(names.some((path) => path.includes("summarizer"))).toBe(true);
    } finally {
      process.umask(previous);
      await llm.close();
    }
  });
});
