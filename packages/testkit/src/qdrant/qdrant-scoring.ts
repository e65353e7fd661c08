// Scores as Qdrant computes them: dense distances (Cosine vectors are normalised on upsert, as
// Qdrant stores them), sparse dot products with the optional IDF modifier, and RRF fusion.

/** Qdrant's dense distance functions. */
export type Distance = "Cosine" | "Dot" | "Euclid" | "Manhattan";

/** A sparse vector as Qdrant takes it. */
export interface SparseVector {
  readonly indices: readonly number[];
  readonly values: readonly number[];
}

/** Unit length copy of a vector (zero vectors stay zero). */
export function normalize(vector: readonly number[]): number[] {
  const length = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return length === 0 ? [...vector] : vector.map((value) => value / length);
}

/** Whether a higher score is better for this distance (Euclid and Manhattan answer distances). */
export function higherIsBetter(distance: Distance): boolean {
  return distance === "Cosine" || distance === "Dot";
}

/** The score of a stored vector for a query, in Qdrant's terms for the distance. */
export function denseScore(distance: Distance, query: readonly number[], stored: readonly number[]): number {
  switch (distance) {
    case "Cosine": {
      const unit = normalize(query);
      return unit.reduce((sum, value, index) => sum + value * (stored[index] ?? 0), 0);
    }
    case "Dot":
      return query.reduce((sum, value, index) => sum + value * (stored[index] ?? 0), 0);
    case "Euclid":
      return Math.sqrt(query.reduce((sum, value, index) => sum + (value - (stored[index] ?? 0)) ** 2, 0));
    case "Manhattan":
      return query.reduce((sum, value, index) => sum + Math.abs(value - (stored[index] ?? 0)), 0);
  }
}

/**
 * Inverse document frequency as Qdrant's `modifier: "idf"` applies it to query weights:
 * ln((N - n + 0.5) / (n + 0.5) + 1), N points with this sparse vector, n of them holding the index.
 */
export function idf(points: number, holding: number): number {
  return Math.log((points - holding + 0.5) / (holding + 0.5) + 1);
}

/** Sparse dot product; undefined when the vectors share no index (such points are not candidates). */
export function sparseScore(
  query: SparseVector,
  stored: SparseVector,
  weightOf: (index: number) => number,
): number | undefined {
  const storedByIndex = new Map(
    stored.indices.map((index, position) => [index, stored.values[position] ?? 0]),
  );
  let score = 0;
  let shared = false;
  query.indices.forEach((index, position) => {
    const value = storedByIndex.get(index);
    if (value === undefined) return;
    shared = true;
    score += (query.values[position] ?? 0) * value * weightOf(index);
  });
  return shared ? score : undefined;
}

/** Reciprocal rank fusion as Qdrant's default: each list adds 1 / (position + k), position from 0, k = 2. */
export function reciprocalRankFusion<T>(
  rankings: readonly (readonly T[])[],
  keyOf: (item: T) => string,
  k = 2,
): { readonly item: T; readonly score: number }[] {
  const fused = new Map<string, { item: T; score: number }>();
  for (const ranking of rankings) {
    ranking.forEach((item, position) => {
      const key = keyOf(item);
      const entry = fused.get(key) ?? { item, score: 0 };
      entry.score += 1 / (position + k);
      fused.set(key, entry);
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score);
}
