import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ForgottenRegistry, normalizePhrase, withoutForgotten } from "./forget.js";

describe("forgetting lines", () => {
  it("removes every line that mentions a phrase, whatever its case, width or spacing, and keeps the rest", () => {
    const log =
      "# 2026-12-01\n\n- 09:00 The SAFE  code is 4711.\n- 09:05 保险箱密码是４７１１。\n- 09:10 Tea.\n";
    const { content, removed } = withoutForgotten(log, [normalizePhrase("4711")]);
    expect(content).toBe("# 2026-12-01\n\n- 09:10 Tea.\n");
    expect(removed).toEqual(["- 09:00 The SAFE  code is 4711.", "- 09:05 保险箱密码是４７１１。"]);
    expect(withoutForgotten(log, [normalizePhrase("safe code")]).removed).toHaveLength(1);
    expect(withoutForgotten(log, []).content).toBe(log);
  });

  it("keeps what was forgotten across restarts, one entry per phrase", async () => {
    const dir = await mkdtemp(join(tmpdir(), "almanac-forget-"));
    try {
      const file = join(dir, "forgotten.json");
      const registry = new ForgottenRegistry(file);
      await registry.open();
      await registry.add({ phrase: "Safe Code", at: 1, by: "api", purgeBackupsAt: 10 });
      await registry.add({ phrase: "safe code", at: 2, by: "console", purgeBackupsAt: 20 });
      await registry.markPurged("safe code", 30);
      const reopened = new ForgottenRegistry(file);
      await reopened.open();
      expect(reopened.list()).toEqual([
        { phrase: "safe code", at: 2, by: "console", purgeBackupsAt: 20, purgedAt: 30 },
      ]);
      expect(reopened.normalized()).toEqual(["safe code"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
