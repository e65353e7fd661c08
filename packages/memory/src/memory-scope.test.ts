import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createToolkit, type Toolkit } from "@almanac/agent";
import {
  buildMemoryContext,
  dailyLogPath,
  hashContent,
  isMemoryFilePath,
  isPathInScope,
  isPrivateMemoryPath,
  type MemoryScope,
  matchesPathFilter,
  memoryGuideFor,
  OWNER_SCOPE,
  scopePathFilter,
  sharedScope,
  sharedScopeFolder,
} from "@almanac/memory-files";
import type { MemoryIndexBackend } from "@almanac/memory-index";
import {
  createMemoryIndexer,
  createMemorySearch,
  createMemoryTools,
  createSqliteIndex,
} from "@almanac/memory-index";
import { createTokenCounter } from "@almanac/tokenizer";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const group = sharedScope({ channel: "discord", account: "default", kind: "group", id: "42" });
const otherGroup = sharedScope({ channel: "discord", account: "default", kind: "group", id: "43" });

describe("memory scope layout", () => {
  it("puts a shared chat's daily log in its own folder, outside memory/ and the private-memory rule", () => {
    expect(dailyLogPath(OWNER_SCOPE, "2025-01-02")).toBe("memory/2025-01-02.md");
    const shared = dailyLogPath(group, "2025-01-02");
    expect(shared).toBe("shared/discord-default-group-42/2025-01-02.md");
    expect(isPrivateMemoryPath(shared)).toBe(false);
    expect(isMemoryFilePath(shared)).toBe(true);
    expect(isPathInScope(group, shared)).toBe(true);
    expect(isPathInScope(otherGroup, shared)).toBe(false);
    expect(isPathInScope(OWNER_SCOPE, shared)).toBe(false);
    expect(isPathInScope(group, "MEMORY.md")).toBe(false);
    expect(isPathInScope(group, "memory/2025-01-02.md")).toBe(false);
  });

  it("gives ids that differ only in case, or in separators, folders of their own", () => {
    const folders = new Set(
      [
        { id: "cidAbc==" },
        { id: "cidabc==" },
        { id: "a-b", account: "c" },
        { id: "b", account: "c-a" },
        { id: "../../etc" },
        { id: ".hidden" },
      ].map((parts) =>
        sharedScopeFolder({
          channel: "dingtalk",
          account: parts.account ?? "x",
          kind: "group",
          id: parts.id,
        }),
      ),
    );
    expect(folders.size).toBe(6);
    for (const folder of folders) {
      expect(folder).not.toMatch(/[/\\]|^\./u);
      expect(isMemoryFilePath(`shared/${folder}/2025-01-02.md`)).toBe(true);
    }
    const long = sharedScopeFolder({ channel: "feishu", account: "x", kind: "group", id: "y".repeat(500) });
    expect(long.length).toBeLessThanOrEqual(120);
  });

  it("filters search paths: the owner everything but shared/, a shared chat only its folder", () => {
    const owner = scopePathFilter(OWNER_SCOPE);
    const shared = scopePathFilter(group);
    expect(matchesPathFilter(owner, "MEMORY.md")).toBe(true);
    expect(matchesPathFilter(owner, dailyLogPath(group, "2025-01-02"))).toBe(false);
    expect(matchesPathFilter(shared, dailyLogPath(group, "2025-01-02"))).toBe(true);
    expect(matchesPathFilter(shared, dailyLogPath(otherGroup, "2025-01-02"))).toBe(false);
    expect(matchesPathFilter(shared, "MEMORY.md")).toBe(false);
  });
});

describe("the memory section of a shared chat's prompt", () => {
  const files: Record<string, string> = {
    "MEMORY.md": "# Person\n- PRIVATE-FACT: the owner's bank is Example Bank\n",
    "memory/2024-05-01.md": "# 2024-05-01\n- PRIVATE-LOG: dentist at 9\n",
    "shared/discord-default-group-42/2024-05-01.md": "# 2024-05-01\n- GROUP-LOG: release planned\n",
  };
  const store = {
    async tryRead(relativePath: string) {
      const content = files[relativePath];
      return content === undefined ? undefined : { path: relativePath, content, hash: hashContent(content) };
    },
  };
  const options = {
    store,
    timeZone: "UTC",
    now: Date.UTC(2024, 4, 1, 12),
    tokenCounter: createTokenCounter(),
  };

  it("shows only the chat's own log, never MEMORY.md or the owner's daily logs", async () => {
    const text = `${memoryGuideFor(group)}\n${await buildMemoryContext({ ...options, scope: group })}`;
    expect(text).toContain("GROUP-LOG");
    expect(text).not.toContain("PRIVATE-FACT");
    expect(text).not.toContain("PRIVATE-LOG");
    expect(text).toMatch(/cannot store it in the owner's private memory/u);
    expect(text).not.toMatch(/record it in MEMORY\.md/u);
  });

  it("still shows the owner MEMORY.md and the owner's logs", async () => {
    const text = `${memoryGuideFor(OWNER_SCOPE)}\n${await buildMemoryContext({ ...options, scope: OWNER_SCOPE })}`;
    expect(text).toContain("PRIVATE-FACT");
    expect(text).toContain("PRIVATE-LOG");
    expect(text).not.toContain("GROUP-LOG");
  });
});

describe("memory tools per scope", () => {
  let root: string;
  let workspace: string;
  let backend: MemoryIndexBackend;

  const toolkitFor = (scope: MemoryScope): Toolkit =>
    createToolkit(createMemoryTools({ search: createMemorySearch({ backend }), workspace, scope }));
  const call = (toolkit: Toolkit, name: string, args: Record<string, unknown>) =>
    toolkit.execute({ type: "tool_call", id: "call_1", name, arguments: JSON.stringify(args) });

  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), "almanac-scope-"));
    workspace = path.join(root, "workspace");
    await mkdir(path.join(workspace, "memory"), { recursive: true });
    await writeFile(path.join(workspace, "MEMORY.md"), "# Owner\n- The launch codename is HELIOTROPE.\n");
    await writeFile(path.join(workspace, "memory", "2025-01-02.md"), "- HELIOTROPE budget approved.\n");
    for (const scope of [group, otherGroup]) {
      if (scope.kind !== "shared") continue;
      await mkdir(path.join(workspace, "shared", scope.folder), { recursive: true });
      await writeFile(
        path.join(workspace, dailyLogPath(scope, "2025-01-02")),
        `- HELIOTROPE mentioned in ${scope.id}.\n`,
      );
    }
    backend = createSqliteIndex({ path: path.join(root, "index.sqlite") });
    // Many owner notes matching the query, so an unfiltered top-N would crowd the group's log out.
    for (let index = 0; index < 40; index += 1) {
      await writeFile(path.join(workspace, "memory", `note-${index}.md`), `- HELIOTROPE detail ${index}.\n`);
    }
    await createMemoryIndexer({ workspace, backend }).sync();
  });

  afterEach(async () => {
    await backend.close();
    await rm(root, { recursive: true, force: true });
  });

  it("a shared chat's memory_search finds only its own log, however many owner notes match", async () => {
    // One result means 24 candidates: fewer than the 43 matching chunks, so only a filter before ranking finds it.
    const output = await call(toolkitFor(group), "memory_search", { query: "HELIOTROPE", maxResults: 1 });
    const paths = (JSON.parse(output.content) as { results: Array<{ path: string }> }).results.map(
      (result) => result.path,
    );
    expect(paths).toEqual([dailyLogPath(group, "2025-01-02")]);
  });

  it("the owner's memory_search covers private files only", async () => {
    const output = await call(toolkitFor(OWNER_SCOPE), "memory_search", {
      query: "HELIOTROPE",
      maxResults: 50,
    });
    const paths = (JSON.parse(output.content) as { results: Array<{ path: string }> }).results.map(
      (result) => result.path,
    );
    expect(paths).toContain("MEMORY.md");
    expect(paths.every((file) => isPrivateMemoryPath(file))).toBe(true);
  });

  it("a shared chat's memory_get refuses MEMORY.md, the owner's logs and other chats' logs", async () => {
    const toolkit = toolkitFor(group);
    for (const target of [
      "MEMORY.md",
      "./MEMORY.md",
      "memory/2025-01-02.md",
      dailyLogPath(otherGroup, "2025-01-02"),
    ]) {
      const result = await call(toolkit, "memory_get", { path: target });
      expect(result.isError, target).toBe(true);
      expect(result.content).not.toContain("HELIOTROPE");
    }
    const own = await call(toolkit, "memory_get", { path: dailyLogPath(group, "2025-01-02") });
    expect(own.isError).toBeFalsy();
    expect(own.content).toContain("HELIOTROPE mentioned in discord:default:group:42");
  });
});
