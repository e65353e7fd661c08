# syntax=docker/dockerfile:1
# Almanac: multi-stage build on the current Node LTS (slim). The build stage compiles native modules
# (better-sqlite3), builds the web console (Vite) and the server (Rolldown bundle in apps/server/dist, see
# docs/build.md), then drops every development dependency; the runtime stage runs the compiled JavaScript (no
# TypeScript loader) as the non-root `node` user with all state in the /data volume.

FROM node:24-slim AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
  && rm -rf /var/lib/apt/lists/*
RUN npm install -g pnpm@10
WORKDIR /app
COPY pnpm-workspace.yaml pnpm-lock.yaml package.json ./
COPY scripts ./scripts
COPY apps ./apps
COPY packages ./packages
# Everything first (the builds need Vite and Rolldown), then a fresh production-only install from the store
# (`install --prod` over the full tree would leave the dev packages in node_modules/.pnpm: 359 MB instead of
# 194 MB). The bundle inlines the workspace packages: at run time only apps/server's dependencies load.
RUN pnpm install --frozen-lockfile \
  && pnpm run build \
  && rm -rf node_modules apps/*/node_modules packages/*/node_modules \
  && pnpm install --prod --frozen-lockfile --offline

FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    ALMANAC_HOME=/data \
    ALMANAC_HOST=0.0.0.0 \
    ALMANAC_PORT=8787
WORKDIR /app
COPY --from=build --chown=node:node /app /app
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ALMANAC_PORT || 8787) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM lets running turns finish (ALMANAC_SHUTDOWN_DEADLINE_MS) and flushes state before exit.
STOPSIGNAL SIGTERM
# The build directly: source maps turn stack traces back into the TypeScript files' lines.
CMD ["node", "--enable-source-maps", "apps/server/dist/main.js", "start"]
