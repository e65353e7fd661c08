import type { Consolidator } from "@almanac/consolidation";
import { UserError } from "@almanac/core";
import type { FastifyInstance } from "fastify";

/**
 * `POST /api/memory/consolidate` (a run now, `202` with its id) and `GET /api/memory/consolidation` (the schedule,
 * the next nightly run and the recent runs with their outcome and changes).
 */
export function registerConsolidationRoutes(
  app: FastifyInstance,
  consolidator: Consolidator | undefined,
): void {
  app.post(
    "/api/memory/consolidate",
    {
      schema: {
        tags: ["memory"],
        summary: "Consolidate MEMORY.md from the daily logs now (202 with the run's id)",
      },
    },
    async (_request, reply) => {
      if (consolidator === undefined) {
        throw new UserError(
          "consolidation.no_model",
          "Consolidation needs a model: set ALMANAC_MODEL_BASE_URL and ALMANAC_MODEL_NAME.",
        );
      }
      const run = await consolidator.request("request");
      return reply.status(202).send({ id: run.id, state: run.state });
    },
  );
  app.get(
    "/api/memory/consolidation",
    {
      schema: {
        tags: ["memory"],
        summary: "Consolidation: the schedule and the last runs with their changes",
      },
    },
    async () =>
      consolidator === undefined
        ? { enabled: false, schedule: null, nextRunAt: null, running: null, runs: [] }
        : { enabled: true, ...(await consolidator.status()) },
  );
}
