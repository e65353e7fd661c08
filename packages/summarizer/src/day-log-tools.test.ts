import { createToolkit } from "@almanac/agent";
import { hashContent, stageMemoryFile } from "@almanac/memory-files";
import { describe, expect, it } from "vitest";
import { createDayLogTools } from "./day-log-tools.js";

function setup(content: string | undefined) {
  const base =
    content === undefined ? undefined : { path: "memory/2024-05-01.md", content, hash: hashContent(content) };
  const stage = stageMemoryFile("memory/2024-05-01.md", base, { initialContent: "# 2024-05-01\n" });
  const toolkit = createToolkit(createDayLogTools(stage));
  let id = 0;
  const call = (name: string, args: Record<string, unknown>) => {
    id += 1;
    return toolkit.execute({ type: "tool_call", id: `call_${id}`, name, arguments: JSON.stringify(args) });
  };
  return { stage, call };
}

describe("day log tools on a staged file", () => {
  it("starts a missing log from its heading, and counts it unchanged until something is added", async () => {
    const { stage, call } = setup(undefined);
    expect((await call("read_day_log", {})).content).toBe(
      "[memory/2024-05-01.md: 1 line, 13 characters]\n# 2024-05-01\n",
    );
    expect(stage.baseHash).toBeNull();
    expect(stage.changed()).toBe(false);
    await call("append_day_log", { text: "- 09:00 first" });
    expect(stage.content()).toBe("# 2024-05-01\n- 09:00 first\n");
    expect(stage.changed()).toBe(true);
  });

  it("appends on a new line even when the log does not end with one", async () => {
    const { stage, call } = setup("# 2024-05-01\n- 08:00 a");
    await call("append_day_log", { text: "- 09:00 b\n" });
    expect(stage.content()).toBe("# 2024-05-01\n- 08:00 a\n- 09:00 b\n");
  });

  it("edits exactly one occurrence, and reports a missing or ambiguous passage as an error without changing the log", async () => {
    const { stage, call } = setup("# 2024-05-01\n- 08:00 deploy\n- 09:00 deploy\n- 10:00 lunch ($5)\n");
    const missing = await call("edit_day_log", { old_text: "dinner", new_text: "x" });
    expect(missing).toMatchObject({ isError: true });
    expect(missing.content).toMatch(/not found/);
    const ambiguous = await call("edit_day_log", { old_text: "deploy", new_text: "x" });
    expect(ambiguous.content).toMatch(/occurs 2 times/);
    expect(stage.changed()).toBe(false);

    const edited = await call("edit_day_log", {
      old_text: "lunch ($5)",
      new_text: "lunch ($5) with Ann, paid $& cash",
    });
    expect(edited.isError).toBeUndefined();
    expect(stage.content()).toBe(
      "# 2024-05-01\n- 08:00 deploy\n- 09:00 deploy\n- 10:00 lunch ($5) with Ann, paid $& cash\n",
    );
  });

  it("refuses a rewrite that drops most of the log, even of content staged in this job, and keeps it intact", async () => {
    const { stage, call } = setup("# 2024-05-01\n");
    const long = Array.from(
      { length: 20 },
      (_, i) => `- 10:${String(i).padStart(2, "0")} staged entry ${i}`,
    ).join("\n");
    await call("append_day_log", { text: long });
    const before = stage.content();
    const refused = await call("rewrite_day_log", { content: "# 2024-05-01\n- only one\n" });
    expect(refused).toMatchObject({ isError: true });
    expect(refused.content).toMatch(/memory\.shrink_refused/);
    expect(stage.content()).toBe(before);
  });
});
