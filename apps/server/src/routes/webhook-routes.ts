import { type ChannelAdapter, hasWebhook } from "@almanac/core";
import type { FastifyInstance } from "fastify";
import { PUBLIC_ROUTE } from "../http/auth.js";

/**
 * Public platform webhooks, `POST /channels/{name}/webhook` for every adapter that takes them in its
 * configuration (no admin token: the platform signs its requests and the adapter verifies them).
 * Registered in their own encapsulated plugin so the raw body bytes reach the signature check untouched.
 */
export async function registerWebhookRoutes(
  app: FastifyInstance,
  adapters: readonly ChannelAdapter[],
): Promise<void> {
  const webhooks = adapters.filter(hasWebhook);
  if (webhooks.length === 0) return;
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    for (const adapter of webhooks) {
      scope.post(
        `/channels/${adapter.name}/webhook`,
        { ...PUBLIC_ROUTE, schema: { hide: true } },
        async (request, reply) => {
          const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
          const answer = await adapter.handleWebhook({ headers: request.headers, rawBody });
          return reply.status(answer.status).send(answer.body);
        },
      );
    }
  });
}
