import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveWorkspacePath } from "./workspace-path.js";

let base: string;
let root: string;
let outside: string;

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-path-")));
  root = path.join(base, "workspace");
  outside = path.join(base, "outside");
  await mkdir(path.join(root, "notes"), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "secret");
  await writeFile(path.join(root, "notes", "a.md"), "a");
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function refusal(requested: string): Promise<unknown> {
  return resolveWorkspacePath(root, requested).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("resolveWorkspacePath", () => {
  it("resolves existing and not-yet-existing paths inside the root", async () => {
    expect(await resolveWorkspacePath(root, "notes/a.md")).toBe(path.join(root, "notes", "a.md"));
    expect(await resolveWorkspacePath(root, "notes/new/deeper/b.md")).toBe(
      path.join(root, "notes", "new", "deeper", "b.md"),
    );
    expect(await resolveWorkspacePath(root, "notes/../notes/./a.md")).toBe(path.join(root, "notes", "a.md"));
    expect(await resolveWorkspacePath(root, ".")).toBe(root);
  });

  it("refuses a path that climbs out of the root with ..", async () => {
    expect(await refusal("../outside/secret.txt")).toMatchObject({
      code: "workspace.path_outside",
      category: "user",
    });
    expect(await refusal("notes/../../x")).toMatchObject({ code: "workspace.path_outside" });
    expect(await refusal("..")).toMatchObject({ code: "workspace.path_outside" });
  });

  it("refuses absolute paths even when they point inside the root", async () => {
    expect(await refusal("/etc/passwd")).toMatchObject({ code: "workspace.path_outside" });
    expect(await refusal(path.join(root, "notes", "a.md"))).toMatchObject({ code: "workspace.path_outside" });
  });

  it("refuses a path with a NUL byte", async () => {
    const error = await refusal("notes/a.md\0.txt");
    expect(error).toMatchObject({ code: "workspace.path_outside" });
    expect((error as Error).message).toContain("NUL byte");
  });

  it("refuses a symlink whose target is outside the root", async () => {
    await symlink(path.join(outside, "secret.txt"), path.join(root, "link.txt"));
    expect(await refusal("link.txt")).toMatchObject({ code: "workspace.path_outside" });
  });

  it("refuses a path under a symlinked directory that leads outside, even for a new file", async () => {
    await symlink(outside, path.join(root, "escape"));
    expect(await refusal("escape/secret.txt")).toMatchObject({ code: "workspace.path_outside" });
    expect(await refusal("escape/new-file.txt")).toMatchObject({ code: "workspace.path_outside" });
    expect(await refusal("escape/new-dir/new-file.txt")).toMatchObject({ code: "workspace.path_outside" });
  });

  it("refuses a dangling symlink whose future target is outside the root", async () => {
    await symlink(path.join(outside, "not-yet.txt"), path.join(root, "dangling.txt"));
    expect(await refusal("dangling.txt")).toMatchObject({ code: "workspace.path_outside" });
  });

  it("refuses a symlink loop instead of hanging", async () => {
    await symlink(path.join(root, "loop-b"), path.join(root, "loop-a"));
    await symlink(path.join(root, "loop-a"), path.join(root, "loop-b"));
    expect(await refusal("loop-a/x")).toMatchObject({ code: "workspace.path_outside" });
  });

  it("allows symlinks that stay inside the root", async () => {
    await symlink(path.join(root, "notes", "a.md"), path.join(root, "alias.md"));
    await symlink(path.join(root, "notes"), path.join(root, "shortcut"));
    expect(await resolveWorkspacePath(root, "alias.md")).toBe(path.join(root, "notes", "a.md"));
    expect(await resolveWorkspacePath(root, "shortcut/new.md")).toBe(path.join(root, "notes", "new.md"));
  });

  it("works when the root itself is reached through a symlink", async () => {
    const linkedRoot = path.join(base, "linked-root");
    await symlink(root, linkedRoot);
    expect(await resolveWorkspacePath(linkedRoot, "notes/a.md")).toBe(path.join(root, "notes", "a.md"));
    await symlink(outside, path.join(root, "escape"));
    await expect(resolveWorkspacePath(linkedRoot, "escape/secret.txt")).rejects.toMatchObject({
      code: "workspace.path_outside",
    });
  });

  it("says plainly when the root does not exist", async () => {
    await expect(resolveWorkspacePath(path.join(base, "missing"), "a.md")).rejects.toMatchObject({
      code: "workspace.root_missing",
    });
  });
});
