import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { listMemoryFiles } from "./list-memory-files.js";
import { isMemoryFilePath, isPrivateMemoryPath, isSharedMemoryPath } from "./memory-paths.js";

// Segments drawn to hit the edges: traversal, hidden names, case variants, Windows separators, link-like names.
const segment = fc.oneof(
  fc.constantFrom(
    "memory",
    "Memory",
    "MEMORY.md",
    "memory.md",
    "shared",
    "..",
    ".",
    "",
    ".hidden.md",
    "a\\..\\..\\x.md",
    "..\\x.md",
    "link -> ../etc.md",
    "2025-01-02.md",
    "2025-01-02.MD",
    "notes.md.tmp",
    ".2025-01-02.md.0123456789abcdef.tmp",
  ),
  fc.stringMatching(/^[a-zA-Z0-9 ._\\-]{1,12}$/),
);
const relativePath = fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => parts.join("/"));

describe("isMemoryFilePath", () => {
  it("accepts MEMORY.md, Markdown under memory/ and shared/<chat>/<name>.md", () => {
    for (const accepted of [
      "MEMORY.md",
      "memory/2025-01-02.md",
      "memory/projects/deep/plan.md",
      "shared/team-chat/2025-01-02.md",
    ]) {
      expect(isMemoryFilePath(accepted)).toBe(true);
    }
    for (const refused of [
      "memory.md",
      "Memory/2025-01-02.md",
      "MEMORY.MD",
      "memory/2025-01-02.MD",
      "memory/../MEMORY.md",
      "memory/./a.md",
      "memory//a.md",
      "/memory/a.md",
      "memory\\a.md",
      "memory/a\\..\\..\\x.md",
      "memory/.a.md.0123456789abcdef.tmp",
      "memory/.hidden/a.md",
      "shared/a.md",
      "shared/chat/deeper/a.md",
      "notes/a.md",
    ]) {
      expect(isMemoryFilePath(refused), refused).toBe(false);
    }
  });

  it("accepts only clean relative paths: normalized, no hidden or empty segment, no backslash, ending in .md", () => {
    fc.assert(
      fc.property(relativePath, (candidate) => {
        if (!isMemoryFilePath(candidate)) return;
        const segments = candidate.split("/");
        expect(path.posix.normalize(candidate)).toBe(candidate);
        expect(path.posix.isAbsolute(candidate)).toBe(false);
        expect(candidate).not.toContain("\\");
        expect(segments.every((part) => part !== "" && !part.startsWith("."))).toBe(true);
        expect(candidate.endsWith(".md")).toBe(true);
        expect(candidate === "MEMORY.md" || segments[0] === "memory" || segments[0] === "shared").toBe(true);
      }),
    );
  });

  it("splits memory into private and shared with no path in both", () => {
    fc.assert(
      fc.property(relativePath, (candidate) => {
        const isPrivate = isPrivateMemoryPath(candidate);
        const isShared = isSharedMemoryPath(candidate);
        expect(isPrivate && isShared).toBe(false);
        expect(isMemoryFilePath(candidate)).toBe(isPrivate || isShared);
      }),
    );
  });
});

describe("listMemoryFiles", () => {
  let workspace: string | undefined;
  afterEach(async () => {
    if (workspace !== undefined) await rm(workspace, { recursive: true, force: true });
  });

  it("lists exactly the files the rule accepts, skipping hidden files and links", async () => {
    workspace = await mkdtemp(path.join(tmpdir(), "almanac-memory-files-"));
    const root = workspace;
    const files = [
      "MEMORY.md",
      "memory/2025-01-02.md",
      "memory/projects/plan.md",
      "memory/.2025-01-02.md.0123456789abcdef.tmp",
      "memory/.drafts/secret.md",
      "memory/notes.txt",
      "shared/team/2025-01-02.md",
      "shared/team/deeper/x.md",
      "notes/elsewhere.md",
    ];
    for (const file of files) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), "x");
    }
    await symlink(path.join(root, "notes/elsewhere.md"), path.join(root, "memory/linked.md"));

    const listed = await listMemoryFiles(root);
    expect(listed).toEqual([
      "MEMORY.md",
      "memory/2025-01-02.md",
      "memory/projects/plan.md",
      "shared/team/2025-01-02.md",
    ]);
    expect(listed.every(isMemoryFilePath)).toBe(true);
  });
});
