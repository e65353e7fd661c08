import { describe, expect, it } from "vitest";
import { analyzeQuery } from "./text-analysis.js";
import { planTextQuery } from "./text-query-plan.js";

const statistics = (total: number, documents: Record<string, number>) => ({
  total,
  documents: new Map(Object.entries(documents)),
});

describe("planTextQuery", () => {
  it("sends every term when the backend has no statistics", () => {
    expect(planTextQuery(analyzeQuery("apollo launch"), statistics(0, {}), 100)).toEqual({
      primary: { terms: ["apollo", "launch"] },
    });
  });

  it("takes rare terms first within the budget and leaves stop words and absent terms out", () => {
    const plan = planTextQuery(
      analyzeQuery("what is the apollo launch date"),
      statistics(10_000, { apollo: 20, launch: 300, date: 4000, what: 9000, the: 9900 }),
      1000,
    );
    expect(plan).toEqual({ primary: { terms: ["apollo", "launch"] } });
  });

  it("intersects common terms instead of ranking every match", () => {
    const plan = planTextQuery(
      analyzeQuery("meeting notes"),
      statistics(100_000, { meeting: 20_000, notes: 30_000, note: 30_000 }),
      5000,
    );
    expect(plan).toEqual({
      primary: { terms: ["meeting", "notes", "note"], allOf: [["meeting"], ["notes", "note"]], rank: false },
      topUp: { terms: ["meeting"], rank: false },
    });
    const small = planTextQuery(
      analyzeQuery("meeting notes"),
      statistics(100_000, { meeting: 8000, notes: 9000 }),
      5000,
    );
    expect(small.primary).toMatchObject({ allOf: [["meeting"], ["notes"]], rank: true });
  });

  it("falls back to the newest chunks holding a single very common term", () => {
    expect(planTextQuery(analyzeQuery("meeting"), statistics(100_000, { meeting: 60_000 }), 5000)).toEqual({
      primary: { terms: ["meeting"], rank: false },
    });
    expect(planTextQuery(analyzeQuery("zzz"), statistics(100, {}), 5000)).toEqual({ primary: undefined });
  });

  it("takes the newest chunks unranked when every term is in nearly every chunk (nothing to rank by)", () => {
    // Small enough for the budget, but BM25 would only order all 731 matches by term counts.
    const stats = statistics(731, { deploy: 731, budget: 731, invoice: 700, code: 12 });
    expect(planTextQuery(analyzeQuery("deploy budget"), stats, 5000)).toEqual({
      primary: { terms: ["deploy", "budget"], allOf: [["deploy"], ["budget"]], rank: false },
      topUp: { terms: ["deploy"], rank: false },
    });
    expect(planTextQuery(analyzeQuery("invoice"), stats, 5000)).toEqual({
      primary: { terms: ["invoice"], rank: false },
    });
    // A rarer term is something to rank by; the ubiquitous one only tops up, newest first.
    expect(planTextQuery(analyzeQuery("deploy code"), stats, 5000)).toEqual({
      primary: { terms: ["code"] },
      topUp: { terms: ["deploy"], rank: false },
    });
    // Below nine in ten chunks the terms still rank.
    expect(planTextQuery(analyzeQuery("invoice"), statistics(731, { invoice: 600 }), 5000).primary).toEqual({
      terms: ["invoice"],
    });
  });
});
