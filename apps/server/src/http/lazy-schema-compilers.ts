import { createRequire } from "node:module";
import type ValidatorSelector from "@fastify/ajv-compiler";
import type { SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import type { FastifyServerOptions } from "fastify";

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]
>;
type ValidatorFactory = NonNullable<CompilersFactory["buildValidator"]>;
type SerializerFactory = NonNullable<CompilersFactory["buildSerializer"]>;
type RouteValidator = ReturnType<ReturnType<ValidatorFactory>>;
type RouteSerializer = ReturnType<ReturnType<SerializerFactory>>;
type ValidatorRoute = Parameters<ReturnType<ValidatorFactory>>[0];

/** Fastify's schema compilers, each route's schema compiled on its first request (ADR 0008). */
export interface LazySchemaCompilers {
  readonly buildValidator: ValidatorFactory;
  readonly buildSerializer: SerializerFactory;
  /** Compiles every schema handed over so far (the errors a route would meet on its first request); returns how many. */
  compileAll(): number;
}

/**
 * Fastify's own validator (Ajv) and serializer (fast-json-stringify) compilers, the packages fastify uses with
 * the options it passes, handed to it through its documented `schemaController.compilersFactory`; loaded, and
 * each route's schema compiled, on the first request that needs them instead of at `ready()`: loading them
 * (~110 modules) and compiling every route's schemas were ~80 ms of a start-up's main thread, for routes a
 * given run mostly never calls. A schema that does not
 * compile fails its route's first request, not the start: app.test.ts compiles every route's schemas.
 *
 * Fastify lower-cases the property names of a `headers` schema only for its own compilers (header names arrive
 * lower-cased); for these it is done here the same way.
 */
export function createLazySchemaCompilers(): LazySchemaCompilers {
  let validatorFactory: ValidatorFactory | undefined;
  let serializerFactory: SerializerFactory | undefined;
  const pending: (() => unknown)[] = [];

  const buildValidator: ValidatorFactory = (externalSchemas, options) => {
    let compile: ReturnType<ValidatorFactory> | undefined;
    return (route) => {
      const prepared =
        route.httpPart === "headers" ? { ...route, schema: lowerCaseHeaders(route.schema) } : route;
      let validate: RouteValidator | undefined;
      const compiled = (): RouteValidator => {
        validatorFactory ??= (
          createRequire(import.meta.url)("@fastify/ajv-compiler") as typeof ValidatorSelector
        )() as ValidatorFactory;
        compile ??= validatorFactory(externalSchemas, options);
        validate ??= compile(prepared);
        return validate;
      };
      pending.push(compiled);
      // Fastify reads a failed validation's errors from the function it called.
      const lazy = ((data: unknown) => {
        const real = compiled();
        const result = real(data);
        lazy.errors = real.errors;
        return result;
      }) as RouteValidator;
      return lazy;
    };
  };

  const buildSerializer: SerializerFactory = (externalSchemas, options) => {
    let compile: ReturnType<SerializerFactory> | undefined;
    return (route) => {
      let serialize: RouteSerializer | undefined;
      const compiled = (): RouteSerializer => {
        serializerFactory ??= (
          createRequire(import.meta.url)("@fastify/fast-json-stringify-compiler") as {
            SerializerSelector: typeof SerializerSelector;
          }
        ).SerializerSelector() as SerializerFactory;
        compile ??= serializerFactory(externalSchemas, options);
        serialize ??= compile(route);
        return serialize;
      };
      pending.push(compiled);
      return (data) => compiled()(data);
    };
  };

  return {
    buildValidator,
    buildSerializer,
    compileAll: () => {
      for (const compiled of pending) compiled();
      return pending.length;
    },
  };
}

/** A `headers` object schema with its property names (and `required` entries) lower-cased, as fastify does. */
function lowerCaseHeaders(schema: ValidatorRoute["schema"]): ValidatorRoute["schema"] {
  if (typeof schema !== "object" || schema === null || Object.getPrototypeOf(schema) !== Object.prototype)
    return schema;
  const headers = schema as { properties?: Record<string, unknown>; required?: unknown };
  return {
    ...headers,
    ...(headers.properties === undefined
      ? {}
      : {
          properties: Object.fromEntries(
            Object.entries(headers.properties).map(([name, value]) => [name.toLowerCase(), value]),
          ),
        }),
    ...(Array.isArray(headers.required)
      ? { required: headers.required.map((name) => (typeof name === "string" ? name.toLowerCase() : name)) }
      : {}),
  };
}
