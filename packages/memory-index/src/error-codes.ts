import { type CodesOf, defineErrorCodes } from "@almanac/core";

/** Every code the memory-index package throws. */
export const memoryIndexErrorCodes = defineErrorCodes({
  "index.open_failed": { category: "user" },
  /** The configured vector size does not match the index's or the embedder's. */
  "index.dimensions_mismatch": { category: "user" },
  /** A Qdrant collection of another shape under the configured name. */
  "index.incompatible_collection": { category: "user" },
  /** The vector store did not answer (Qdrant down): search answers from full text meanwhile. */
  "index.unavailable": { category: "provider" },
  "index.request_failed": { category: "provider" },
  "index.worker_exited": { category: "internal" },
  "index.worker_misused": { category: "internal" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof memoryIndexErrorCodes> {}
}
