import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { ToolResultBlock } from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createToolkit, type Toolkit } from "./toolkit.js";
import { createWorkspaceFileTools } from "./workspace-file-tools.js";

let base: string;
let root: string;
let toolkit: Toolkit;

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-tools-")));
  root = path.join(base, "workspace");
  await mkdir(root);
  toolkit = createToolkit(createWorkspaceFileTools({ root, maxReadLines: 5, maxListEntries: 4 }));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

function run(name: string, args: Record<string, unknown>): Promise<ToolResultBlock> {
  return toolkit.execute({ type: "tool_call", id: "call_1", name, arguments: JSON.stringify(args) });
}

const numbered = (count: number) =>
  Array.from({ length: count }, (_, index) => `line ${index + 1}`).join("\n");

describe("read_file", () => {
  it("shows a short file whole, saying which lines of how many", async () => {
    await writeFile(path.join(root, "a.md"), "one\ntwo\nthree\n");
    expect(await run("read_file", { path: "a.md" })).toEqual({
      type: "tool_result",
      callId: "call_1",
      content: "[a.md: lines 1-3 of 3]\none\ntwo\nthree",
    });
  });

  it("pages with offset and limit and says how to read on", async () => {
    await writeFile(path.join(root, "long.md"), `${numbered(10)}\n`);
    const result = await run("read_file", { path: "long.md", offset: 4, limit: 3 });
    expect(result.content).toBe(
      "[long.md: lines 4-6 of 10]\nline 4\nline 5\nline 6\n[4 more lines: call read_file with offset 7 to read on]",
    );
  });

  it("never shows more than the configured number of lines in one call", async () => {
    await writeFile(path.join(root, "long.md"), numbered(12));
    const result = await run("read_file", { path: "long.md", limit: 100 });
    expect(result.content.split("\n").slice(0, 1)).toEqual(["[long.md: lines 1-5 of 12]"]);
    expect(result.content).toContain("line 5\n[7 more lines: call read_file with offset 6 to read on]");
  });

  it("reports an offset past the end as an error with the file's length", async () => {
    await writeFile(path.join(root, "a.md"), "one\ntwo");
    expect(await run("read_file", { path: "a.md", offset: 3 })).toMatchObject({
      isError: true,
      content: "offset 3 is past the end of a.md, which has 2 lines.",
    });
  });

  it("reports a missing file by its workspace path, not the server's absolute path", async () => {
    const result = await run("read_file", { path: "notes/missing.md" });
    expect(result.isError).toBe(true);
    expect(result.content).toContain('workspace.not_found: "notes/missing.md" does not exist');
    expect(result.content).not.toContain(base);
  });

  it("refuses to read a binary file", async () => {
    await writeFile(path.join(root, "image.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    expect(await run("read_file", { path: "image.png" })).toMatchObject({
      isError: true,
      content: expect.stringContaining("binary"),
    });
  });

  it("says an empty file is empty", async () => {
    await writeFile(path.join(root, "empty.md"), "");
    expect((await run("read_file", { path: "empty.md" })).content).toBe("[empty.md is empty: 0 lines]");
  });
});

describe("write_file", () => {
  it("creates parent directories and writes the exact content", async () => {
    const result = await run("write_file", { path: "memory/2025-01-01.md", content: "# Day\n- 你好\n" });
    expect(result).toMatchObject({
      content: "Wrote memory/2025-01-01.md (2 lines, 11 characters; created).",
    });
    expect(await readFile(path.join(root, "memory", "2025-01-01.md"), "utf8")).toBe("# Day\n- 你好\n");
  });

  it("replaces an existing file atomically, leaving no temporary files behind", async () => {
    await run("write_file", { path: "notes/a.md", content: "first" });
    const result = await run("write_file", { path: "notes/a.md", content: "second" });
    await run("edit_file", { path: "notes/a.md", old_text: "second", new_text: "third" });
    expect(result.content).toContain("replaced");
    expect(await readFile(path.join(root, "notes", "a.md"), "utf8")).toBe("third");
    expect(await readdir(path.join(root, "notes"))).toEqual(["a.md"]);
  });

  it("refuses to overwrite a directory", async () => {
    await mkdir(path.join(root, "notes"));
    expect(await run("write_file", { path: "notes", content: "x" })).toMatchObject({
      isError: true,
      content: expect.stringContaining("workspace.not_a_file"),
    });
  });

  it("refuses paths outside the workspace and writes nothing there", async () => {
    const outside = path.join(base, "outside");
    await mkdir(outside);
    await symlink(outside, path.join(root, "escape"));
    for (const target of ["../outside/x.md", "/tmp/x.md", "escape/x.md"]) {
      const result = await run("write_file", { path: target, content: "pwned" });
      expect(result.isError).toBe(true);
      expect(result.content).toContain("workspace.path_outside");
    }
    expect(await readdir(outside)).toEqual([]);
  });
});

describe("edit_file", () => {
  beforeEach(async () => {
    await writeFile(path.join(root, "todo.md"), "- buy milk\n- call Ann\n- buy bread\n");
  });

  it("replaces text that occurs exactly once, taking the new text literally", async () => {
    const result = await run("edit_file", {
      path: "todo.md",
      old_text: "call Ann",
      new_text: "pay $& and $1",
    });
    expect(result).toMatchObject({ content: "Edited todo.md: replaced 1 occurrence." });
    expect(await readFile(path.join(root, "todo.md"), "utf8")).toBe(
      "- buy milk\n- pay $& and $1\n- buy bread\n",
    );
  });

  it("refuses ambiguous text unless asked to replace every occurrence", async () => {
    const ambiguous = await run("edit_file", { path: "todo.md", old_text: "buy", new_text: "get" });
    expect(ambiguous.isError).toBe(true);
    expect(ambiguous.content).toContain("occurs 2 times");
    expect(await readFile(path.join(root, "todo.md"), "utf8")).toBe("- buy milk\n- call Ann\n- buy bread\n");

    const all = await run("edit_file", {
      path: "todo.md",
      old_text: "buy",
      new_text: "get",
      replace_all: true,
    });
    expect(all.content).toBe("Edited todo.md: replaced 2 occurrences.");
    expect(await readFile(path.join(root, "todo.md"), "utf8")).toBe("- get milk\n- call Ann\n- get bread\n");
  });

  it("says so when the text is not in the file and leaves the file alone", async () => {
    const result = await run("edit_file", { path: "todo.md", old_text: "- Buy milk", new_text: "x" });
    expect(result.isError).toBe(true);
    expect(result.content).toContain("old_text was not found in todo.md");
    expect(await readFile(path.join(root, "todo.md"), "utf8")).toBe("- buy milk\n- call Ann\n- buy bread\n");
  });
});

describe("append_file", () => {
  it("creates a missing file and then appends to it", async () => {
    expect((await run("append_file", { path: "log/today.md", content: "a\n" })).content).toBe(
      "Appended 2 characters to log/today.md (file created).",
    );
    expect((await run("append_file", { path: "log/today.md", content: "b\n" })).content).toBe(
      "Appended 2 characters to log/today.md.",
    );
    expect(await readFile(path.join(root, "log", "today.md"), "utf8")).toBe("a\nb\n");
  });
});

describe("list_files", () => {
  beforeEach(async () => {
    await mkdir(path.join(root, "memory", "2025"), { recursive: true });
    await writeFile(path.join(root, "MEMORY.md"), "");
    await writeFile(path.join(root, "memory", "2025", "01.md"), "");
  });

  it("lists the root by default with a slash after directories", async () => {
    expect((await run("list_files", {})).content).toBe("MEMORY.md\nmemory/");
  });

  it("lists everything below a directory when recursive", async () => {
    expect((await run("list_files", { path: "memory", recursive: true })).content).toBe(
      "memory/2025/\nmemory/2025/01.md",
    );
  });

  it("stops a long listing at the cap and says how to see the rest", async () => {
    for (const name of ["b.md", "c.md", "d.md"]) await writeFile(path.join(root, name), "");
    const result = await run("list_files", { recursive: true });
    expect(result.content.split("\n").slice(0, 4)).toEqual(["MEMORY.md", "b.md", "c.md", "d.md"]);
    expect(result.content).toContain("[listing stopped at 4 entries");
  });

  it("points to read_file when given a file", async () => {
    expect(await run("list_files", { path: "MEMORY.md" })).toMatchObject({
      isError: true,
      content: expect.stringContaining("Use read_file"),
    });
  });
});

describe("workspace file tools with a custom writer", () => {
  it("send every whole-file write, edit and append through writeText, and report its refusal to the model", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "almanac-writer-"));
    try {
      const writes: Array<{ shown: string; content: string }> = [];
      const tools = createWorkspaceFileTools({
        root,
        writeText: async (target, content) => {
          if (content.includes("forbidden")) throw new Error("refused by the store");
          writes.push({ shown: target.shown, content });
          await writeFile(target.absolute, content);
        },
      });
      const toolkit = createToolkit(tools);
      const call = (name: string, args: Record<string, unknown>) =>
        toolkit.execute({ type: "tool_call", id: name, name, arguments: JSON.stringify(args) });
      await call("write_file", { path: "MEMORY.md", content: "- a\n" });
      await call("append_file", { path: "MEMORY.md", content: "- b\n" });
      await call("edit_file", { path: "MEMORY.md", old_text: "- a", new_text: "- A" });
      expect(writes.map((write) => write.content)).toEqual(["- a\n", "- a\n- b\n", "- A\n- b\n"]);
      const refused = await call("write_file", { path: "MEMORY.md", content: "forbidden" });
      expect(refused).toMatchObject({
        isError: true,
        content: expect.stringContaining("refused by the store"),
      });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("createWorkspaceFileTools", () => {
  it("builds the argument schemas once: toolkits made turn after turn share them", () => {
    const parameters = (maxReadLines?: number) =>
      createWorkspaceFileTools({ root, ...(maxReadLines === undefined ? {} : { maxReadLines }) }).map(
        (tool) => tool.parameters,
      );
    const first = parameters();
    for (const [index, schema] of parameters().entries()) expect(schema).toBe(first[index]);
    // read_file's schema names its line limit, so another limit has its own; the others are shared.
    const limited = parameters(50);
    expect(limited[0]).not.toBe(first[0]);
    expect(limited.slice(1)).toEqual(first.slice(1));
    for (const [index, schema] of limited.entries()) if (index > 0) expect(schema).toBe(first[index]);
  });
});
