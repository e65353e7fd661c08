import type { FastifyInstance } from "fastify";

/** Memory search and index routes (work in progress: registered once the memory index is wired). */
export async function registerIndexRoutes(_app: FastifyInstance): Promise<void> {}
