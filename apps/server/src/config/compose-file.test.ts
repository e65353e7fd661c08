import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import { loadConfig } from "./load-config.js";
import { listSettings } from "./settings.js";

const root = fileURLToPath(new URL("../../../../", import.meta.url));
const composeSchema = z.object({
  services: z.record(
    z.string(),
    z.object({
      image: z.string().optional(),
      profiles: z.array(z.string()).optional(),
      environment: z.record(z.string(), z.string()).optional(),
      depends_on: z.record(z.string(), z.object({ condition: z.string() })).optional(),
      healthcheck: z.object({ test: z.unknown() }).optional(),
      volumes: z.array(z.string()).optional(),
      expose: z.array(z.string()).optional(),
    }),
  ),
  volumes: z.record(z.string(), z.unknown()),
});
const clientPackageSchema = z.object({ version: z.string() });

const compose = composeSchema.parse(parse(readFileSync(`${root}docker-compose.yml`, "utf8")));
const knownKeys = new Set(listSettings().map((setting) => setting.env));

/** A compose environment value as Compose runs it with nothing set: `${NAME:-default}` becomes `default`. */
function withComposeDefaults(value: string): string {
  return value.replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, "$1");
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
    expect(almanacKeys.length).toBeGreaterThan(3);
    for (const [name, service] of Object.entries(compose.services)) {
      for (const key of Object.keys(service.environment ?? {})) {
        // Other services' own variables (QDRANT__*, OLLAMA_*) are theirs; an ALMANAC_* key anywhere must exist.
        if (name !== "almanac" && !key.startsWith("ALMANAC_")) continue;
        expect(knownKeys, `${name}: ${key} is not a configuration key`).toContain(key);
      }
    }
  });

  it("runs Almanac on Qdrant, after Qdrant is healthy, with data in volumes and health checks on both", () => {
    const almanac = compose.services.almanac;
    expect(almanac?.environment?.ALMANAC_QDRANT_URL).toBe("http://qdrant:6333");
    expect(almanac?.environment?.ALMANAC_INDEX_BACKEND).toContain("qdrant");
    expect(almanac?.depends_on?.qdrant?.condition).toBe("service_healthy");
    expect(almanac?.healthcheck).toBeDefined();
    expect(compose.services.qdrant?.healthcheck).toBeDefined();
    expect(almanac?.volumes?.some((volume) => volume.endsWith(":/data"))).toBe(true);
    expect(Object.keys(compose.volumes)).toEqual(expect.arrayContaining(["almanac-data", "qdrant-data"]));
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

  it("keeps Ollama in an optional profile that Almanac and Qdrant do not depend on", () => {
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
      ([key, value]) => [key, withComposeDefaults(value)] as const,
    );
    const cwd = mkdtempSync(join(tmpdir(), "almanac-compose-"));
    try {
      const { config } = loadConfig({ env: Object.fromEntries([...composed, ...documented]), cwd });
      expect(config.model).toMatchObject({ name: "qwen3:8b", contextWindow: 32768 });
      expect(config.embedding).toMatchObject({ model: "nomic-embed-text", dimensions: 768 });
      expect(config.index.backend).toBe("qdrant");
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
