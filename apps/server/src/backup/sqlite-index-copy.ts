import Database from "better-sqlite3";

/**
 * Copies the SQLite memory index through SQLite's online backup API, from a connection of its own: a
 * consistent copy of the committed database (its WAL folded in) while the server keeps writing. All pages are
 * copied in one step, holding one read transaction: copied in small steps, a write by the server's connection
 * would restart the copy, and a long indexing run could restart it forever. A step over the year corpus's
 * index takes a few milliseconds (docs/backup.md).
 *
 * Imported on demand by the archive writer: `almanac backup verify` and `restore` never load SQLite.
 */
export async function copySqliteIndex(source: string, destination: string): Promise<void> {
  const database = new Database(source, { fileMustExist: true });
  try {
    await database.backup(destination, { progress: () => 0x7fffffff });
  } finally {
    database.close();
  }
}
