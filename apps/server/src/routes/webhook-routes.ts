import type { FeishuAdapter } from "@almanac/channels-feishu";
import type { FastifyInstance } from "fastify";
import { PUBLIC_ROUTE } from "../http/auth.js";

/**
 * Public platform webhooks (no admin token: the platform signs its requests and the adapter verifies them).
 * Registered in their own encapsulated plugin so the raw body bytes reach the signature check untouched.
 */
export async function registerWebhookRoutes(
  app: FastifyInstance,
  webhooks: { readonly feishu?: FeishuAdapter },
): Promise<void> {
  const feishu = webhooks.feishu;
  if (!feishu) return;
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    scope.post(
      "/channels/feishu/webhook",
      { ...PUBLIC_ROUTE, schema: { hide: true } },
      async (request, reply) => {
        const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const answer = await feishu.handleWebhook({ headers: request.headers, rawBody });
        return reply.status(answer.status).send(answer.body);
      },
    );
  });
}
