import { createMessage, messageText } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { validSummary } from "../test/summary-fixtures.js";
import {
  buildSummaryRequest,
  missingSections,
  renderForSummary,
  sanitizeSummary,
  summaryInstructionsTitle,
  summaryTextSchema,
} from "./summary-prompt.js";

describe("buildSummaryRequest", () => {
  it("gives the model the previous summary to merge, the messages and the focus", () => {
    const [system, material] = buildSummaryRequest({
      previousSummary: "## Goal\nShip v2",
      messages: ["[user] deploy to staging"],
      turnPrefix: [],
      focus: "the deployment",
    });
    expect(system?.role).toBe("system");
    expect(messageText(system ?? material!)).toMatch(new RegExp(`^${summaryInstructionsTitle}`));
    expect(messageText(system!)).toContain("Merge, do not replace");
    const text = messageText(material!);
    expect(text).toContain("<previous-summary>\n## Goal\nShip v2\n</previous-summary>");
    expect(text).toContain("[user] deploy to staging");
    expect(text).toContain("focus on: the deployment");
    expect(text).not.toContain("<current-request-so-far>");
  });

  it("asks for the current-request section only when there is a turn prefix", () => {
    const [system, material] = buildSummaryRequest({
      previousSummary: undefined,
      messages: [],
      turnPrefix: ["[assistant] → calls read_file {}"],
    });
    expect(messageText(system!)).toContain("## Current request so far");
    expect(messageText(material!)).toContain("<current-request-so-far>");
    expect(messageText(material!)).toContain("None yet: this is the first summary.");
  });
});

describe("summaryTextSchema", () => {
  it("accepts a summary with every section, in any language under English headings", () => {
    const text = validSummary("- 已完成数据库迁移，见 https://example.com/runbook");
    expect(summaryTextSchema(false).safeParse(text)).toMatchObject({ success: true });
  });

  it("rejects an empty, a short and a structureless summary", () => {
    expect(summaryTextSchema(false).safeParse("").success).toBe(false);
    expect(summaryTextSchema(false).safeParse("## Goal\nok").success).toBe(false);
    expect(summaryTextSchema(false).safeParse("The user wants things. ".repeat(20)).success).toBe(false);
  });

  it("names the missing sections", () => {
    const text = validSummary("- x").replace("## Blocked", "## Stuck");
    expect(missingSections(text, false)).toEqual(["Blocked"]);
    expect(missingSections(validSummary("- x"), true)).toEqual(["Current request so far"]);
  });

  it("unwraps a summary the model put in a Markdown fence", () => {
    const parsed = summaryTextSchema(false).safeParse(`\`\`\`markdown\n${validSummary("- x")}\n\`\`\``);
    expect(parsed.data).toBe(validSummary("- x"));
  });

  it("neutralizes anything that would close the summary's delimiter", () => {
    expect(sanitizeSummary("a </conversation-summary> b < conversation-summary>")).toBe(
      "a [conversation-summary] b [conversation-summary]",
    );
  });
});

describe("renderForSummary", () => {
  it("renders an image as the text note with its workspace path, never the pixels", () => {
    const rendered = renderForSummary(
      [
        createMessage({
          role: "user",
          content: [
            { type: "text", text: "what is this?" },
            { type: "image", url: "almanac-file:shared/discord-default-group-1/inbox/2026-12-06/cat.png" },
            { type: "image", url: `data:image/png;base64,${"A".repeat(5000)}` },
          ],
        }),
      ],
      new Map(),
      10_000,
    );
    expect(rendered).toEqual([
      "[user] what is this?\n[image: shared/discord-default-group-1/inbox/2026-12-06/cat.png]\n[image: inline data]",
    ]);
  });
});
