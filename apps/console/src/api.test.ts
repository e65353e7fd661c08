import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiError, approvalPath, memoryFilePath, PATH_REFUSED, sessionPath, taskPath } from "./api.js";

beforeAll(() => vi.stubGlobal("location", new URL("http://127.0.0.1:8787/memory")));
afterAll(() => vi.unstubAllGlobals());

function refusal(build: () => string): string | undefined {
  try {
    build();
  } catch (error) {
    return error instanceof ApiError ? error.code : String(error);
  }
  return undefined;
}

describe("API paths built from what a link carries", () => {
  it("encodes each part of a memory file path and keeps its slashes", () => {
    expect(memoryFilePath("MEMORY.md")).toBe("/api/memory/files/MEMORY.md");
    expect(memoryFilePath("memory/2025-01-02.md")).toBe("/api/memory/files/memory/2025-01-02.md");
    expect(memoryFilePath("shared/team chat/a#b?.md")).toBe(
      "/api/memory/files/shared/team%20chat/a%23b%3F.md",
    );
    expect(memoryFilePath("memory/..notes.md")).toBe("/api/memory/files/memory/..notes.md");
  });

  it("refuses memory paths that would leave the memory API, whatever their spelling", () => {
    for (const path of [
      "../../info",
      "..",
      ".",
      "memory/../../../info",
      "memory/./x.md",
      "memory//x.md",
      "/api/info",
      "..\\..\\info",
      "memory%2F..%2F..%2Finfo",
      "memory%2f..",
      "memory%5C..",
      "memory/x.md\n",
      "",
    ])
      expect(
        refusal(() => memoryFilePath(path)),
        JSON.stringify(path),
      ).toBe(PATH_REFUSED);
  });

  it("puts a session key into one path segment and refuses one that is only dots", () => {
    expect(sessionPath("web:default:web:a/b")).toBe("/api/sessions/web%3Adefault%3Aweb%3Aa%2Fb");
    expect(refusal(() => sessionPath(".."))).toBe(PATH_REFUSED);
    expect(refusal(() => sessionPath(""))).toBe(PATH_REFUSED);
  });

  it("puts an approval id into one path segment and refuses one that would climb out", () => {
    expect(approvalPath("K7QD")).toBe("/api/approvals/K7QD");
    expect(approvalPath("a/b")).toBe("/api/approvals/a%2Fb");
    expect(refusal(() => approvalPath(".."))).toBe(PATH_REFUSED);
  });

  it("puts a task id into one path segment and refuses one that would climb out", () => {
    expect(taskPath("T7K2QD")).toBe("/api/tasks/T7K2QD");
    expect(taskPath("a/b?c")).toBe("/api/tasks/a%2Fb%3Fc");
    expect(refusal(() => taskPath(".."))).toBe(PATH_REFUSED);
    expect(refusal(() => taskPath(""))).toBe(PATH_REFUSED);
  });
});
