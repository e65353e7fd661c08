import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import { listSettings } from "./settings.js";

const root = fileURLToPath(new URL("../../../../", import.meta.url));
const composeSchema = z.object({
  services: z.record(
    z.string(),
    z.object({
      environment: z.record(z.string(), z.string()).optional(),
      depends_on: z.record(z.string(), z.object({ condition: z.string() })).optional(),
      healthcheck: z.object({ test: z.unknown() }).optional(),
      volumes: z.array(z.string()).optional(),
    }),
  ),
  volumes: z.record(z.string(), z.unknown()),
});

describe("docker-compose.yml", () => {
  const compose = composeSchema.parse(parse(readFileSync(`${root}docker-compose.yml`, "utf8")));

  it("sets only environment keys the configuration schema knows", () => {
    const known = new Set(listSettings().map((setting) => setting.env));
    const almanac = compose.services.almanac;
    expect(almanac).toBeDefined();
    const keys = Object.keys(almanac?.environment ?? {});
    expect(keys.length).toBeGreaterThan(3);
    for (const key of keys) expect(known, `${key} is not a configuration key`).toContain(key);
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
});
