/**
 * JSON Schema keywords every OpenAI-compatible function-calling provider accepts in a tool's parameters. Others
 * (`$schema`, `$id`, `format`, `examples`, `$comment`, vendor extensions, …) make some providers refuse the whole
 * request (strict servers, Gemini's compatibility layer), so they are dropped, never the tool.
 */
const KEPT_KEYWORDS: ReadonlySet<string> = new Set([
  "type",
  "description",
  "title",
  "properties",
  "required",
  "items",
  "enum",
  "const",
  "default",
  "anyOf",
  "oneOf",
  "allOf",
  "additionalProperties",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "uniqueItems",
  "nullable",
]);

/** How deep `$ref`s are inlined; a recursive definition deeper than this becomes an unconstrained `{}`. */
const MAX_REF_DEPTH = 6;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The local definition a `$ref` such as `#/$defs/Item` or `#/definitions/Item` names, if the root has it. */
function resolveRef(root: Json, ref: string): unknown {
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  if (match === null) return undefined;
  const definitions = root[match[1] as string];
  const name = decodeURIComponent((match[2] as string).replaceAll("~1", "/").replaceAll("~0", "~"));
  return isObject(definitions) ? definitions[name] : undefined;
}

function clean(node: unknown, root: Json, depth: number): unknown {
  if (Array.isArray(node)) return node.map((item) => clean(item, root, depth));
  if (!isObject(node)) return node;
  if (typeof node.$ref === "string") {
    const target = depth < MAX_REF_DEPTH ? resolveRef(root, node.$ref) : undefined;
    // Sibling keywords of a $ref (a description) are kept beside the inlined definition.
    const { $ref: _ref, ...siblings } = node;
    const inlined = target === undefined ? {} : (clean(target, root, depth + 1) as Json);
    return { ...inlined, ...(clean(siblings, root, depth) as Json) };
  }
  const cleaned: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (!KEPT_KEYWORDS.has(key)) continue;
    if (key === "properties" && isObject(value)) {
      // Property names are data, not keywords: every one is kept.
      cleaned.properties = Object.fromEntries(
        Object.entries(value).map(([name, schema]) => [name, clean(schema, root, depth)]),
      );
    } else if (key === "additionalProperties" && typeof value === "boolean") {
      cleaned.additionalProperties = value;
    } else {
      cleaned[key] = clean(value, root, depth);
    }
  }
  return cleaned;
}

/**
 * A tool's input schema as providers accept it: an object schema at the top (wrapped when a server gave anything
 * else), local `$ref`s inlined, unsupported keywords dropped.
 */
export function toProviderSchema(inputSchema: unknown): Json {
  const root = isObject(inputSchema) ? inputSchema : {};
  const cleaned = clean(root, root, 0) as Json;
  // A schema that leaves out `type` but lists properties is an object schema; anything else has no usable shape.
  if (cleaned.type === undefined && isObject(cleaned.properties)) cleaned.type = "object";
  if (cleaned.type !== "object") return { type: "object", properties: {} };
  return { ...cleaned, properties: isObject(cleaned.properties) ? cleaned.properties : {} };
}
