import { UserError } from "@almanac/core";
import type { Memory } from "@almanac/memory";
import type { FastifyInstance } from "fastify";
import { z } from "zod";

const searchQuery = z.object({
  q: z.string().min(1, "q (the query) is required").max(2000),
  maxResults: z.coerce.number().int().min(1).max(100).optional(),
  minScore: z.coerce.number().min(0).max(1).optional(),
});

/** Memory search and index routes under `/api` (bearer token required by the auth hook). */
export async function registerIndexRoutes(app: FastifyInstance, memory: Memory): Promise<void> {
  app.get(
    "/api/memory/search",
    { schema: { tags: ["memory"], summary: "Hybrid search over MEMORY.md and memory/**" } },
    async (request) => {
      const parsed = searchQuery.safeParse(request.query);
      if (!parsed.success) throw new UserError("request.invalid", z.prettifyError(parsed.error));
      const { q, maxResults, minScore } = parsed.data;
      return memory.search.search(q, {
        ...(maxResults === undefined ? {} : { maxResults }),
        ...(minScore === undefined ? {} : { minScore }),
      });
    },
  );

  app.get(
    "/api/memory/index",
    { schema: { tags: ["memory"], summary: "Index status: files, chunks, embeddings, last sync" } },
    async () => memory.indexStatus(),
  );

  app.post(
    "/api/memory/index/reindex",
    { schema: { tags: ["memory"], summary: "Rebuild the index from the Markdown" } },
    async (_request, reply) => {
      if (!memory.startReindex())
        throw new UserError(
          "memory.reindex_running",
          "A reindex is already running; follow it with GET /api/memory/index.",
        );
      return reply.status(202).send({ started: true, status: await memory.indexStatus() });
    },
  );
}
