import { type Logger, UserError } from "@almanac/core";
import type { QdrantClient } from "@qdrant/js-client-rest";
import { collectionSchema, DENSE, TEXT } from "./qdrant-payload.js";

// The set-up phase of the Qdrant backend: create the collection with its vectors and payload indexes,
// or check that an existing one is ours and of the configured size.

/** Where and what the Qdrant backend stores: the collection, its dense vector size, and the log to tell. */
interface QdrantCollectionTarget {
  readonly collection: string;
  readonly dimensions: number;
  readonly logger: Logger;
}

/**
 * Creates the collection (named dense vector, sparse text vector with `modifier: "idf"`, payload indexes),
 * or checks an existing one: refused as `index.incompatible_collection` or `index.dimensions_mismatch`.
 * Client errors are thrown as they are; the caller maps them.
 */
export async function setUpCollection(client: QdrantClient, target: QdrantCollectionTarget): Promise<void> {
  const { collection, dimensions, logger } = target;
  const { exists } = await client.collectionExists(collection);
  if (!exists) {
    try {
      await client.createCollection(collection, {
        vectors: { [DENSE]: { size: dimensions, distance: "Cosine" } },
        sparse_vectors: { [TEXT]: { modifier: "idf" } },
      });
      for (const [field, schema] of [
        ["path", "keyword"],
        ["source", "keyword"],
        ["hash", "keyword"],
        ["embedding_model", "keyword"],
        ["chunk_index", "integer"],
      ] as const) {
        await client.createPayloadIndex(collection, {
          field_name: field,
          field_schema: schema,
          wait: true,
        });
      }
      logger.info({ dimensions }, "created Qdrant collection");
      return;
    } catch (error) {
      // Another process may have created it meanwhile: then check it like an existing one.
      if (!(await client.collectionExists(collection)).exists) throw error;
    }
  }
  await checkDimensions(client, collection, dimensions);
}

async function checkDimensions(client: QdrantClient, collection: string, dimensions: number): Promise<void> {
  const info = collectionSchema.safeParse(await client.getCollection(collection));
  const size = info.success ? info.data.config.params.vectors?.[DENSE]?.size : undefined;
  if (size === undefined) {
    throw new UserError(
      "index.incompatible_collection",
      `Qdrant collection "${collection}" has no "${DENSE}" vector: it was not created by Almanac. Use another collection name.`,
    );
  }
  if (size !== dimensions) {
    throw new UserError(
      "index.dimensions_mismatch",
      `Qdrant collection "${collection}" holds ${size}-dimensional vectors but ${dimensions} were configured (was the embedding model changed?). ` +
        `Set the dimensions back to ${size}, or use a new collection name (the index is rebuilt from the Markdown files).`,
    );
  }
}
