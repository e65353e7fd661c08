import { createMessage, withMark } from "@almanac/core";
import fc from "fast-check";
import * as cl100k from "gpt-tokenizer/encoding/cl100k_base";
import * as o200k from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { createEstimatingTokenCounter, createTokenCounter, estimateTokens } from "./token-counter.js";

describe("token counter", () => {
  it("counts with a real BPE tokenizer, not characters divided by four", () => {
    const counter = createTokenCounter();
    expect(counter.method).toBe("bpe:o200k_base");
    // "hello world" is two BPE tokens; chars/4 would say 3.
    expect(counter.countText("hello world")).toBe(2);
    expect(counter.countText("")).toBe(0);
    // Special-token text is counted as plain text instead of throwing.
    expect(counter.countText("<|endoftext|>")).toBeGreaterThan(1);
  });

  it("supports the cl100k encoding too", () => {
    const counter = createTokenCounter("cl100k_base");
    expect(counter.method).toBe("bpe:cl100k_base");
    expect(counter.countText("hello world")).toBe(2);
  });

  it("counts a message's framing, name and every block kind", () => {
    const counter = createTokenCounter();
    const plain = counter.countMessage(createMessage({ role: "user", content: "hello world" }));
    expect(plain).toBe(2 + 3);
    const named = counter.countMessage(createMessage({ role: "user", name: "ann", content: "hello world" }));
    expect(named).toBe(plain + 1);
    const call = counter.countMessage(
      createMessage({
        role: "assistant",
        content: [{ type: "tool_call", id: "c", name: "read_file", arguments: '{"path":"a.md"}' }],
      }),
    );
    expect(call).toBeGreaterThan(8);
    const image = counter.countMessage(
      createMessage({ role: "user", content: [{ type: "image", url: "https://x/y.png", detail: "low" }] }),
    );
    expect(image).toBe(85 + 3);
  });

  it("counts a long history again after one new message by tokenizing only the new message", () => {
    const counter = createTokenCounter();
    const history = Array.from({ length: 1000 }, (_, index) =>
      createMessage({ role: index % 2 === 0 ? "user" : "assistant", content: `message number ${index}` }),
    );
    const first = counter.countMessages(history);
    expect(counter.stats().misses).toBe(1000);
    history.push(createMessage({ role: "user", content: "one more" }));
    const second = counter.countMessages(history);
    expect(counter.stats().misses).toBe(1001);
    expect(counter.stats().hits).toBe(1000);
    expect(second).toBeGreaterThan(first);
  });

  it("keeps the cache when a message is only re-marked", () => {
    const counter = createTokenCounter();
    const message = createMessage({ role: "user", content: "cache me" });
    const before = counter.countMessage(message);
    expect(counter.countMessage(withMark(message, "compacted"))).toBe(before);
    expect(counter.stats()).toEqual({ hits: 1, misses: 1 });
  });

  it("labels the fallback estimate and treats CJK characters as about one token each", () => {
    const counter = createEstimatingTokenCounter();
    expect(counter.method).toBe("estimate");
    expect(estimateTokens("项目计划")).toBe(4);
    expect(estimateTokens("abcdefgh")).toBe(2);
  });
});

describe("token counter speed-up", () => {
  const pieces = [
    "a",
    "the",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "'s",
    "'LL",
    "don't",
    "123456",
    "OPS-4821",
    "项目部署",
    "。",
    "😀",
    "é",
    "ﬁ",
    "<|endoftext|>",
    "##",
    "- ",
    "`code`",
    "naïve",
    "Ünïcödé",
    "کتاب",
    "ไทย",
    "\u200b",
    "aaaaaaaaa",
    "0000000",
    "项目部署脚本数据库迁移会议客户设计评审上线",
    "x\u0301",
  ];
  const text = fc
    .array(
      fc.oneof(
        fc.constantFrom(...pieces),
        fc.string(),
        fc.string({ unit: "grapheme" }),
        fc.string({ unit: "binary" }),
      ),
      {
        maxLength: 40,
      },
    )
    .map((parts) => parts.join(""));

  it.each(["o200k_base", "cl100k_base"] as const)(
    "counts exactly what gpt-tokenizer's countTokens counts (%s), on random text and twice in a row",
    (encoding) => {
      const counter = createTokenCounter(encoding);
      const reference = encoding === "o200k_base" ? o200k.countTokens : cl100k.countTokens;
      fc.assert(
        fc.property(text, (value) => {
          const expected = reference(value, { disallowedSpecial: new Set() });
          expect(counter.countText(value)).toBe(expected);
          expect(counter.countText(value)).toBe(expected);
        }),
        { numRuns: 2000 },
      );
    },
  );
});

describe("token counter over the compact rank table", () => {
  const codePoints = (min: number, max: number, maxLength: number) =>
    fc.array(fc.integer({ min, max }), { maxLength }).map((points) => String.fromCodePoint(...points));
  const cjk = fc.oneof(
    codePoints(0x4e00, 0x9fff, 12),
    codePoints(0x3040, 0x30ff, 8),
    codePoints(0xac00, 0xd7af, 8),
  );
  const emoji = fc.oneof(
    codePoints(0x1f300, 0x1faff, 6),
    fc.constantFrom("👩‍💻", "👍🏽", "🇯🇵", "❤️", "🏳️‍🌈", "1️⃣", "🧑🏿‍🤝‍🧑🏻"),
  );
  const whitespace = fc
    .array(
      fc.constantFrom(" ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\uFEFF", "\v"),
      {
        maxLength: 12,
      },
    )
    .map((parts) => parts.join(""));
  const code = fc.oneof(
    fc.constantFrom(
      "function f(a, b) {\n  return a + b;\n}\n",
      "const x = { 'key': [1, 2, 3] };",
      'if (x !== null) {\n\tconsole.log(x?.y ?? [], "\\u00e9");\n}',
      "def main():\n    print('héllo')\n",
      "SELECT * FROM t WHERE id = 42;",
      '<div class="a">&nbsp;</div>',
      "#!/usr/bin/env bash\nset -euo pipefail\n",
      "// TODO: fix\n/* block */",
      "0x7fffffff >>> 0 === 2147483647",
      "\uFEFFusing System;\n",
    ),
    fc.string({ unit: "grapheme-ascii", maxLength: 30 }),
  );
  const text = fc
    .array(fc.oneof(cjk, emoji, whitespace, code, fc.string({ unit: "binary", maxLength: 10 })), {
      maxLength: 30,
    })
    .map((parts) => parts.join(""));

  it.each(["o200k_base", "cl100k_base"] as const)(
    "counts what gpt-tokenizer's countTokens counts (%s) on CJK, emoji, whitespace runs and code",
    (encoding) => {
      const counter = createTokenCounter(encoding);
      const reference = encoding === "o200k_base" ? o200k.countTokens : cl100k.countTokens;
      fc.assert(
        fc.property(text, (value) => {
          expect(counter.countText(value)).toBe(reference(value, { disallowedSpecial: new Set() }));
        }),
        { numRuns: 2000 },
      );
    },
  );

  it("counts long pieces (merged with a heap above 256 bytes) as gpt-tokenizer does", () => {
    const run = (min: number, max: number) =>
      fc
        .array(fc.integer({ min, max }), { minLength: 60, maxLength: 400 })
        .map((points) => String.fromCodePoint(...points));
    const longPiece = fc.oneof(
      run(0x4e00, 0x4fff),
      run(0x61, 0x7a),
      run(0x1f600, 0x1f64f),
      fc
        .constantFrom(" ", "\t", "\n")
        .chain((space) => fc.integer({ min: 200, max: 1200 }).map((n) => space.repeat(n))),
      // Runs over a few letters: pairs of the same rank overlap, so the merge must take the leftmost first.
      fc
        .constantFrom(
          ["a", "b"],
          ["a", "aa", "b"],
          ["e", "r", "t", "s"],
          ["na", "an", "n"],
          ["\u00e9", "e", "r"],
        )
        .chain((letters) => fc.array(fc.constantFrom(...letters), { minLength: 150, maxLength: 400 }))
        .map((parts) => parts.join("")),
    );
    const counter = createTokenCounter();
    fc.assert(
      fc.property(longPiece, (value) => {
        expect(counter.countText(value)).toBe(o200k.countTokens(value, { disallowedSpecial: new Set() }));
      }),
      { numRuns: 300 },
    );
    const long = Array.from({ length: 20_000 }, (_, index) =>
      String.fromCodePoint(0x4e00 + ((index * 7919) % 0x5200)),
    ).join("");
    // gpt-tokenizer's count of this one piece, which takes it ~2 s (a quadratic merge).
    expect(createTokenCounter().countText(long)).toBe(38442);
  });
});
