import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import { STOP_MARGIN_MS } from "../../../../scripts/docker/smoke.js";
import { loadConfig } from "./load-config.js";
import { listSettings } from "./settings.js";

const root = fileURLToPath(new URL("../../../../", import.meta.url));
const composeSchema = z.object({
  services: z.record(
    z.string(),
    z.object({
      image: z.string().optional(),
      profiles: z.array(z.string()).optional(),
      env_file: z.unknown().optional(),
      environment: z.record(z.string(), z.string()).optional(),
      ports: z.array(z.string()).optional(),
      stop_grace_period: z.string().optional(),
      depends_on: z.record(z.string(), z.object({ condition: z.string() })).optional(),
      healthcheck: z.object({ test: z.unknown() }).optional(),
      volumes: z.array(z.string()).optional(),
      expose: z.array(z.string()).optional(),
    }),
  ),
  volumes: z.record(z.string(), z.unknown()),
});
const clientPackageSchema = z.object({ version: z.string() });

const composeText = readFileSync(`${root}docker-compose.yml`, "utf8");
const compose = composeSchema.parse(parse(composeText));
const knownKeys = new Set(listSettings().map((setting) => setting.env));
const dockerfile = readFileSync(`${root}Dockerfile`, "utf8");

/** The value the Dockerfile's runtime stage gives a variable with ENV (`ENV A=1 \\ B=2`). */
function imageDefault(name: string): string | undefined {
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  return new RegExp(`\\b${name}=(\\S+)`).exec(runtime)?.[1];
}

/** Every variable the compose file interpolates (`${NAME}`, `${NAME:-default}`, `${NAME-default}`). */
function interpolatedVariables(): Set<string> {
  // From the parsed file: the comments' examples are no variables.
  const values = JSON.stringify(parse(composeText));
  return new Set([...values.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => match[1] ?? ""));
}

/** Milliseconds of a Compose duration such as `30s`, `1m30s` or `1500ms`. */
function durationMs(duration: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  const parts = [...duration.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|m|s)/g)];
  expect(parts.map((part) => part[0]).join(""), `duration ${duration}`).toBe(duration);
  return parts.reduce((total, part) => total + Number(part[1]) * (units[part[2] ?? ""] ?? Number.NaN), 0);
}

/**
 * A compose environment value as Compose interpolates it from `.env` (or the shell): `${NAME:-default}` is the
 * variable's value when it is set and not empty, `default` otherwise.
 */
function interpolate(value: string, variables: Readonly<Record<string, string>> = {}): string {
  return value.replace(
    /\$\{([A-Za-z0-9_]+)(?::-([^}]*))?\}/g,
    (_match, name: string, fallback: string | undefined) => variables[name] || (fallback ?? ""),
  );
}

/** `major.minor` of a `vX.Y.Z` / `X.Y.Z` version, or undefined when the text is not one. */
function majorMinor(version: string): string | undefined {
  return /^v?(\d+)\.(\d+)\.\d+$/.exec(version)?.slice(1, 3).join(".");
}

/** The installed `@qdrant/js-client-rest` version, as the package that talks to Qdrant resolves it. */
function installedQdrantClientVersion(packageDirectory: string): string {
  const manifest = `${root}${packageDirectory}/node_modules/@qdrant/js-client-rest/package.json`;
  return clientPackageSchema.parse(JSON.parse(readFileSync(manifest, "utf8"))).version;
}

/** The `.env` lines between the ollama-env markers of docs/docker.md, as key → value. */
function documentedOllamaEnvironment(): Map<string, string> {
  const docs = readFileSync(`${root}docs/docker.md`, "utf8");
  const block = /<!-- ollama-env:start[^>]*-->([\s\S]*?)<!-- ollama-env:end -->/.exec(docs)?.[1] ?? "";
  const entries = [...block.matchAll(/^\s*([A-Z][A-Z0-9_]*)=(\S+)\s*$/gm)];
  return new Map(entries.map((match) => [match[1] ?? "", match[2] ?? ""]));
}

describe("docker-compose.yml", () => {
  it("sets only environment keys the configuration schema knows, in every service", () => {
    const almanacKeys = Object.keys(compose.services.almanac?.environment ?? {});
    expect(almanacKeys.length).toBeGreaterThan(0);
    for (const [name, service] of Object.entries(compose.services)) {
      for (const key of Object.keys(service.environment ?? {})) {
        // Other services' own variables (QDRANT__*, OLLAMA_*) are theirs; an ALMANAC_* key anywhere must exist.
        if (name !== "almanac" && !key.startsWith("ALMANAC_")) continue;
        expect(knownKeys, `${name}: ${key} is not a configuration key`).toContain(key);
      }
    }
  });

  it("reads .env with the short env_file form, which every Compose v2 and podman-compose accept", () => {
    // The long form (`- path: .env` / `required: false`) needs Compose v2.24 and is refused by podman-compose.
    expect(compose.services.almanac?.env_file).toBe(".env");
  });

  it("overrides no value .env sets: every Almanac variable it sets is its own interpolation with a default", () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        if (!key.startsWith("ALMANAC_")) continue;
        expect(value, `${name}: ${key}`).toMatch(new RegExp(`^\\$\\{${key}(:?-[^}]*)?\\}$`));
      }
    }
    // Where the server listens inside the container is the image's (ALMANAC_PORT), published on loopback only.
    expect(compose.services.almanac?.ports).toEqual([`127.0.0.1:8787:${imageDefault("ALMANAC_PORT")}`]);
  });

  it("interpolates only variables that .env.example lists", () => {
    const example = readFileSync(`${root}.env.example`, "utf8");
    const variables = interpolatedVariables();
    expect(variables.size).toBeGreaterThan(0);
    for (const variable of variables)
      expect(example, `${variable} is not in .env.example`).toMatch(new RegExp(`^# ${variable}=`, "m"));
  });

  it("gives running turns less time than the stop grace period, with room to flush", () => {
    const almanac = compose.services.almanac;
    const configured = almanac?.environment?.ALMANAC_SHUTDOWN_DEADLINE_MS;
    const deadline = Number(
      configured === undefined
        ? imageDefault("ALMANAC_SHUTDOWN_DEADLINE_MS")
        : /^\$\{ALMANAC_SHUTDOWN_DEADLINE_MS:-(\d+)\}$/.exec(configured)?.[1],
    );
    expect(deadline).toBeGreaterThan(0);
    expect(durationMs(almanac?.stop_grace_period ?? "10s") - deadline).toBeGreaterThanOrEqual(STOP_MARGIN_MS);
  });

  it("keeps Almanac on its embedded SQLite index unless .env chooses Qdrant, whose profile it does not need", () => {
    const almanac = compose.services.almanac;
    expect(almanac?.profiles).toBeUndefined();
    expect(almanac?.depends_on).toBeUndefined();
    expect(almanac?.healthcheck).toBeDefined();
    expect(almanac?.volumes?.some((volume) => volume.endsWith(":/data"))).toBe(true);
    const qdrant = compose.services.qdrant;
    expect(qdrant?.profiles).toEqual(["qdrant"]);
    expect(qdrant?.healthcheck).toBeDefined();
    // One key: what Almanac sends (ALMANAC_QDRANT_API_KEY from .env) is what Qdrant requires.
    expect(qdrant?.environment?.QDRANT__SERVICE__API_KEY).toMatch(/^\$\{ALMANAC_QDRANT_API_KEY:-\}$/);
    expect(Object.keys(compose.volumes)).toEqual(expect.arrayContaining(["almanac-data", "qdrant-data"]));

    const composed = (dotenv: Readonly<Record<string, string>> = {}) =>
      Object.fromEntries(
        Object.entries(almanac?.environment ?? {}).map(([key, value]) => [key, interpolate(value, dotenv)]),
      );
    const cwd = mkdtempSync(join(tmpdir(), "almanac-compose-"));
    try {
      expect(loadConfig({ env: composed(), cwd }).config.index.backend).toBe("sqlite");
      const withQdrant = loadConfig({
        env: {
          ...composed(),
          ALMANAC_INDEX_BACKEND: "qdrant",
          ALMANAC_EMBEDDING_BASE_URL: "http://ollama:11434/v1",
          ALMANAC_EMBEDDING_DIMENSIONS: "768",
        },
        cwd,
      }).config.index;
      expect(withQdrant).toMatchObject({
        backend: "qdrant",
        qdrantUrl: `http://qdrant:${qdrant?.expose?.[0]}`,
      });
      // A value in .env wins over the compose defaults.
      const dotenv = {
        ALMANAC_QDRANT_URL: "http://qdrant.example:6333",
        ALMANAC_SHUTDOWN_DEADLINE_MS: "40000",
      };
      const own = loadConfig({ env: { ...dotenv, ...composed(dotenv) }, cwd }).config;
      expect(own.index.qdrantUrl).toBe("http://qdrant.example:6333");
      expect(own.shutdown.deadlineMs).toBe(40_000);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("pins the Qdrant image to the major.minor of the installed Qdrant client", () => {
    const image = compose.services.qdrant?.image ?? "";
    const [repository, tag = ""] = image.split(":");
    expect(repository).toBe("qdrant/qdrant");
    const serverVersion = majorMinor(tag);
    expect(serverVersion, `qdrant image tag "${tag}" is not a pinned vX.Y.Z version`).toBeDefined();
    for (const packageDirectory of ["packages/memory-index", "apps/server"]) {
      const clientVersion = installedQdrantClientVersion(packageDirectory);
      expect(
        serverVersion,
        `${image} vs @qdrant/js-client-rest ${clientVersion} in ${packageDirectory}`,
      ).toBe(majorMinor(clientVersion));
    }
  });

  it("pins every image to a version, never latest", () => {
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.image === undefined || name === "almanac") continue;
      expect(majorMinor(service.image.split(":")[1] ?? ""), `${name}: ${service.image}`).toBeDefined();
    }
  });

  it("keeps Ollama in an optional profile that no service without a profile depends on", () => {
    const ollama = compose.services.ollama;
    expect(ollama?.profiles).toEqual(["ollama"]);
    expect(ollama?.healthcheck).toBeDefined();
    expect(ollama?.volumes?.some((volume) => volume.startsWith("ollama-data:"))).toBe(true);
    expect(Object.keys(compose.volumes)).toContain("ollama-data");
    // A service without a profile that depended on a profiled one would not start without `--profile`.
    const profiled = new Set(
      Object.entries(compose.services)
        .filter(([, service]) => service.profiles !== undefined)
        .map(([name]) => name),
    );
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.profiles !== undefined) continue;
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        expect(profiled, `${name} depends on ${dependency}, which only runs with its profile`).not.toContain(
          dependency,
        );
      }
    }
  });

  it("documents Almanac variables for the Ollama profile that the schema knows and that match the service", () => {
    const documented = documentedOllamaEnvironment();
    expect([...documented.keys()]).toEqual(
      expect.arrayContaining([
        "ALMANAC_MODEL_BASE_URL",
        "ALMANAC_MODEL_NAME",
        "ALMANAC_MODEL_CONTEXT_WINDOW",
        "ALMANAC_EMBEDDING_BASE_URL",
        "ALMANAC_EMBEDDING_MODEL",
        "ALMANAC_EMBEDDING_DIMENSIONS",
      ]),
    );
    for (const key of documented.keys())
      expect(knownKeys, `${key} is not a configuration key`).toContain(key);
    // The values load as well: the compose file's own environment plus the documented lines, as in the container.
    const composed = Object.entries(compose.services.almanac?.environment ?? {}).map(
      ([key, value]) => [key, interpolate(value)] as const,
    );
    const cwd = mkdtempSync(join(tmpdir(), "almanac-compose-"));
    try {
      const { config } = loadConfig({ env: Object.fromEntries([...composed, ...documented]), cwd });
      expect(config.model).toMatchObject({ name: "qwen3:8b", contextWindow: 32768 });
      expect(config.embedding).toMatchObject({ model: "nomic-embed-text", dimensions: 768 });
      expect(config.index.backend).toBe("sqlite");
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }

    const ollama = compose.services.ollama;
    const port = ollama?.expose?.[0];
    expect(port).toBe("11434");
    expect(documented.get("ALMANAC_MODEL_BASE_URL")).toBe(`http://ollama:${port}/v1`);
    expect(documented.get("ALMANAC_EMBEDDING_BASE_URL")).toBe(`http://ollama:${port}/v1`);
    // Ollama cuts prompts past its own window silently; Almanac must compact against the same number.
    const ollamaWindow = /^\$\{OLLAMA_CONTEXT_LENGTH:-(\d+)\}$/.exec(
      ollama?.environment?.OLLAMA_CONTEXT_LENGTH ?? "",
    );
    expect(ollamaWindow?.[1]).toBeDefined();
    expect(documented.get("ALMANAC_MODEL_CONTEXT_WINDOW")).toBe(ollamaWindow?.[1]);
  });
});
