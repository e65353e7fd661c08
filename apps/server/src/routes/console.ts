import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AttachmentIntake } from "../attachments/attachment-intake.js";
import { markRoutesPublic } from "../http/auth.js";
import type { SessionManager } from "../runtime/session-manager.js";
import { registerConsoleChat } from "./console-chat.js";

/** What the web console's routes need. */
export interface ConsoleDependencies {
  readonly sessions: SessionManager;
  /** Takes files sent with a chat message into the conversation's inbox; without it the chat route takes none. */
  readonly attachments?: AttachmentIntake;
  /** The built console (`vite build` output); defaults to `apps/console/dist` of this checkout. */
  readonly distDir?: string;
}

/** Where `pnpm build:console` writes the console, relative to this file. */
export const DEFAULT_CONSOLE_DIST = fileURLToPath(new URL("../../../console/dist", import.meta.url));

/** Paths the SPA fallback never answers: they belong to the API, operations and webhooks. */
const RESERVED_PREFIXES = ["/api", "/v1", "/healthz", "/readyz", "/metrics", "/channels", "/assets"];

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Almanac</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem">
<h1>Almanac is running</h1>
<p>The web console is not built yet. Build it from the repository root with:</p>
<pre><code>pnpm build:console</code></pre>
<p>(or <code>pnpm --filter @almanac/console build</code>), then reload this page.
The HTTP API under <code>/api</code> and <code>/v1</code> works without it.</p>
</body></html>
`;

function isReserved(path: string): boolean {
  return RESERVED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/**
 * The web console: its built files at `/` (any other non-API GET answers `index.html`, so the SPA's own
 * paths survive a reload) and its chat route. A missing build does not stop the server: `/` then says how
 * to build it. The page and its assets are public (they hold no data); the chat route needs the token.
 *
 * Caching: `index.html` is `no-cache` (revalidated on every load, so an upgrade takes effect at once), the
 * hashed bundles under `/assets/` are `immutable` for a year (a new build gives them new names).
 */
export async function registerConsole(app: FastifyInstance, deps: ConsoleDependencies): Promise<void> {
  const distDir = deps.distDir ?? DEFAULT_CONSOLE_DIST;
  registerConsoleChat(app, deps.sessions, deps.attachments);

  const serveIndex = async (request: FastifyRequest, reply: FastifyReply) => {
    // Decided on the path the router decoded, never on the raw URL.
    const rest = (request.params as { "*"?: unknown })["*"];
    const path = `/${typeof rest === "string" ? rest : ""}`;
    // Unknown API paths and missing files (anything with an extension) go to the not-found handler, which
    // guards them like any protected route (401 without the token, else 404).
    const lastSegment = path.slice(path.lastIndexOf("/") + 1);
    if (isReserved(path) || lastSegment.includes(".")) return reply.callNotFound();
    reply.header("cache-control", "no-cache");
    if (!existsSync(join(distDir, "index.html"))) {
      return reply.type("text/html; charset=utf-8").send(NOT_BUILT_PAGE);
    }
    return reply.sendFile("index.html", distDir, { cacheControl: false });
  };
  // Every route of this scope (the files, the page) is public; the chat route above is not.
  await app.register(async (scope) => {
    markRoutesPublic(scope);
    await scope.register(fastifyStatic, {
      root: join(distDir, "assets"),
      prefix: "/assets/",
      suppressWarning: true,
      immutable: true,
      maxAge: "365d",
    });
    scope.get("/", { schema: { hide: true } }, serveIndex);
    scope.get("/*", { schema: { hide: true } }, serveIndex);
  });
}
