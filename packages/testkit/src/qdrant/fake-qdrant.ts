import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseJsonBody, readBody, sendJson } from "../http-io.js";
import { FakeCollection, QdrantRequestError } from "./qdrant-collection.js";
import { UnsupportedByFakeError } from "./qdrant-filter.js";
import {
  describeSchemaErrors,
  loadQdrantOperations,
  QDRANT_SCHEMA_VERSION,
  type QdrantOperation,
} from "./qdrant-schema.js";

/** Options of {@link startFakeQdrant}. */
export interface FakeQdrantOptions {
  /** When set, requests must carry it in the `api-key` header (or as a bearer token), as Qdrant's. */
  readonly apiKey?: string;
  /** Port to listen on (default: a free one). */
  readonly port?: number;
}

/** One request the fake received. */
export interface FakeQdrantRequest {
  readonly method: string;
  readonly path: string;
  /** The published operation it matched, if any. */
  readonly operationId: string | undefined;
  readonly status: number;
}

/** A running fake Qdrant. */
export interface FakeQdrant {
  /** Base URL for `QdrantClient({ url })`. */
  readonly url: string;
  readonly requests: readonly FakeQdrantRequest[];
  /**
   * Requests that broke Qdrant's published schema or asked for something the fake does not
   * implement (each was answered 400). A test should expect this list to stay empty.
   */
  readonly violations: readonly string[];
  /** Stops listening (Qdrant down); the collections are kept for {@link FakeQdrant.start}. */
  stop(): Promise<void>;
  /** Listens again on the same port (Qdrant back up). */
  start(): Promise<void>;
  close(): Promise<void>;
}

const operations = loadQdrantOperations();

function findOperation(
  method: string,
  path: string,
): { operation?: QdrantOperation; collection?: string; known: boolean } {
  let known = false;
  for (const operation of operations) {
    const match = operation.pattern.exec(path);
    if (match === null) continue;
    known = true;
    if (operation.method === method)
      return { operation, collection: decodeURIComponent(match[1] ?? ""), known };
  }
  return { known };
}

/**
 * Starts a fake Qdrant HTTP server for tests. Every request is validated against Qdrant's
 * published OpenAPI schema ({@link QDRANT_SCHEMA_VERSION}) before it is served; the operations
 * Almanac uses run with Qdrant's semantics (filters, cosine/dot scoring, sparse IDF, RRF fusion)
 * and answer in Qdrant's `{result, status, time}` envelope and error shape.
 */
export async function startFakeQdrant(options: FakeQdrantOptions = {}): Promise<FakeQdrant> {
  const collections = new Map<string, FakeCollection>();
  const requests: FakeQdrantRequest[] = [];
  const violations: string[] = [];

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const started = performance.now();
    const url = new URL(request.url ?? "/", "http://fake-qdrant");
    const method = request.method ?? "GET";
    const { operation, collection: name, known } = findOperation(method, url.pathname);
    const reply = (status: number, body: Record<string, unknown>) => {
      requests.push({ method, path: url.pathname, operationId: operation?.operationId, status });
      sendJson(response, status, { ...body, time: (performance.now() - started) / 1000 });
    };
    const fail = (status: number, error: string, violation = false) => {
      if (violation) violations.push(`${method} ${url.pathname}: ${error}`);
      reply(status, { status: { error } });
    };
    const text = await readBody(request);
    if (options.apiKey !== undefined) {
      const bearer = request.headers.authorization?.replace(/^Bearer /u, "");
      if (request.headers["api-key"] !== options.apiKey && bearer !== options.apiKey) {
        fail(401, "Must provide an API key or an Authorization bearer token");
        return;
      }
    }
    if (method === "GET" && url.pathname === "/") {
      reply(200, { title: "qdrant - vector search engine (fake)", version: "1.18.0" });
      return;
    }
    if (operation === undefined || name === undefined) {
      fail(
        known ? 405 : 404,
        `${method} ${url.pathname} is not an operation of Qdrant ${QDRANT_SCHEMA_VERSION}`,
        true,
      );
      return;
    }
    const query = Object.fromEntries(url.searchParams);
    if (!operation.validateQuery(query)) {
      fail(400, `Query deserialize error: ${describeSchemaErrors(operation.validateQuery.errors)}`, true);
      return;
    }
    let body: Record<string, unknown> = {};
    if (operation.validateBody !== undefined) {
      const parsed = parseJsonBody(text);
      if (!parsed.ok) {
        fail(400, "Format error in JSON body: expected a JSON document", true);
        return;
      }
      if (!operation.validateBody(parsed.value)) {
        fail(400, `Format error in JSON body: ${describeSchemaErrors(operation.validateBody.errors)}`, true);
        return;
      }
      body = parsed.value as Record<string, unknown>;
    }
    try {
      const result = serve(operation.operationId, name, body);
      reply(200, { result, status: "ok" });
    } catch (error) {
      if (error instanceof QdrantRequestError) fail(error.status, error.message);
      else if (error instanceof UnsupportedByFakeError)
        fail(400, `The fake Qdrant does not implement ${error.message}`, true);
      else throw error;
    }
  };

  const existing = (name: string): FakeCollection => {
    const collection = collections.get(name);
    if (collection === undefined)
      throw new QdrantRequestError(404, `Not found: Collection \`${name}\` doesn't exist!`);
    return collection;
  };
  const done = { operation_id: 0, status: "completed" };

  const serve = (operationId: string, name: string, body: Record<string, unknown>): unknown => {
    switch (operationId) {
      case "collection_exists":
        return { exists: collections.has(name) };
      case "get_collection":
        return existing(name).info();
      case "create_collection":
        if (collections.has(name))
          throw new QdrantRequestError(409, `Wrong input: Collection \`${name}\` already exists!`);
        collections.set(name, new FakeCollection(body));
        return true;
      case "delete_collection":
        return collections.delete(name);
      case "create_field_index":
        existing(name).createPayloadIndex(body);
        return done;
      case "upsert_points":
        existing(name).upsert(body);
        return done;
      case "delete_points":
        existing(name).deletePoints(body);
        return done;
      case "update_vectors":
        existing(name).updateVectors(body);
        return done;
      case "delete_vectors":
        existing(name).deleteVectors(body);
        return done;
      case "set_payload":
        existing(name).setPayload(body);
        return done;
      case "get_points":
        return existing(name).retrieve(body);
      case "scroll_points":
        return existing(name).scroll(body);
      case "count_points":
        return { count: existing(name).count(body) };
      case "query_points":
        return existing(name).query(body);
      default:
        throw new UnsupportedByFakeError(`operation ${operationId}`);
    }
  };

  let server: Server | undefined;
  let port = options.port ?? 0;
  const start = async (): Promise<void> => {
    if (server !== undefined) return;
    const next = createServer((request, response) => {
      handle(request, response).catch((error: unknown) => {
        violations.push(`${request.method} ${request.url}: fake failed: ${String(error)}`);
        sendJson(response, 500, { status: { error: `Service internal error: ${String(error)}` }, time: 0 });
      });
    });
    await new Promise<void>((resolve, reject) => {
      next.once("error", reject);
      next.listen(port, "127.0.0.1", () => resolve());
    });
    port = (next.address() as AddressInfo).port;
    server = next;
  };
  const stop = async (): Promise<void> => {
    const current = server;
    if (current === undefined) return;
    server = undefined;
    await new Promise<void>((resolve) => {
      current.close(() => resolve());
      current.closeAllConnections();
    });
  };
  await start();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    violations,
    start,
    stop,
    close: stop,
  };
}
