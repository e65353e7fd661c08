/**
 * Puts the rows of a `SELECT rowid, score …` statement in raw mode (arrays) into `scores`, each checked field by
 * field: every search reads its full-text candidates this way, and a schema parse per row cost more than the
 * search itself.
 */
export function addScoreRows(rows: readonly unknown[], scores: Map<number, number>): Map<number, number> {
  for (const row of rows) {
    if (!Array.isArray(row) || row.length !== 2 || typeof row[0] !== "number" || typeof row[1] !== "number")
      throw new TypeError(`Unexpected score row: ${JSON.stringify(row).slice(0, 200)}`);
    scores.set(row[0], row[1]);
  }
  return scores;
}
