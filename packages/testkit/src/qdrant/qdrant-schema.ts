import { readFileSync } from "node:fs";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import formats from "ajv-formats";
import { z } from "zod";

// Request validation against Qdrant's published OpenAPI document (the vendored v1.18.x subset
// beside this file). OpenAPI 3.0 is not JSON Schema: `nullable` is rewritten to a `null` type and
// Qdrant's Rust number formats are registered, so Ajv checks exactly what the document says.

/** Where the vendored document lives (see README.md beside it for its source). */
const DOCUMENT_URL = new URL("./qdrant-openapi-v1.18.json", import.meta.url);
/** Qdrant's version whose published schema the fake validates against. */
export const QDRANT_SCHEMA_VERSION = "v1.18.x";

const parameterSchema = z.object({
  name: z.string(),
  in: z.enum(["path", "query"]),
  required: z.boolean().optional(),
  schema: z.record(z.string(), z.unknown()),
});
const operationSchema = z.object({
  operationId: z.string(),
  parameters: z.array(parameterSchema).default([]),
  requestBody: z
    .object({
      content: z.object({ "application/json": z.object({ schema: z.object({ $ref: z.string() }) }) }),
    })
    .optional(),
});
const documentSchema = z.object({
  paths: z.record(z.string(), z.record(z.string(), operationSchema)),
  components: z.object({ schemas: z.record(z.string(), z.unknown()) }),
});

/** One operation of the document, ready to match and validate requests. */
export interface QdrantOperation {
  readonly operationId: string;
  readonly method: string;
  readonly path: string;
  /** Matches a request path; the capture is the collection name. */
  readonly pattern: RegExp;
  /** Validates the query string (values coerced from text, as the server parses them). */
  readonly validateQuery: ValidateFunction;
  /** Validates the JSON body; undefined for operations without one. */
  readonly validateBody: ValidateFunction | undefined;
}

/** Rewrites OpenAPI 3.0 `nullable` into JSON Schema: `{nullable: true}` alone means "null". */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (typeof node !== "object" || node === null) return node;
  const entries = Object.entries(node).map(([key, value]) => [key, toJsonSchema(value)] as const);
  const object: Record<string, unknown> = Object.fromEntries(entries);
  if (object.nullable !== true) return object;
  delete object.nullable;
  if (Object.keys(object).length === 0) return { type: "null" };
  if (typeof object.type === "string") return { ...object, type: [object.type, "null"] };
  return { anyOf: [object, { type: "null" }] };
}

const unsigned = (value: number) => Number.isInteger(value) && value >= 0;

function createAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: false, coerceTypes });
  formats.default(ajv, ["uuid", "date-time", "uri"]);
  for (const name of ["uint", "uint8", "uint32", "uint64"]) {
    ajv.addFormat(name, { type: "number", validate: unsigned });
  }
  ajv.addFormat("int64", { type: "number", validate: Number.isInteger });
  for (const name of ["float", "double"]) ajv.addFormat(name, { type: "number", validate: Number.isFinite });
  return ajv;
}

/** Loads the vendored document and compiles one validator pair per operation. */
export function loadQdrantOperations(): readonly QdrantOperation[] {
  const document = documentSchema.parse(JSON.parse(readFileSync(DOCUMENT_URL, "utf8")));
  const components = { $id: "qdrant", components: { schemas: toJsonSchema(document.components.schemas) } };
  const bodies = createAjv(false);
  const queries = createAjv(true);
  bodies.addSchema(components);
  queries.addSchema(components);
  const operations: QdrantOperation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    const pattern = new RegExp(`^${path.replace("{collection_name}", "([^/]+)")}$`, "u");
    for (const [method, operation] of Object.entries(methods)) {
      const query = operation.parameters.filter((parameter) => parameter.in === "query");
      const querySchema = {
        type: "object",
        properties: Object.fromEntries(
          query.map((parameter) => [parameter.name, toJsonSchema(rebase(parameter.schema))]),
        ),
        required: query.filter((parameter) => parameter.required === true).map((parameter) => parameter.name),
      };
      const bodyRef = operation.requestBody?.content["application/json"].schema.$ref;
      operations.push({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path,
        pattern,
        validateQuery: queries.compile(querySchema),
        validateBody: bodyRef === undefined ? undefined : bodies.compile({ $ref: `qdrant${bodyRef}` }),
      });
    }
  }
  return operations;
}

/** Points a parameter's local `$ref` at the shared components document. */
function rebase(schema: Record<string, unknown>): Record<string, unknown> {
  return typeof schema.$ref === "string" ? { $ref: `qdrant${schema.$ref}` } : schema;
}

/** Ajv errors as one line, naming the JSON path of each failure. */
export function describeSchemaErrors(errors: readonly ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map(
      (error) =>
        `${error.instancePath === "" ? "body" : error.instancePath} ${error.message ?? "is invalid"}`,
    )
    .join("; ");
}
