import swagger from "@fastify/swagger";
import Fastify, { type FastifyInstance } from "fastify";
import { describe, expect, it } from "vitest";
import { installLazySwagger } from "./http-plugin.js";

const options = {
  openapi: { info: { title: "Test", version: "1.2.3" } },
  transform: ({ schema, url }: { schema: unknown; url: string }) => ({
    schema: schema as Record<string, unknown>,
    url: url.endsWith("*") ? `${url.slice(0, -1)}:path` : url,
  }),
};

/** The same routes in every shape the server has: plain, with schemas, hidden, a wildcard, a prefixed child scope. */
async function withRoutes(app: FastifyInstance): Promise<FastifyInstance> {
  app.get("/healthz", { schema: { tags: ["operations"], summary: "Liveness" } }, async () => ({}));
  app.post(
    "/items/:id",
    {
      schema: {
        tags: ["items"],
        params: { type: "object", properties: { id: { type: "integer" } } },
        body: { type: "object", required: ["name"], properties: { name: { type: "string" } } },
        response: { 200: { type: "object", properties: { id: { type: "integer" } } } },
      },
    },
    async () => ({ id: 1 }),
  );
  app.get("/files/*", { schema: { tags: ["files"] } }, async () => "");
  app.get("/secret", { schema: { hide: true } }, async () => "");
  await app.register(
    async (scope) => {
      scope.delete("/things/:name", { schema: { tags: ["things"], summary: "Delete" } }, async () => "");
    },
    { prefix: "/api" },
  );
  await app.ready();
  return app;
}

describe("installLazySwagger", () => {
  it("builds the same document as registering @fastify/swagger, in JSON and YAML", async () => {
    const eager = Fastify();
    await eager.register(swagger, options);
    const lazy = Fastify();
    installLazySwagger(lazy, options);
    await Promise.all([withRoutes(eager), withRoutes(lazy)]);
    const document = lazy.swagger();
    expect(document).toEqual(eager.swagger());
    expect(Object.keys(document.paths ?? {})).toEqual([
      "/healthz",
      "/items/{id}",
      "/files/{path}",
      "/api/things/{name}",
    ]);
    expect(lazy.swagger({ yaml: true })).toBe(eager.swagger({ yaml: true }));
    await Promise.all([eager.close(), lazy.close()]);
  });
});
