import { type Logger, UserError } from "@almanac/core";
import type Database from "better-sqlite3";
import { createVectorTable, readMeta } from "./sqlite-schema.js";

/** The `index.dimensions_mismatch` error: `file` holds `stored`-dimensional vectors, `wanted` were given. */
export function dimensionsMismatch(file: string, stored: number, wanted: number): UserError {
  return new UserError(
    "index.dimensions_mismatch",
    `The memory index "${file}" holds ${stored}-dimensional vectors but ${wanted} were given (was the embedding model changed?). ` +
      `Set the embedding dimensions back to ${stored}, enable rebuildOnDimensionsMismatch, or delete "${file}": it is rebuilt from the Markdown files.`,
  );
}

/** The vector size stored in `meta`, or undefined while the index has no vector table. */
export function readDimensions(db: Database.Database): number | undefined {
  const value = readMeta(db, "dimensions");
  return value === undefined ? undefined : Number(value);
}

/** What {@link settleDimensions} needs of the index's options. */
export interface DimensionsAtOpen {
  /** The database file, named in the error. */
  readonly path: string;
  /** The configured vector size, if any. */
  readonly dimensions?: number;
  readonly rebuildOnDimensionsMismatch?: boolean;
}

/**
 * The vector size of a freshly opened index, once the stored size agrees with the configured one: a different
 * stored size closes `db` and throws {@link dimensionsMismatch}, or (`rebuildOnDimensionsMismatch`) drops the
 * vectors; a configured size creates the vector table when there is none.
 */
export function settleDimensions(
  db: Database.Database,
  options: DimensionsAtOpen,
  logger: Logger,
): number | undefined {
  let dimensions = readDimensions(db);
  if (dimensions !== undefined && options.dimensions !== undefined && dimensions !== options.dimensions) {
    if (options.rebuildOnDimensionsMismatch !== true) {
      db.close();
      throw dimensionsMismatch(options.path, dimensions, options.dimensions);
    }
    logger.warn(
      { stored: dimensions, configured: options.dimensions },
      "vector size changed; dropping stored vectors",
    );
    dropVectors(db);
    dimensions = readDimensions(db);
  }
  if (dimensions === undefined && options.dimensions !== undefined) {
    createVectorTable(db, options.dimensions);
    dimensions = readDimensions(db);
  }
  return dimensions;
}

/** Drops the vector table and marks every chunk pending (chunks stay searchable as text). */
export function dropVectors(db: Database.Database): void {
  db.transaction(() => {
    db.exec("DROP TABLE IF EXISTS chunks_vec; UPDATE chunks SET embedded = 0;");
    db.prepare("DELETE FROM meta WHERE key IN ('dimensions', 'vector_model')").run();
  })();
}
