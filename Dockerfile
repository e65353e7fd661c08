# syntax=docker/dockerfile:1
# Almanac: multi-stage build on Node 24 (slim). The build stage compiles the native modules (better-sqlite3),
# builds the web console (Vite) and the server (Rolldown bundle in apps/server/dist, see docs/build.md) and
# assembles /runtime: the bundle, the console, the rank tables and the server's production dependencies, nothing
# else (no TypeScript, no tests, no sources). The runtime stage runs that as the non-root `node` user (uid 1000),
# which may write /data and nothing else. Recipes, the stop timeout and the smoke test: docs/docker.md.

# The base image, pinned to an exact release. To bump it: pick the new 24.x.y from the Node release list, check
# `docker manifest inspect node:<version>-trixie-slim` answers, change the default here, and run
# scripts/docker/smoke.ts. To pin the digest too, append `@sha256:…` from `docker buildx imagetools inspect`.
ARG NODE_IMAGE=node:24.22.3-trixie-slim

FROM ${NODE_IMAGE} AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
  && rm -rf /var/lib/apt/lists/*
# Exactly package.json's "packageManager" (apps/server/test/docker-build-context.test.ts checks the two agree).
ARG PNPM_VERSION=10.34.9
# For machines behind a TLS-intercepting proxy and without Node's headers for download: a CA bundle mounted
# into the build (podman build -v) and the image's own headers for node-gyp (npm_config_nodedir=/usr/local).
# Unset by default; the image does not depend on them (scripts/docker/smoke.ts passes them when asked to).
ARG NODE_EXTRA_CA_CERTS
ARG npm_config_nodedir
RUN npm install -g "pnpm@${PNPM_VERSION}"
WORKDIR /app
# Every package of the lockfile into pnpm's store, better-sqlite3 compiled there too (pnpm keeps the result): the
# network and the slow part, cached until the lockfile changes (a source change then rebuilds in about 30 s).
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
RUN pnpm fetch
# What the builds read (.dockerignore leaves out tests, fixtures, node_modules and dist), then the build itself.
COPY package.json tsconfig.base.json ./
COPY scripts/docker/build-app.sh ./scripts/docker/
COPY apps ./apps
COPY packages ./packages
RUN sh scripts/docker/build-app.sh /runtime

FROM ${NODE_IMAGE} AS runtime
# ALMANAC_SHUTDOWN_DEADLINE_MS: running turns get 8 s after SIGTERM to finish, so that the whole stop (turns,
# then flushing sessions, jobs and the index) fits in the 10 s `docker stop` and `podman stop` wait before
# SIGKILL. A longer deadline needs a longer stop timeout (`docker run --stop-timeout`, compose's
# stop_grace_period), at least 2 s above it.
ENV NODE_ENV=production \
    ALMANAC_HOME=/data \
    ALMANAC_HOST=0.0.0.0 \
    ALMANAC_PORT=8787 \
    ALMANAC_SHUTDOWN_DEADLINE_MS=8000
WORKDIR /app
# Owned by root: the runtime user can read and run the code but not change it.
COPY --from=build /runtime /app
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
