# syntax=docker/dockerfile:1
# Almanac: multi-stage build on the current Node LTS (slim). The build stage compiles native modules
# (better-sqlite3) and installs production dependencies only; the runtime stage runs as the non-root
# `node` user with all state in the /data volume.

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
# Everything first (the console's build needs Vite), then drop what production does not use.
RUN pnpm install --frozen-lockfile \
  && pnpm run build:console \
  && pnpm install --prod --frozen-lockfile --config.confirmModulesPurge=false

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
CMD ["node", "apps/server/bin/almanac.js", "start"]
