import { z } from "zod";

/** What the docs and the loader need to know about one setting, attached to its schema. */
export interface SettingMeta {
  /** Environment variable that sets this key when the config file does not. */
  readonly env: string;
  readonly description: string;
  /** Secrets are masked in logs, errors and the admin API. */
  readonly secret?: boolean;
  /**
   * A map whose values may be credentials (HTTP headers such as `api-key`): its keys are shown, its values
   * masked like secrets.
   */
  readonly secretValues?: boolean;
  /**
   * For a structured value holding credentials inside (the MCP servers' `env` and `headers`): the credentials
   * in it (never logged), and the value as shown with them masked.
   */
  readonly secretsIn?: (value: unknown) => readonly string[];
  readonly redact?: (value: unknown) => unknown;
  /** Example value for README and `.env.example` when there is no default. */
  readonly example?: string;
  /** Other spellings of the variable read when `env` is unset (the lower-case proxy variables). */
  readonly envAliases?: readonly string[];
}

/**
 * A setting registry: one schema per key carries its env name and description (single source for docs).
 * Packages that declare a block of the configuration (the channels) register their keys here too, so the
 * server lists, loads and documents them like its own.
 */
export const settingRegistry = z.registry<SettingMeta>();

/**
 * Registers `schema` as a documented setting and returns it. The registry keys metadata by schema instance,
 * so every setting needs a schema of its own (`.optional()` and `.default()` make fresh ones).
 */
export function setting<T extends z.ZodType>(schema: T, meta: SettingMeta): T {
  settingRegistry.add(schema, meta);
  return schema;
}

/** An http(s) URL, with the words a person reads when it is not one. */
export const httpUrl = z.url({ protocol: /^https?$/, error: "expected an http(s) URL" });
