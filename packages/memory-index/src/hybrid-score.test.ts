import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyRecency, isSpeakerAt, scoreHits, scoringLength } from "./hybrid-score.js";
import { memorySource } from "./memory-source.js";
import { makeSnippet } from "./snippet.js";
import { analyzeQuery } from "./text-analysis.js";
import { normalizeForMatching } from "./text-matching.js";
import type { BackendHit } from "./types.js";

const now = Date.UTC(2025, 5, 1);

function hit(path: string, text: string, evidence: Partial<BackendHit> = {}): BackendHit {
  return {
    chunk: {
      id: path,
      path,
      startLine: 1,
      endLine: 1,
      headings: [],
      text,
      hash: path,
      source: memorySource(path),
      updatedAt: 0,
    },
    ...evidence,
  };
}

describe("applyRecency", () => {
  const score = fc.double({ min: 0, max: 1, noNaN: true });
  const age = fc.double({ min: 0, max: 3650, noNaN: true });

  it("is a mild boost: at most a quarter of its weight, and never above 1", () => {
    fc.assert(
      fc.property(score, age, (s, days) => {
        const boosted = applyRecency(s, days, 0.2, 30);
        expect(boosted).toBeGreaterThanOrEqual(s);
        expect(boosted - s).toBeLessThanOrEqual(0.05 + 1e-12);
        expect(boosted).toBeLessThanOrEqual(1);
      }),
    );
  });

  it("never lets a fresh note overtake an old one that scores clearly higher", () => {
    fc.assert(
      fc.property(score, score, age, (oldScore, newScore, oldAge) => {
        fc.pre(oldScore >= newScore + 0.05);
        expect(applyRecency(oldScore, oldAge, 0.2, 30)).toBeGreaterThan(applyRecency(newScore, 0, 0.2, 30));
      }),
    );
  });

  it("keeps the order of scores for notes of the same age", () => {
    fc.assert(
      fc.property(score, score, age, (a, b, days) => {
        fc.pre(a > b + 1e-9);
        expect(applyRecency(a, days, 0.2, 30)).toBeGreaterThan(applyRecency(b, days, 0.2, 30));
      }),
    );
  });
});

describe("scoreHits", () => {
  it("ranks the note holding the query's identifier first", () => {
    const query = analyzeQuery("what happened with OPS-4821 during the database failover");
    const scored = scoreHits(
      query,
      [
        hit("memory/db.md", "The database failover happened during the night; what a mess.", {
          textScore: 9,
        }),
        hit("memory/ticket.md", "OPS-4821 closed.", { textScore: 2 }),
      ],
      { mode: "text", now },
    );
    expect(scored.map((entry) => entry.chunk.path)).toEqual(["memory/ticket.md", "memory/db.md"]);
    expect(scored[0]!.exact).toBe(true);
  });

  it("lets relevance decide: a clear old match beats a weak recent one, recency only breaks ties", () => {
    const query = analyzeQuery("dentist crown molar receipt");
    const scored = scoreHits(
      query,
      [
        hit("memory/2025-05-31.md", "Booked the dentist.", { textScore: 1 }),
        hit("memory/2021-02-01.md", "Dentist fitted a crown on the lower molar.", { textScore: 3 }),
        hit("memory/2024-01-01.md", "Dentist fitted a crown on the lower molar.", { textScore: 3 }),
      ],
      { mode: "text", now },
    );
    expect(scored.map((entry) => entry.chunk.path)).toEqual([
      "memory/2024-01-01.md",
      "memory/2021-02-01.md",
      "memory/2025-05-31.md",
    ]);
    expect(scored[0]!.score).toBeGreaterThan(scored[1]!.score);
    expect(scored[0]!.score - scored[1]!.score).toBeLessThan(0.05);
  });

  it("keeps the spread of scores in [0, 1] instead of tying hits at the top", () => {
    const query = analyzeQuery("apollo launch date risks");
    const scored = scoreHits(
      query,
      [
        hit("a.md", "Apollo launch date is 9 May; risks listed below.", {
          textScore: 5,
          vectorSimilarity: 0.8,
        }),
        hit("b.md", "Apollo launch slipped.", { textScore: 3, vectorSimilarity: 0.6 }),
        hit("c.md", "Launch party.", { textScore: 1, vectorSimilarity: 0.2 }),
        hit("d.md", "Nothing related.", { vectorSimilarity: 0.1 }),
      ],
      { mode: "hybrid", now },
    );
    const scores = scored.map((entry) => entry.score);
    expect(new Set(scores).size).toBe(4);
    expect(Math.max(...scores)).toBeLessThanOrEqual(1);
    expect(Math.min(...scores)).toBeGreaterThanOrEqual(0);
    expect(scored[0]!.chunk.path).toBe("a.md");
  });

  it("scores a frozen chunk object seen before the same as a fresh copy, and a changed chunk by its new text", () => {
    const query = analyzeQuery("otters");
    const original = hit("memory/2025-05-30.md", "# Day\n\nOtters hold hands.\n- Priya: otters again.");
    const kept = { chunk: Object.freeze({ ...original.chunk }) };
    const first = scoreHits(query, [kept], { mode: "text", now });
    expect(scoreHits(query, [kept], { mode: "text", now })).toEqual(first);
    expect(scoreHits(query, [original], { mode: "text", now })).toEqual(
      first.map((scored) => ({ ...scored, chunk: original.chunk })),
    );
    // Same path, id and hash, other text: what scoring derived from the first must not be reused.
    const changed = { chunk: Object.freeze({ ...kept.chunk, text: "# Day\n\nBadgers dig." }) };
    expect(scoreHits(query, [changed], { mode: "text", now })[0]?.coverage).toBe(0);
    expect(scoreHits(analyzeQuery("badgers"), [changed], { mode: "text", now })[0]?.coverage).toBe(1);
    // A chunk that is not frozen may change between searches: it is read anew every time.
    const open = hit("MEMORY.md", "Otters hold hands.");
    expect(scoreHits(query, [open], { mode: "text", now })[0]?.coverage).toBe(1);
    (open.chunk as { text: string }).text = "Badgers dig.";
    expect(scoreHits(query, [open], { mode: "text", now })[0]?.coverage).toBe(0);
  });

  it("scores chunks not embedded yet on text alone in hybrid mode", () => {
    const query = analyzeQuery("walrus");
    const [embedded, pending] = [
      scoreHits(query, [hit("a.md", "Walrus facts.", { textScore: 1, vectorSimilarity: 0 })], {
        mode: "hybrid",
        now,
      }),
      scoreHits(query, [hit("a.md", "Walrus facts.", { textScore: 1 })], { mode: "hybrid", now }),
    ];
    expect(pending[0]!.score).toBeGreaterThan(embedded[0]!.score);
  });

  it("ranks a chunk whose one line holds the name and the topic above a chunk that has them apart", () => {
    const query = analyzeQuery("Which city has Priya booked flights to?");
    const spread = hit(
      "memory/spread.md",
      [
        "- Priya: Flights are so expensive this year, Tom.",
        "- Tom: Priya, can you grab bread on the way?",
        "- Tom: Booked the dentist for Friday.",
        "- Priya: The flights home were late again.",
        "- Tom: Booked a table for us, Priya.",
      ].join("\n"),
      { textScore: 3 },
    );
    const together = hit(
      "memory/together.md",
      [
        "- Tom: Sunny but cold again.",
        "- Priya: Flights to Ljubljana are booked for the bank holiday!",
        "- Tom: Nice, enjoy.",
        "- Tom: The wifi is down again.",
        "- Tom: Where did we put the charger?",
      ].join("\n"),
      { textScore: 2 },
    );
    const order = (lineWeight: number) =>
      scoreHits(query, [spread, together], { mode: "text", now, options: { lineWeight } }).map(
        (entry) => entry.chunk.path,
      );
    expect(order(0)).toEqual(["memory/spread.md", "memory/together.md"]);
    expect(scoreHits(query, [spread, together], { mode: "text", now })[0]!.chunk.path).toBe(
      "memory/together.md",
    );
  });

  it("counts a name more on a line that person speaks than on a line that mentions them", () => {
    const query = analyzeQuery("what did Tom cook");
    const scored = scoreHits(
      query,
      [
        hit("a.md", "- Priya: Did Tom cook tonight?", { textScore: 1 }),
        hit("b.md", "- Tom: I cook a risotto tonight.", { textScore: 1 }),
      ],
      { mode: "text", now },
    );
    expect(scored.map((entry) => entry.chunk.path)).toEqual(["b.md", "a.md"]);
  });

  it("scores the same with the length a backend stored as with the length it measures", () => {
    const texts = [
      "- Priya: the deploy budget moved to May.\n- Tom: deploy budgets again?",
      "Policies and notes on the deploy, OPS-4821.",
      "项目预算的会议记录 deploy",
      "nothing relevant here at all, just words",
    ];
    const hits = texts.map((text, index) => hit(`memory/2025-0${index + 1}-01.md`, text));
    const stored = hits.map(({ chunk }) => ({ chunk: { ...chunk, textLength: scoringLength(chunk) } }));
    for (const query of ["deploy budget", "Priya deploy", "项目预算", "OPS-4821 policy"]) {
      const analyzed = analyzeQuery(query);
      const measured = scoreHits(analyzed, hits, { mode: "text", now });
      const fromIndex = scoreHits(analyzed, stored, { mode: "text", now });
      expect(fromIndex.map(({ chunk, ...rest }) => ({ path: chunk.path, ...rest }))).toEqual(
        measured.map(({ chunk, ...rest }) => ({ path: chunk.path, ...rest })),
      );
    }
  });
});

describe("isSpeakerAt", () => {
  /** What scoring checked before (line start found among all line starts, colon searched in a slice). */
  function reference(text: string, offset: number): boolean {
    const start = offset === 0 ? 0 : text.lastIndexOf("\n", offset - 1) + 1;
    if (text[start] !== "-" || offset > start + 3) return false;
    const next = text.indexOf("\n", start);
    const end = next === -1 ? text.length : next + 1;
    const colon = text.slice(start, Math.min(end, start + 40)).search(/[:：]/u);
    return colon !== -1 && offset < start + colon;
  }

  it("says what the line-start search said, on random dialogue-like text", () => {
    const piece = fc.constantFrom("-", " ", ":", "：", "\n", "Priya", "a", "- Tom: ", "x".repeat(30));
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 30 }).map((parts) => parts.join("")),
        fc.nat(),
        (text, at) => {
          const offset = at % text.length;
          expect(isSpeakerAt(text, offset)).toBe(reference(text, offset));
        },
      ),
      { numRuns: 5000 },
    );
  });
});

describe("occurrences handed to the snippet", () => {
  it("normalising a text after a newline gives what normalising it alone gives", () => {
    const text = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }));
    fc.assert(
      fc.property(text, text, (before, after) => {
        expect(normalizeForMatching(`${before}\n${after}`)).toBe(
          normalizeForMatching(`${before}\n`) + normalizeForMatching(after),
        );
      }),
      { numRuns: 3000 },
    );
  });

  it("give the snippet it would have made by scanning the chunk itself", () => {
    const piece = fc.constantFrom(
      "- Priya: ",
      "- Tom：",
      "deploy",
      "Budgets",
      "ΣΑΣ",
      "ﬁle",
      "项目预算",
      "OPS-4821",
      " — ",
      " ",
      "\n",
      "x".repeat(50),
    );
    const query = fc.constantFrom("deploy budget", "Priya deploy", "项目预算", "OPS-4821 file", "σας");
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 60 }),
        fc.array(fc.constantFrom("Plans", "ΣΑΣ — 项目", "deploy"), { maxLength: 2 }),
        query,
        fc.constantFrom(20, 60, 200),
        fc.boolean(),
        (pieces, headings, words, maxChars, frozen) => {
          const base = hit("memory/2025-05-01.md", pieces.join(""));
          // A frozen chunk (as the SQLite backend's cache hands out) has its lines kept; scored twice here.
          const chunk = { ...base.chunk, headings };
          const candidate = { ...base, chunk: frozen ? Object.freeze(chunk) : chunk };
          scoreHits(analyzeQuery(words), [candidate], { mode: "text", now });
          const scored = scoreHits(analyzeQuery(words), [candidate], { mode: "text", now })[0]!;
          makeSnippet(scored.chunk, analyzeQuery(words), maxChars, undefined, scored.occurrences);
          expect(
            makeSnippet(scored.chunk, analyzeQuery(words), maxChars, undefined, scored.occurrences),
          ).toEqual(makeSnippet({ ...scored.chunk }, analyzeQuery(words), maxChars));
        },
      ),
      { numRuns: 2000 },
    );
  });
});
