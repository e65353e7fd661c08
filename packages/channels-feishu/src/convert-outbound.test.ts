import { describe, expect, it } from "vitest";
import { buildCard } from "./convert-card.js";
import {
  encodedContentBytes,
  FEISHU_POST_BODY_LIMIT_BYTES,
  markdownToPostContents,
  toPostContent,
} from "./convert-outbound.js";
import { postLocalesSchema } from "./event-schema.js";

/** The Markdown inside each post content. */
const markdownOf = (contents: string[]) =>
  contents.map((content) => {
    const element = postLocalesSchema.parse(JSON.parse(content)).zh_cn?.content[0]?.[0];
    expect(element?.tag).toBe("md");
    return element?.text ?? "";
  });

const fenceCount = (text: string) =>
  text.split("\n").filter((line) => line.trimStart().startsWith("```")).length;

describe("markdownToPostContents", () => {
  it("wraps a short answer in one post with a single md element", () => {
    expect(markdownToPostContents("**Done.**")).toEqual([
      JSON.stringify({ zh_cn: { title: "", content: [[{ tag: "md", text: "**Done.**" }]] } }),
    ]);
  });

  it("keeps a 5,000-character answer with a code block in one post, fence intact", () => {
    const code = [
      "```python",
      ...Array.from({ length: 60 }, (_, index) => `print("line ${index}")  # check`),
      "```",
    ].join("\n");
    const answer =
      `${"Here is the script you asked for. ".repeat(40)}\n\n${code}\n\n${"Run it with python3. ".repeat(200)}`.slice(
        0,
        5_000,
      );
    const contents = markdownToPostContents(answer);
    expect(answer.length).toBe(5_000);
    expect(contents).toHaveLength(1);
    expect(markdownOf(contents)[0]).toContain(code);
  });

  it("splits escape-heavy and CJK text so each body stays under 30 KB and every code piece is fenced", () => {
    const line = '    console.log("引号\\"和反斜杠\\\\", \'路径\');';
    const code = ["```js", ...Array.from({ length: 1_500 }, () => line), "```"].join("\n");
    const cjk = "这是一个很长的中文段落，用来测试多字节字符的大小计算。".repeat(400);
    const contents = markdownToPostContents(`${cjk}\n\n${code}\n\n${cjk}`);
    expect(contents.length).toBeGreaterThan(3);
    for (const content of contents) {
      expect(encodedContentBytes(content) + 1024).toBeLessThanOrEqual(FEISHU_POST_BODY_LIMIT_BYTES);
    }
    const texts = markdownOf(contents);
    for (const text of texts) expect(fenceCount(text) % 2).toBe(0);
    const codeLines = texts
      .join("\n")
      .split("\n")
      .filter((text) => text === line);
    expect(codeLines).toHaveLength(1_500);
  });

  it("measures the content as it appears escaped inside the request body", () => {
    const content = toPostContent('a"b\n');
    expect(encodedContentBytes(content)).toBe(
      Buffer.byteLength(JSON.stringify({ content }), "utf8") - '{"content":}'.length,
    );
  });
});

describe("mention tags in what the bot says", () => {
  it("are shown as typed, never rendered as a mention, in posts and in cards", () => {
    const said = 'Hello <at id=all></at> and <AT user_id="ou_x">x</at> — `a <b>` stays';
    const [post] = markdownOf([toPostContent(said)]);
    const card = JSON.stringify(buildCard(said, [], { chatType: "group" }));
    for (const text of [post ?? "", card]) {
      expect(text).not.toMatch(/<\/?at\b/i);
      expect(text.replaceAll("\u200B", "")).toContain("<at id=all></at>");
    }
    expect(post).toContain("`a <b>` stays");
  });
});
