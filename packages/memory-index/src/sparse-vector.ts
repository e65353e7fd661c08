/** A sparse vector as Qdrant takes it: sorted unique dimension ids and their weights. */
export interface SparseVector {
  readonly indices: number[];
  readonly values: number[];
}

/** BM25's term-frequency saturation and length normalisation (Qdrant applies the IDF side itself). */
const k1 = 1.2;
const b = 0.75;

/**
 * The dimension of a term: 32-bit FNV-1a of its UTF-16 code units. Collisions are rare at memory
 * sizes and only merge two terms' weights; the hash needs no vocabulary shared between processes.
 */
export function termDimension(term: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < term.length; index += 1) {
    hash ^= term.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

function counts(terms: readonly string[]): Map<number, number> {
  const byDimension = new Map<number, number>();
  for (const term of terms) {
    const dimension = termDimension(term);
    byDimension.set(dimension, (byDimension.get(dimension) ?? 0) + 1);
  }
  return byDimension;
}

function sorted(byDimension: ReadonlyMap<number, number>): SparseVector {
  const indices = [...byDimension.keys()].sort((x, y) => x - y);
  return { indices, values: indices.map((index) => byDimension.get(index)!) };
}

/**
 * A chunk's analysed terms as a sparse vector of BM25 term weights, to pair with a collection
 * whose sparse vector has `modifier: "idf"` (so scores come out as BM25).
 */
export function documentSparseVector(terms: readonly string[], averageLength: number): SparseVector {
  const byDimension = counts(terms);
  const lengthNorm = 1 - b + (b * terms.length) / Math.max(1, averageLength);
  for (const [dimension, frequency] of byDimension) {
    byDimension.set(dimension, (frequency * (k1 + 1)) / (frequency + k1 * lengthNorm));
  }
  return sorted(byDimension);
}

/** A query's terms as a sparse vector: weight 1 per distinct term. */
export function querySparseVector(terms: readonly string[]): SparseVector {
  const byDimension = new Map<number, number>();
  for (const dimension of counts(terms).keys()) byDimension.set(dimension, 1);
  return sorted(byDimension);
}
