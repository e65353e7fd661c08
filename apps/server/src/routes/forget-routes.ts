import { UserError } from "@almanac/core";
import type { Memory } from "@almanac/memory";
import type { FastifyInstance } from "fastify";
import { z } from "zod";

const forgetBody = z.object({
  phrase: z.string().min(3).max(200),
  via: z.enum(["api", "console"]).default("api"),
});

/** `POST /api/memory/forget` and `GET /api/memory/forgotten`: the owner has a fact forgotten, and sees what was. */
export function registerForgetRoutes(app: FastifyInstance, memory: Memory): void {
  app.post(
    "/api/memory/forget",
    {
      schema: {
        tags: ["memory"],
        summary: 'Forget a fact: {"phrase": "…"} removes every line that mentions it',
      },
    },
    async (request) => {
      const body = forgetBody.safeParse(request.body);
      if (!body.success)
        throw new UserError(
          "request.invalid",
          'Send {"phrase": "…"}: a distinctive phrase of 3 to 200 characters.',
        );
      return memory.forget(body.data.phrase, body.data.via);
    },
  );
  app.get(
    "/api/memory/forgotten",
    { schema: { tags: ["memory"], summary: "What was asked to be forgotten" } },
    async () => ({ forgotten: memory.forgotten() }),
  );
}
