import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  analyzeChunkText,
  analyzeQuery,
  analyzeText,
  analyzeTextByPattern,
  stemEnglish,
} from "./text-analysis.js";
import {
  containsTerm,
  countTerm,
  normalizeCandidateText,
  normalizeForMatching,
  termOffsets,
  textLength,
} from "./text-matching.js";

const han = [..."项目部署脚本数据库迁移会议客户设计评审上线时间预算计划报告团队"];

describe("analyzeText", () => {
  it("indexes Chinese as characters and overlapping bigrams", () => {
    const terms = analyzeText("新项目的设计评审");
    expect(terms).toEqual(expect.arrayContaining(["新", "项目", "目的", "设计", "评审", "审"]));
  });

  it("lets any two-character (or longer) piece of a Chinese text find it through the query side", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...han), { minLength: 2, maxLength: 40 }),
        fc.nat(),
        fc.nat(),
        (chars, a, b) => {
          const text = chars.join("");
          const start = a % (chars.length - 1);
          const query = chars.slice(start, start + 2 + (b % (chars.length - start - 1))).join("");
          const indexed = new Set(analyzeText(text));
          for (const concept of analyzeQuery(query).concepts) {
            expect(concept.terms.some((term) => indexed.has(term))).toBe(true);
          }
        },
      ),
    );
  });

  it("keeps identifiers, file names and URLs whole as well as in parts", () => {
    const terms = analyzeText("See OPS-4821, scripts/deploy.sh and https://example.com/docs?id=7 today.");
    expect(terms).toEqual(
      expect.arrayContaining([
        "ops-4821",
        "ops",
        "4821",
        "scripts/deploy.sh",
        "deploy.sh",
        "deploy",
        "example.com",
        "https://example.com/docs?id=7",
      ]),
    );
    expect(analyzeText("memory/2025-03-01.md")).toEqual(
      expect.arrayContaining(["2025-03-01.md", "2025-03-01"]),
    );
  });

  it("folds case and full-width forms (NFKC) the same way on both sides", () => {
    expect(analyzeText("ＡＰＯＬＬＯ Ｖ２")).toEqual(["apollo", "v2"]);
    expect(analyzeQuery("Apollo").terms).toEqual(["apollo"]);
  });

  it("adds light English stems for plurals and possessives only", () => {
    expect(analyzeText("policies notes Priya's class status don't")).toEqual([
      "policies",
      "policy",
      "notes",
      "note",
      "priya",
      "class",
      "status",
      "dont",
    ]);
    expect(stemEnglish("boxes")).toBe("boxe");
    expect(stemEnglish("ops")).toBe("ops");
  });
});

describe("analyzeText's ASCII fast path", () => {
  // Pieces that stress where the fast path hands over to the pattern: joiners and apostrophes next to
  // non-ASCII letters, combining marks after ASCII (NFKC composes `e` + U+0301, `=` + U+0338), a final
  // sigma after ASCII letters, full-width forms, ligatures, CJK and Thai.
  const piece = fc.constantFrom(
    ..."abcxyzABCZ0129".split(""),
    ..."-_./:@#+~%&=?'".split(""),
    " ",
    "  ",
    "\n",
    "\t",
    "\r\n",
    ",",
    "(",
    ")",
    "!",
    '"',
    "’",
    "é",
    "\u0301",
    "\u0338",
    "Σ",
    "ΑΣ",
    "İ",
    "ß",
    "ﬁ",
    "Ａ",
    "２",
    "½",
    "项目",
    "数据库",
    "的",
    "。",
    "สวัสดี",
    "😀",
    "policies",
    "Priya's",
    "don't",
    "OPS-4821",
    "deploy.sh",
    "https://example.com/a?b=c",
    "notes",
  );
  const mixed = fc.array(piece, { maxLength: 80 }).map((pieces) => pieces.join(""));

  it("gives exactly the terms of the token pattern on random mixed text", () => {
    fc.assert(
      fc.property(mixed, fc.boolean(), (text, segmentCjk) => {
        expect(analyzeText(text, { segmentCjk })).toEqual(analyzeTextByPattern(text, { segmentCjk }));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 80 }), (text) => {
        expect(analyzeText(text)).toEqual(analyzeTextByPattern(text));
      }),
      { numRuns: 1000 },
    );
  });

  it("measures the length scoring would measure, in the same pass (analyzeChunkText)", () => {
    const expected = (text: string) => ({
      terms: analyzeTextByPattern(text),
      length: textLength(normalizeForMatching(text)),
    });
    fc.assert(
      fc.property(mixed, (text) => {
        expect(analyzeChunkText(text)).toEqual(expected(text));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 80 }), (text) => {
        expect(analyzeChunkText(text)).toEqual(expected(text));
      }),
      { numRuns: 1000 },
    );
    expect(analyzeChunkText("memory/2025-01-02.md\nDon't miss OPS-4821, 项目 a--b").length).toBe(
      textLength(normalizeForMatching("memory/2025-01-02.md\nDon't miss OPS-4821, 项目 a--b")),
    );
  });

  it("hands over at whitespace around non-ASCII words and comes back after them", () => {
    for (const text of [
      "plain ascii words, OPS-4821 and deploy.sh",
      "café au lait's notes",
      "abc=\u0338 x",
      "a''Σ b",
      "x 项目部署 policies then a long ASCII stretch after it: notes notes 数据库 end",
      "e\u0301 ",
      "\u0301abc",
      "ΑΣ",
    ]) {
      expect(analyzeText(text)).toEqual(analyzeTextByPattern(text));
    }
  });
});

describe("analyzeQuery", () => {
  it("marks stop words, and ticket ids, numbers and names as identifiers", () => {
    const { concepts } = analyzeQuery("What did Priya say about OPS-4821 in 2024?");
    const byTerm = new Map(concepts.map((concept) => [concept.terms[0], concept]));
    expect(byTerm.get("what")).toMatchObject({ stopWord: true, identifier: false });
    expect(byTerm.get("priya")).toMatchObject({ stopWord: false, identifier: true });
    expect(byTerm.get("ops-4821")).toMatchObject({ identifier: true });
    expect(byTerm.get("2024")).toMatchObject({ identifier: true });
    expect(byTerm.get("say")).toMatchObject({ identifier: false, stopWord: false });
  });

  it("treats words that frame a question (what time, which day, what is it called) as stop words", () => {
    const { concepts } = analyzeQuery("What time was the skin check moved to, and what is the dog called?");
    const byTerm = new Map(concepts.map((concept) => [concept.terms[0], concept]));
    expect(byTerm.get("time")).toMatchObject({ stopWord: true });
    expect(byTerm.get("called")).toMatchObject({ stopWord: true });
    expect(byTerm.get("skin")).toMatchObject({ stopWord: false });
    // A query made only of them still searches for them.
    expect(analyzeQuery("time").terms).toEqual(["time"]);
  });

  it("groups a word with its stem so either form matches", () => {
    expect(analyzeQuery("deployments").concepts).toEqual([
      { terms: ["deployments", "deployment"], identifier: false, stopWord: false },
    ]);
  });

  it("uses the segmenter's words for Chinese queries, not bigrams across word boundaries", () => {
    const terms = analyzeQuery("项目的截止日期").concepts.map((concept) => concept.terms[0]);
    expect(terms).toEqual(expect.arrayContaining(["项目", "截止", "日期"]));
    expect(terms).not.toContain("目的");
  });
});

describe("containsTerm", () => {
  const word = fc.constantFrom(
    "cat",
    "cats",
    "policy",
    "policies",
    "deploy",
    "ops",
    "4821",
    "note",
    "notes",
    "class",
  );
  const separator = fc.constantFrom(" ", ", ", ". ", "-", "/", "\n", " (", ") ");

  it("finds every term analyzeText produces, without analysing", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(word, separator), { minLength: 1, maxLength: 12 }), (parts) => {
        const text = parts.map(([part, sep]) => part + sep).join("");
        const normalized = normalizeForMatching(text);
        for (const term of analyzeText(text, { segmentCjk: false }))
          expect(containsTerm(normalized, term)).toBe(true);
      }),
    );
  });

  it("finds each occurrence countTerm counts, at the offset of the word", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(word, separator), { minLength: 1, maxLength: 12 }),
        word,
        (parts, term) => {
          const normalized = normalizeForMatching(parts.map(([part, sep]) => part + sep).join(""));
          const offsets = termOffsets(normalized, term);
          expect(offsets.length).toBe(countTerm(normalized, term));
          // The word there is the term or one of its plurals (policy → policies).
          for (const offset of offsets) expect(normalized.slice(offset, offset + 2)).toBe(term.slice(0, 2));
        },
      ),
    );
    expect(termOffsets("- tom: tom, cats and a cat", "cat", 1)).toHaveLength(1);
  });

  it("finds the same offsets, in the same order, as scanning for each surface form in turn", () => {
    const forms = (term: string) =>
      term.length < 3 || !/^[a-z]+$/u.test(term)
        ? [term]
        : [term, `${term}s`, `${term}es`, ...(term.endsWith("y") ? [`${term.slice(0, -1)}ies`] : [])];
    const reference = (normalized: string, term: string, limit: number) => {
      const offsets: number[] = [];
      const isWord = (character: string | undefined) =>
        character !== undefined && /[\p{L}\p{N}\p{M}]/u.test(character);
      for (const form of forms(term)) {
        for (let at = normalized.indexOf(form); at !== -1; at = normalized.indexOf(form, at + 1)) {
          if (isWord(normalized[at - 1]) || isWord(normalized[at + form.length])) continue;
          offsets.push(at);
          if (offsets.length >= limit) return offsets;
        }
      }
      return offsets;
    };
    const piece = fc.constantFrom(
      "policy",
      "policies",
      "policys",
      "polic",
      "cat",
      "cats",
      "cates",
      "category",
      "ops",
      " ",
      "-",
      "é",
      "\n",
      "x",
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 30 }),
        fc.constantFrom("policy", "cat", "ops", "polic", "x"),
        fc.integer({ min: 1, max: 12 }),
        (pieces, term, limit) => {
          const normalized = pieces.join("");
          expect(termOffsets(normalized, term, limit)).toEqual(reference(normalized, term, limit));
          expect(termOffsets(normalized, term)).toEqual(
            reference(normalized, term, Number.POSITIVE_INFINITY),
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("respects word boundaries", () => {
    expect(containsTerm("the category", "cat")).toBe(false);
    expect(containsTerm("see ops-4821.", "ops")).toBe(true);
    expect(containsTerm("two cats", "cat")).toBe(true);
    expect(containsTerm("新项目的", "项目")).toBe(true);
  });
});

describe("textLength", () => {
  const pattern =
    /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30fc\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]|[\p{L}\p{N}\p{M}]+/gu;
  const byPattern = (text: string) => [...text.matchAll(pattern)].length;

  it("counts words and CJK characters exactly as the word pattern does", () => {
    for (const text of [
      "",
      "hello world",
      "ops-4821 deploy",
      "今天天气很好",
      "abc中文 def",
      "café naïve",
      "😀 x",
      "ꀀ㋐",
      "a⺀b",
    ]) {
      expect(textLength(text)).toBe(byPattern(text));
    }
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 60 }),
        (text) => textLength(text) === byPattern(text),
      ),
      { numRuns: 500 },
    );
  });
});

describe("normalizeCandidateText", () => {
  it("is normalizeForMatching (ASCII only lower-cased, anything else through NFKC)", () => {
    const pieces = fc.constantFrom(
      "Deploy",
      "ΣΑΣ",
      "ﬁle",
      "Ｆｕｌｌ",
      "e\u0301",
      "项目",
      "\n",
      " ",
      "İ",
      "ß",
      "😀",
      "\ud800",
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: "binary" }),
          fc.array(pieces).map((parts) => parts.join("")),
        ),
        (text) => {
          expect(normalizeCandidateText(text)).toBe(normalizeForMatching(text));
        },
      ),
      { numRuns: 2000 },
    );
  });
});
