import type { Memory } from "@almanac/memory";
import type { FastifyInstance } from "fastify";
import { configurationChecks, indexCheck } from "../cli/doctor.js";
import { check } from "../cli/doctor-types.js";
import type { AlmanacConfig } from "../config/config-schema.js";
import { missingModelSettings } from "../config/load-config.js";
import { MODEL_EXAMPLES } from "../config/model-examples.js";

/** What the setup route needs. */
export interface SetupRoutesDependencies {
  readonly config: AlmanacConfig;
  readonly memory: Memory;
  /** How the model and embedding endpoints are probed (tests pass their own). */
  readonly fetch?: typeof fetch;
}

const checkSchema = {
  type: "object",
  required: ["name", "status", "message"],
  properties: {
    name: { type: "string" },
    status: { type: "string", enum: ["ok", "warn", "fail"] },
    message: { type: "string" },
    hint: { type: "string", description: "How to fix it." },
  },
} as const;

const setupResponse = {
  200: {
    type: "object",
    required: ["modelConfigured", "missing", "ok", "checks", "examples"],
    properties: {
      modelConfigured: { type: "boolean" },
      missing: {
        type: "array",
        items: { type: "string" },
        description: "Environment variables to set before chat works.",
      },
      ok: { type: "boolean", description: "True when no check failed." },
      checks: { type: "array", items: checkSchema, description: "The lines `almanac doctor` prints." },
      examples: {
        type: "array",
        description: "Settings for OpenAI, DashScope, Ollama, vLLM and LM Studio.",
        items: {
          type: "object",
          required: ["id", "label", "note", "env"],
          properties: {
            id: { type: "string" },
            label: { type: "string" },
            note: { type: "string" },
            env: { type: "object", additionalProperties: { type: "string" } },
          },
        },
      },
    },
  },
} as const;

/**
 * `GET /api/setup`: the doctor's checks as this server sees them (its own configuration, data directory,
 * model and embedding endpoints probed, channel credentials, the index) and example settings per provider.
 * The console opens on it while no model is configured.
 */
export function registerSetupRoutes(app: FastifyInstance, deps: SetupRoutesDependencies): void {
  app.get(
    "/api/setup",
    {
      schema: {
        tags: ["admin"],
        summary: "First-run checks (as `almanac doctor`) and example model settings",
        description:
          "Runs the checks of `almanac doctor` inside the server: the configuration it loaded, the data " +
          "directory, the model and embedding endpoints (one small request each when configured), the " +
          "channel credentials and the memory index.",
        response: setupResponse,
      },
    },
    async () => {
      const missing = missingModelSettings(deps.config);
      const checks = [
        check("config", "ok", "valid (loaded by this server)"),
        ...(await configurationChecks(deps.config, deps.fetch ?? fetch)),
        check("server", "ok", "running (this server answered)"),
        indexCheck(await deps.memory.indexStatus()),
      ];
      return {
        modelConfigured: missing.length === 0,
        missing,
        ok: checks.every((entry) => entry.status !== "fail"),
        checks,
        examples: MODEL_EXAMPLES,
      };
    },
  );
}
