import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashContent } from "./content-hash.js";
import { createMemoryFileStore, isDestructiveShrink, type MemoryFileStore } from "./memory-file-store.js";

let base: string;
let workspace: string;
let stateDir: string;
let now: number;
let store: MemoryFileStore;

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-store-")));
  workspace = path.join(base, "workspace");
  stateDir = path.join(base, "state");
  now = Date.UTC(2024, 4, 1, 12);
  store = createMemoryFileStore({ workspace, stateDir, clock: () => now, maxBackupsPerFile: 3 });
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const longText = (label: string) =>
  `# Notes\n${Array.from({ length: 20 }, (_, i) => `- ${label} fact ${i}`).join("\n")}\n`;

async function backupsOf(relative: string): Promise<string[]> {
  const folder = path.join(stateDir, "backups", "memory-files", path.dirname(relative));
  const names = await readdir(folder).catch(() => []);
  return names.filter((name) => name.startsWith(`${path.basename(relative)}.`)).sort();
}

describe("createMemoryFileStore", () => {
  it("writes and reads MEMORY.md and daily logs, and lists them with size, time and hash", async () => {
    await store.write("MEMORY.md", "# Memory\n- likes tea\n");
    await store.write("memory/2024-05-01.md", "# 2024-05-01\n- 09:00 started\n");
    await store.write("memory/archive/2023-01-01.md", "# old\n");

    const read = await store.read("memory/2024-05-01.md");
    expect(read).toEqual({
      path: "memory/2024-05-01.md",
      content: "# 2024-05-01\n- 09:00 started\n",
      hash: hashContent("# 2024-05-01\n- 09:00 started\n"),
    });
    const listed = await store.list();
    expect(listed.map((file) => file.path)).toEqual([
      "MEMORY.md",
      "memory/2024-05-01.md",
      "memory/archive/2023-01-01.md",
    ]);
    expect(listed[0]).toMatchObject({ size: 21, hash: hashContent("# Memory\n- likes tea\n") });
    expect(listed[0]?.mtimeMs).toBeGreaterThan(0);
  });

  it("reports a missing file as memory.not_found from read and undefined from tryRead", async () => {
    await expect(store.read("MEMORY.md")).rejects.toMatchObject({ code: "memory.not_found" });
    await expect(store.tryRead("memory/2024-05-01.md")).resolves.toBeUndefined();
  });

  it.each([
    "../outside.md",
    "/etc/passwd",
    "notes/todo.md",
    "memory/2024-05-01.txt",
    "memory/.hidden.md",
    "memory/../MEMORY.md/../../x.md",
    "memory\\2024-05-01.md",
    "MEMORY.md\0",
    "memory.md",
  ])("refuses %j as memory.path_refused", async (requested) => {
    await expect(store.write(requested, "x")).rejects.toMatchObject({ code: "memory.path_refused" });
    await expect(store.tryRead(requested)).rejects.toMatchObject({ code: "memory.path_refused" });
  });

  it("refuses a memory path that is a symlink leaving the workspace or pointing at a non-memory file", async () => {
    await mkdir(path.join(workspace, "memory"), { recursive: true });
    await writeFile(path.join(base, "secret.md"), "secret\n");
    await writeFile(path.join(workspace, "notes.txt"), "notes\n");
    await symlink(path.join(base, "secret.md"), path.join(workspace, "memory", "escape.md"));
    await symlink(path.join(workspace, "notes.txt"), path.join(workspace, "memory", "inside.md"));

    await expect(store.read("memory/escape.md")).rejects.toMatchObject({ code: "memory.path_refused" });
    await expect(store.write("memory/inside.md", "overwritten")).rejects.toMatchObject({
      code: "memory.path_refused",
    });
    expect(await readFile(path.join(workspace, "notes.txt"), "utf8")).toBe("notes\n");
    expect((await store.list()).map((file) => file.path)).toEqual([]);
  });

  it("never makes a data directory that vanished, before its first use or after: the write fails", async () => {
    const moved = `${base}-moved`;
    await rename(base, moved);
    try {
      await expect(store.write("MEMORY.md", "# Memory\n")).rejects.toMatchObject({ code: "ENOENT" });
      await expect(readdir(base)).rejects.toMatchObject({ code: "ENOENT" });
      await rename(moved, base);
      await store.write("MEMORY.md", "# Memory\n");
      await rename(base, moved);
      await expect(store.write("memory/2024-05-01.md", "- a fact\n")).rejects.toMatchObject({
        code: "workspace.root_missing",
      });
      await expect(readdir(base)).rejects.toMatchObject({ code: "ENOENT" });
    } finally {
      await rename(moved, base).catch(() => {});
    }
  });

  it("keeps the previous version as a backup before each rewrite, at most maxBackupsPerFile of them", async () => {
    for (let version = 1; version <= 5; version += 1) {
      now += 1000;
      await store.write("MEMORY.md", `${longText("v")}version ${version}\n`);
    }
    const names = await backupsOf("MEMORY.md");
    expect(names).toHaveLength(3);
    const folder = path.join(stateDir, "backups", "memory-files");
    const contents = await Promise.all(names.map((name) => readFile(path.join(folder, name), "utf8")));
    expect(contents.map((text) => text.split("\n").at(-2))).toEqual(["version 2", "version 3", "version 4"]);
    expect((await store.read("MEMORY.md")).content).toContain("version 5");
  });

  it("gives backups made in the same millisecond distinct names", async () => {
    await store.write("MEMORY.md", "a\n");
    await store.write("MEMORY.md", "b\n");
    await store.write("MEMORY.md", "c\n");
    expect(await backupsOf("MEMORY.md")).toEqual([
      "MEMORY.md.20240501T120000000Z-000.bak",
      "MEMORY.md.20240501T120000000Z-001.bak",
    ]);
  });

  it("writes nothing and backs up nothing when the content is unchanged", async () => {
    await store.write("MEMORY.md", "same\n");
    const result = await store.write("MEMORY.md", "same\n");
    expect(result).toMatchObject({ changed: false, created: false });
    expect(await backupsOf("MEMORY.md")).toEqual([]);
  });

  it("refuses a write that drops most of a long file unless allowShrink is given", async () => {
    const original = longText("keep");
    await store.write("memory/2024-05-01.md", original);
    await expect(store.write("memory/2024-05-01.md", "# 2024-05-01\n")).rejects.toMatchObject({
      code: "memory.shrink_refused",
    });
    expect((await store.read("memory/2024-05-01.md")).content).toBe(original);

    const replaced = await store.write("memory/2024-05-01.md", "# 2024-05-01\n", { allowShrink: true });
    expect(replaced.backupPath).toBeDefined();
    expect(await readFile(replaced.backupPath ?? "", "utf8")).toBe(original);
  });

  it("lets short files shrink freely: the guard is for files worth protecting", async () => {
    await store.write("MEMORY.md", "- one short fact\n- another\n");
    await expect(store.write("MEMORY.md", "x\n")).resolves.toMatchObject({ changed: true });
  });

  it("refuses a write whose expectedHash no longer matches, and null when the file already exists", async () => {
    const first = await store.write("MEMORY.md", "v1\n", { expectedHash: null });
    await writeFile(path.join(workspace, "MEMORY.md"), "edited by a person\n");
    await expect(store.write("MEMORY.md", "v2\n", { expectedHash: first.hash })).rejects.toMatchObject({
      code: "memory.conflict",
    });
    await expect(store.write("MEMORY.md", "v2\n", { expectedHash: null })).rejects.toMatchObject({
      code: "memory.conflict",
    });
    expect((await store.read("MEMORY.md")).content).toBe("edited by a person\n");
    const current = await store.read("MEMORY.md");
    await expect(store.write("MEMORY.md", "v2\n", { expectedHash: current.hash })).resolves.toMatchObject({
      changed: true,
    });
  });

  it("serializes concurrent writes with expectedHash so exactly one of them wins", async () => {
    const first = await store.write("MEMORY.md", "v0\n");
    const results = await Promise.allSettled(
      ["a\n", "b\n", "c\n"].map((content) => store.write("MEMORY.md", content, { expectedHash: first.hash })),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
  });

  it("leaves the file equal to the last accepted write and no temp files behind, whatever the sequence", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ maxLength: 400 }), { minLength: 1, maxLength: 6 }),
        async (contents) => {
          const dir = await mkdtemp(path.join(base, "prop-"));
          const propertyStore = createMemoryFileStore({
            workspace: path.join(dir, "ws"),
            stateDir: path.join(dir, "state"),
            maxBackupsPerFile: 2,
          });
          let expected: string | undefined;
          for (const content of contents) {
            const accepted = await propertyStore.write("memory/a.md", content).then(
              () => true,
              () => false,
            );
            if (accepted) expected = content;
            else expect(expected !== undefined && isDestructiveShrink(expected, content)).toBe(true);
          }
          expect((await propertyStore.tryRead("memory/a.md"))?.content).toBe(expected);
          expect((await readdir(path.join(dir, "ws", "memory"))).filter((name) => name !== "a.md")).toEqual(
            [],
          );
          const backups = await readdir(path.join(dir, "state", "backups", "memory-files", "memory")).catch(
            () => [],
          );
          expect(backups.length).toBeLessThanOrEqual(2);
        },
      ),
      { numRuns: 25 },
    );
  });
});
