import { createRequire } from "node:module";
import type * as Swagger from "@fastify/swagger";
import type { SwaggerOptions } from "@fastify/swagger";
import Fastify, { type FastifyInstance, type RouteOptions } from "fastify";
import { createLazySchemaCompilers } from "./lazy-schema-compilers.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The server's OpenAPI document, built on first use (`GET /api/openapi.json`). */
    openApiDocument(): Promise<unknown>;
  }
}

/**
 * The OpenAPI document of the server's routes, made by @fastify/swagger when it is first asked for rather than
 * at every start: loading the plugin and its YAML library (~90 modules) was ~35 ms of a start-up for a document
 * few runs read. The routes are recorded as they are declared (fastify's public `onRoute` hook); the first
 * request declares them again, schemas and configuration as given, on a throwaway fastify instance that carries
 * @fastify/swagger with the server's options, and keeps the document it makes. No request reaches that
 * instance. `openapi.e2e.test.ts` checks that the document lists every route of the route table.
 */
export function installOpenApiDocument(app: FastifyInstance, options: SwaggerOptions): void {
  const routes: RouteOptions[] = [];
  app.addHook("onRoute", (route) => {
    routes.push(route);
  });
  let document: Promise<unknown> | undefined;
  app.decorate("openApiDocument", () => {
    document ??= buildDocument(routes, options).catch((error: unknown) => {
      document = undefined;
      throw error;
    });
    return document;
  });
}

async function buildDocument(routes: readonly RouteOptions[], options: SwaggerOptions): Promise<unknown> {
  const swagger = createRequire(import.meta.url)("@fastify/swagger") as typeof Swagger.fastifySwagger;
  const described = Fastify({ schemaController: { compilersFactory: createLazySchemaCompilers() } });
  try {
    await described.register(swagger, options);
    for (const route of routes) {
      described.route({
        method: route.method,
        url: route.url,
        ...(route.schema === undefined ? {} : { schema: route.schema }),
        ...(route.config === undefined ? {} : { config: route.config }),
        // The HEAD routes fastify added to the server are among the recorded ones.
        exposeHeadRoute: false,
        handler: async () => null,
      });
    }
    await described.ready();
    return described.swagger();
  } finally {
    await described.close();
  }
}
