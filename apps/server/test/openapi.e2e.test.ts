import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RouteEntry } from "../src/http/auth.js";
import { startTestServer, type TestServer } from "./test-server.js";

/** The web console's own files: a page and its assets, not part of the HTTP API. */
const CONSOLE_FILES = new Set(["/", "/*", "/assets/*"]);

/** What the test reads of the OpenAPI document. */
interface OpenApiDocument {
  readonly paths: Record<
    string,
    Record<string, { security?: unknown[]; parameters?: Array<{ in: string; name: string }> }>
  >;
}

/** A route's URL the way OpenAPI spells it: `:name` → `{name}`, a trailing wildcard → `{path}`. */
function openApiPath(url: string): string {
  return url.replace(/:(\w+)/g, "{$1}").replace(/\*$/, "{path}");
}

let running: TestServer;
let document: OpenApiDocument;
let routes: readonly RouteEntry[];
beforeAll(async () => {
  running = await startTestServer();
  document = (await (await running.api("/api/openapi.json")).json()) as OpenApiDocument;
  routes = running.server.app.routeTable().filter(
    // fastify adds a HEAD route to every GET; OpenAPI lists the GET.
    (route) => route.method !== "HEAD" && !CONSOLE_FILES.has(route.url),
  );
}, 30_000);
afterAll(async () => {
  await running?.close();
});

describe("the OpenAPI document", () => {
  it("lists every API route of the route table, health, readiness and metrics included", () => {
    const urls = routes.map((route) => route.url);
    expect(urls).toEqual(expect.arrayContaining(["/healthz", "/readyz", "/metrics", "/api/memory/files/*"]));
    const missing = routes
      .filter((route) => document.paths[openApiPath(route.url)]?.[route.method.toLowerCase()] === undefined)
      .map((route) => `${route.method} ${route.url}`);
    expect(missing).toEqual([]);
  });

  it("marks public routes as needing no token and every other route as needing the bearer token", () => {
    for (const route of routes) {
      const operation = document.paths[openApiPath(route.url)]?.[route.method.toLowerCase()];
      if (route.public) expect(operation?.security, route.url).toEqual([]);
      // No operation-level override: the document-wide `security: [{ bearer: [] }]` applies.
      else expect(operation?.security, route.url).toBeUndefined();
    }
    expect(routes.filter((route) => route.public).map((route) => route.url)).toEqual(
      expect.arrayContaining(["/healthz", "/readyz"]),
    );
    expect(routes.find((route) => route.url === "/metrics")?.public).toBe(false);
  });

  it("names every path parameter, and no path has a {*}", () => {
    for (const [path, operations] of Object.entries(document.paths)) {
      expect(path).not.toContain("{*}");
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
      for (const operation of Object.values(operations)) {
        const declared = (operation.parameters ?? [])
          .filter((parameter) => parameter.in === "path")
          .map((parameter) => parameter.name);
        expect(declared.sort(), path).toEqual([...names].sort());
      }
    }
    expect(Object.keys(document.paths)).toContain("/api/memory/files/{path}");
  });
});
