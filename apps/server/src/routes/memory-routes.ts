import { UserError } from "@almanac/core";
import type { Memory } from "@almanac/memory";
import type { FastifyInstance } from "fastify";
import { z } from "zod";

const writeBody = z.object({
  content: z.string(),
  expectedHash: z.string().nullable().optional(),
  allowShrink: z.boolean().optional(),
});

function pathParam(params: unknown): string {
  const value = (params as Record<string, unknown> | undefined)?.["*"];
  if (typeof value !== "string" || value === "")
    throw new UserError(
      "request.invalid",
      "A memory file path is required, e.g. MEMORY.md or memory/2026-12-02.md.",
    );
  return value;
}

/** Memory files and the summarizer queue under `/api` (bearer token required by the auth hook). */
export function registerMemoryRoutes(app: FastifyInstance, memory: Memory): void {
  app.get(
    "/api/memory/files",
    { schema: { tags: ["memory"], summary: "MEMORY.md and the daily logs" } },
    async () => ({
      files: await memory.store.list(),
    }),
  );

  app.get(
    "/api/memory/files/*",
    { schema: { tags: ["memory"], summary: "Read a memory file (content and hash)" } },
    async (request) => memory.store.read(pathParam(request.params)),
  );

  app.put(
    "/api/memory/files/*",
    {
      schema: {
        tags: ["memory"],
        summary: "Write a memory file (atomic, backed up, shrink-guarded, optimistic via expectedHash)",
      },
    },
    async (request) => {
      const body = writeBody.safeParse(request.body);
      if (!body.success)
        throw new UserError(
          "request.invalid",
          `Body must be {content, expectedHash?, allowShrink?}: ${z.prettifyError(body.error)}`,
        );
      const { content, expectedHash, allowShrink } = body.data;
      return memory.store.write(pathParam(request.params), content, {
        ...(expectedHash === undefined ? {} : { expectedHash }),
        ...(allowShrink === undefined ? {} : { allowShrink }),
      });
    },
  );

  app.get(
    "/api/summarizer/jobs",
    { schema: { tags: ["memory"], summary: "Summarizer jobs: pending, running, parked, done" } },
    async () => {
      if (!memory.queue)
        return { enabled: false, stats: { pending: 0, running: 0, parked: 0, done: 0 }, jobs: [] };
      return { enabled: true, stats: await memory.queue.stats(), jobs: await memory.queue.list() };
    },
  );

  app.post(
    "/api/summarizer/jobs/:id/retry",
    { schema: { tags: ["memory"], summary: "Queue a parked job again" } },
    async (request) => {
      if (!memory.queue)
        throw new UserError(
          "model.not_configured",
          "The summarizer needs a model; set ALMANAC_MODEL_BASE_URL and ALMANAC_MODEL_NAME.",
        );
      const id = (request.params as { id?: unknown }).id;
      if (typeof id !== "string") throw new UserError("request.invalid", "A job id is required.");
      return memory.queue.retry(id);
    },
  );
}
