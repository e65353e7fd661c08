import type { AnalyzedQuery } from "./text-analysis.js";
import type { BackendQuery, TermStatistics } from "./types.js";

/** The text side of a search: one backend query, and a second only to top up a short first answer. */
export interface TextQueryPlan {
  readonly primary: Omit<BackendQuery, "limit" | "vector"> | undefined;
  /** Run when the primary query found fewer candidates than wanted. */
  readonly topUp?: Omit<BackendQuery, "limit" | "vector">;
}

/** A group whose terms are in more than this share of chunks barely narrows an intersection; it is left out. */
const unselectiveShare = 0.5;
/**
 * When every group is in at least this share of chunks, the query has nothing to rank by (each term's IDF is
 * ≈ 0): BM25 over all matches would cost time in proportion to the index and order them by term counts alone.
 */
const everywhereShare = 0.9;

/**
 * Chooses the terms and the kind of full-text query, keeping its cost bounded on large indexes.
 * BM25 ranking costs time in proportion to the chunks that match, so term groups (a concept and
 * its alternatives) are taken rarest first while their document frequencies add up to at most
 * `budget`; stop words and absent terms are left out. What is left out still counts in scoring.
 * When even the rarest group is too common, the query asks for chunks holding every selective
 * group (ranked when the intersection is expected to be small, newest first otherwise), topped up
 * by chunks holding the rarest group. A group in nearly every chunk is not ranked by: when every group is,
 * the newest chunks holding all of them are taken unranked (scoring still orders them); otherwise the rarer
 * groups are ranked and the newest chunks holding the rarest of those common groups top them up. Without statistics every term is sent as is.
 */
export function planTextQuery(
  query: AnalyzedQuery,
  statistics: TermStatistics,
  budget: number,
): TextQueryPlan {
  if (statistics.total === 0)
    return { primary: query.terms.length === 0 ? undefined : { terms: [...query.terms] } };
  const frequency = (term: string) => statistics.documents.get(term) ?? 0;
  const meaningful = query.concepts.filter((concept) => !concept.stopWord);
  const concepts = meaningful.length > 0 ? meaningful : query.concepts;
  const grouped = new Set(query.concepts.flatMap((concept) => concept.terms));
  const groups = [
    ...concepts.map((concept) => concept.terms.filter((term) => frequency(term) > 0)),
    ...query.terms.filter((term) => !grouped.has(term) && frequency(term) > 0).map((term) => [term]),
  ]
    .filter((group) => group.length > 0)
    .map((terms) => ({
      terms,
      documents: Math.max(...terms.map(frequency)),
      cost: terms.reduce((sum, term) => sum + frequency(term), 0),
    }))
    .sort((a, b) => a.documents - b.documents);
  const rarest = groups[0];
  if (rarest === undefined) return { primary: undefined };
  if (rarest.documents >= statistics.total * everywhereShare) {
    const everywhere = { terms: rarest.terms, rank: false };
    if (groups.length === 1) return { primary: everywhere };
    return {
      primary: {
        terms: groups.flatMap((group) => group.terms),
        allOf: groups.map((group) => group.terms),
        rank: false,
      },
      topUp: everywhere,
    };
  }

  // Groups in nearly every chunk (the last ones) add nothing to the ranking: they only top up.
  const commonest = groups.find((group) => group.documents >= statistics.total * everywhereShare);
  const taken: string[] = [];
  let cost = 0;
  for (const group of groups) {
    if (group === commonest || cost + group.cost > budget) break;
    taken.push(...group.terms);
    cost += group.cost;
  }
  if (taken.length > 0)
    return commonest === undefined
      ? { primary: { terms: taken } }
      : { primary: { terms: taken }, topUp: { terms: commonest.terms, rank: false } };

  const topUp = { terms: rarest.terms, rank: false };
  const selective = groups.filter((group) => group.documents <= statistics.total * unselectiveShare);
  if (selective.length < 2) return { primary: topUp };
  const expected = selective.reduce(
    (product, group) => (product * group.documents) / statistics.total,
    statistics.total,
  );
  return {
    primary: {
      terms: selective.flatMap((group) => group.terms),
      allOf: selective.map((group) => group.terms),
      rank: expected <= budget,
    },
    topUp,
  };
}
