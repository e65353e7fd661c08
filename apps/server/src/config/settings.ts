import { type SettingMeta, settingRegistry } from "@almanac/core";
import type { z } from "zod";
import { configSchema } from "./config-schema.js";

/** The value kind of a setting, which decides how an environment string is read. */
export type SettingKind = "string" | "number" | "boolean" | "json" | "enum" | "list";

/** One documented configuration key. */
export interface SettingInfo extends SettingMeta {
  /** Dotted path in the config file, e.g. `server.port`. */
  readonly path: string;
  readonly kind: SettingKind;
  /** The default, or undefined when the key is optional without one. */
  readonly defaultValue: unknown;
  /** Allowed values of an enum setting. */
  readonly choices?: readonly string[];
}

type AnySchema = z.ZodType & { def: { type: string; innerType?: AnySchema; defaultValue?: unknown } };

function unwrap(schema: AnySchema): { inner: AnySchema; defaultValue: unknown } {
  let current = schema;
  let defaultValue: unknown;
  for (;;) {
    const { type, innerType } = current.def;
    if ((type === "default" || type === "prefault" || type === "optional") && innerType) {
      if (type === "default" && defaultValue === undefined) defaultValue = current.def.defaultValue;
      current = innerType;
    } else {
      return { inner: current, defaultValue };
    }
  }
}

function kindOf(inner: AnySchema): SettingKind {
  switch (inner.def.type) {
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "enum":
      return "enum";
    case "array":
      return "list";
    case "record":
    case "object":
      return "json";
    default:
      return "string";
  }
}

function walk(shape: Record<string, AnySchema>, prefix: string, into: SettingInfo[]): void {
  for (const [name, schema] of Object.entries(shape)) {
    const path = prefix === "" ? name : `${prefix}.${name}`;
    const meta = settingRegistry.get(schema);
    const { inner, defaultValue } = unwrap(schema);
    if (meta === undefined) {
      if (inner.def.type !== "object") throw new Error(`config key ${path} has no setting metadata`);
      walk((inner as unknown as z.ZodObject).shape as unknown as Record<string, AnySchema>, path, into);
      continue;
    }
    const kind = kindOf(inner);
    const choices = kind === "enum" ? (inner as unknown as z.ZodEnum).options.map(String) : undefined;
    into.push({ ...meta, path, kind, defaultValue, ...(choices === undefined ? {} : { choices }) });
  }
}

let cached: readonly SettingInfo[] | undefined;

/** Every configuration key with its env variable, default and description, in schema order. */
export function listSettings(): readonly SettingInfo[] {
  cached ??= (() => {
    const settings: SettingInfo[] = [];
    walk(configSchema.shape as unknown as Record<string, AnySchema>, "", settings);
    return settings;
  })();
  return cached;
}
