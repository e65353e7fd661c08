import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { installBearerAuth } from "../http/auth.js";
import { installErrorHandler } from "../http/http-errors.js";
import type { SessionManager } from "../runtime/session-manager.js";
import { registerConsole } from "./console.js";

let app: FastifyInstance | undefined;
let dist: string | undefined;
afterEach(async () => {
  await app?.close();
  if (dist) await rm(dist, { recursive: true, force: true });
  app = undefined;
  dist = undefined;
});

/** A console build like Vite's: `index.html` pointing at a content-hashed bundle. */
async function fakeBuild(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "almanac-console-"));
  await mkdir(join(root, "assets"));
  await writeFile(
    join(root, "index.html"),
    '<!doctype html><script src="/assets/index-Ab12Cd34.js"></script>',
  );
  await writeFile(join(root, "assets", "index-Ab12Cd34.js"), "console.log('console');");
  return root;
}

async function consoleApp(distDir: string): Promise<FastifyInstance> {
  const instance = Fastify();
  const auth = installBearerAuth(instance, { token: "console-test-token" });
  installErrorHandler(instance, { notFoundGuard: auth.requireToken });
  // The chat route is registered but never called here.
  await registerConsole(instance, { sessions: {} as SessionManager, distDir });
  return instance;
}

describe("console caching", () => {
  it("serves index.html as no-cache and hashed assets as immutable for a year, without a token", async () => {
    dist = await fakeBuild();
    app = await consoleApp(dist);
    for (const url of ["/", "/conversations/abc"]) {
      const page = await app.inject({ method: "GET", url });
      expect(page.statusCode, url).toBe(200);
      expect(page.headers["content-type"]).toContain("text/html");
      expect(page.headers["cache-control"], url).toBe("no-cache");
      expect(page.body).toContain("index-Ab12Cd34.js");
    }
    const asset = await app.inject({ method: "GET", url: "/assets/index-Ab12Cd34.js" });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
  });

  it("keeps the chat route and unknown API paths behind the token", async () => {
    dist = await fakeBuild();
    app = await consoleApp(dist);
    const chat = await app.inject({ method: "POST", url: "/api/console/chat", payload: {} });
    expect(chat.statusCode).toBe(401);
    for (const url of ["/api/console/nope", "/assets/missing-0000.js", "/v1/x"]) {
      const response = await app.inject({ method: "GET", url });
      expect(response.statusCode, url).toBe(401);
      const withToken = await app.inject({
        method: "GET",
        url,
        headers: { authorization: "Bearer console-test-token" },
      });
      expect(withToken.statusCode, url).toBe(404);
    }
  });
});
