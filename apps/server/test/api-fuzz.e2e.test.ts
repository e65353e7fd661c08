import { script } from "@almanac/testkit";
import fc from "fast-check";
import type { HTTPMethods, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RouteEntry } from "../src/http/auth.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

/**
 * Fuzzes the HTTP API through `inject()`: methods, paths from the route table with random parameters, random
 * query strings and headers, JSON bodies of wrong shapes and sizes, bytes that are not UTF-8; with the token
 * and without. No request may get a 5xx, every error is in the documented shape, and `/healthz` keeps answering.
 */

const RUNS = Number(process.env.ALMANAC_FUZZ_RUNS ?? 10_000);
const BODY_LIMIT = 16_384;

let running: TestServer;
let routes: readonly RouteEntry[];

beforeAll(async () => {
  running = await startTestServer({ env: { ALMANAC_BODY_LIMIT_BYTES: String(BODY_LIMIT) } });
  running.llm.setFallback(() => script.text("fuzzed"));
  // `GET /api/events` stays open by design (inject() would wait for its end forever); live-events.e2e covers it.
  routes = running.server.app.routeTable().filter((route) => route.url !== "/api/events");
}, 30_000);

afterAll(async () => {
  await running?.close();
});

/** A string of arbitrary bytes read as Latin-1: what a header or URL can really carry on the wire. */
const byteString = (maxLength: number) =>
  fc
    .uint8Array({ maxLength })
    .map((bytes) => Buffer.from(bytes).toString("latin1"))
    .filter((text) => !/[\r\n\0]/.test(text));

/** A path parameter: plausible values, any text percent-encoded, raw bytes percent-encoded, broken escapes. */
const parameter = fc.oneof(
  fc.constantFrom(
    "MEMORY.md",
    "memory/2026-01-01.md",
    "api%3Adefault%3Aapi%3Afuzz",
    "web%3Adefault%3Aweb%3Ax",
    "job-1",
    "..%2F..%2Fetc%2Fpasswd",
    "%",
    "%zz",
    "%C0%AF",
    "%FF%FE",
    "",
    "a".repeat(300),
    `${"n".repeat(300)}.md`,
    `memory/${"n".repeat(300)}.md`,
    `api%3Adefault%3Aapi%3A${"k".repeat(300)}`,
    "memory/%2e%2e/%2e%2e/x.md",
  ),
  fc.string({ unit: "grapheme", maxLength: 40 }).map(encodeURIComponent),
  fc
    .uint8Array({ maxLength: 30 })
    .map((bytes) => [...bytes].map((byte) => `%${byte.toString(16).padStart(2, "0")}`).join("")),
  fc.stringMatching(/^[a-zA-Z0-9._~:/-]{0,300}$/),
);

const query = fc.oneof(
  fc.constant(""),
  fc
    .array(
      fc.tuple(
        fc.constantFrom("q", "maxResults", "minScore", "token", "x", "a[b]", "__proto__"),
        fc.oneof(
          fc.string({ maxLength: 20 }).map(encodeURIComponent),
          fc.constantFrom("-1", "1e309", "NaN", "%"),
        ),
      ),
      { maxLength: 4 },
    )
    .map((pairs) => `?${pairs.map(([key, value]) => `${key}=${value}`).join("&")}`),
);

const json: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 4 });

/** Bodies aimed at each route's schema, with fields of the wrong type, missing or extra. */
const shapedBody = fc.record(
  {
    messages: fc.oneof(
      fc.array(
        fc.record(
          {
            role: fc.oneof(fc.constantFrom("user", "assistant", "system", "tool", ""), json),
            content: fc.oneof(
              fc.string({ maxLength: 200 }),
              json,
              fc.array(
                fc.record(
                  {
                    type: fc.constantFrom("text", "image_url", "input_audio", "x"),
                    text: fc.oneof(fc.string(), json),
                    image_url: fc.oneof(json, fc.record({ url: fc.webUrl() })),
                  },
                  { requiredKeys: [] },
                ),
                { maxLength: 3 },
              ),
            ),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 3 },
      ),
      json,
    ),
    stream: fc.oneof(fc.boolean(), json),
    user: fc.oneof(fc.string({ unit: "grapheme", maxLength: 300 }), json),
    model: fc.oneof(fc.string(), json),
    content: fc.oneof(fc.string({ maxLength: 500 }), json),
    expectedHash: fc.oneof(fc.string(), fc.constant(null), json),
    allowShrink: fc.oneof(fc.boolean(), json),
    focus: fc.oneof(fc.string({ maxLength: 3000 }), json),
    conversation: fc.oneof(fc.string({ unit: "grapheme", maxLength: 300 }), json),
    message: fc.oneof(fc.string({ maxLength: 500 }), json),
  },
  { requiredKeys: [] },
);

const payload: fc.Arbitrary<string | Buffer | undefined> = fc.oneof(
  fc.constant(undefined),
  shapedBody.map((body) => JSON.stringify(body)),
  json.map((value) => JSON.stringify(value) ?? ""),
  fc.string({ maxLength: 100 }),
  // Bytes that are not UTF-8 (lone continuation bytes, overlongs, 0xFF) inside and outside JSON strings.
  fc
    .uint8Array({ minLength: 1, maxLength: 200 })
    .map((bytes) =>
      Buffer.concat([
        Buffer.from('{"messages":[{"role":"user","content":"'),
        Buffer.from(bytes),
        Buffer.from('"}]}'),
      ]),
    ),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  // Sizes around the body limit.
  fc
    .integer({ min: BODY_LIMIT - 64, max: BODY_LIMIT * 2 })
    .map((size) => JSON.stringify({ messages: [{ role: "user", content: "x".repeat(size) }] })),
  fc.constantFrom("", " ", "null", "[]", '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{}}}'),
);

const headers = fc.record(
  {
    "content-type": fc.oneof(
      fc.constantFrom(
        "application/json",
        "application/json; charset=utf-8",
        "application/json; charset=latin1",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/octet-stream",
        "",
        "application/json, text/plain",
      ),
      byteString(40),
    ),
    "x-almanac-session": fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 40 }).map(encodeURIComponent),
      byteString(60),
      fc.constantFrom("%", "%zz", "%FF", "%E5%BC", ""),
    ),
    accept: fc.constantFrom("application/json", "text/event-stream", "*/*", "text/html"),
    "accept-encoding": fc.constantFrom("gzip", "br", "identity", "*"),
    "content-length": fc.constantFrom("0", "1", "99999999", "-1", "abc"),
    "x-forwarded-for": byteString(30),
    cookie: byteString(30),
  },
  { requiredKeys: [] },
);

const authorization = fc.constantFrom(
  `Bearer ${TEST_TOKEN}`,
  `Bearer ${TEST_TOKEN}`,
  undefined,
  "Bearer wrong",
  `bearer ${TEST_TOKEN}`,
  "Basic Zm9vOmJhcg==",
  "Bearer ",
);

const METHODS: readonly HTTPMethods[] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

function fill(url: string, values: readonly string[]): string {
  let index = 0;
  return url
    .split("/")
    .map((segment) => {
      if (segment === "*" || segment.startsWith(":")) return values[index++ % values.length] ?? "x";
      return segment;
    })
    .join("/");
}

function problem(response: LightMyRequestResponse, method: string): string | undefined {
  if (response.statusCode >= 500) return `status ${response.statusCode}`;
  const type = String(response.headers["content-type"] ?? "");
  if (response.statusCode >= 400 && method !== "HEAD") {
    if (!type.includes("application/json")) return `error answered as ${type}`;
    const body: unknown = JSON.parse(response.body);
    const error = (body as { error?: Record<string, unknown> }).error;
    const shaped =
      typeof error === "object" &&
      error !== null &&
      typeof error.message === "string" &&
      typeof error.type === "string" &&
      typeof error.code === "string" &&
      !error.code.startsWith("FST_");
    if (!shaped) return "error body not in the documented shape";
  }
  return undefined;
}

describe("HTTP API fuzzing", () => {
  it(`answers ${RUNS} generated requests without a 5xx, every error in the documented shape`, async () => {
    const app = running.server.app;
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        fc.oneof(
          { weight: 3, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
        ),
        fc.array(parameter, { minLength: 1, maxLength: 2 }),
        query,
        headers,
        authorization,
        payload,
        async (route, method, values, search, extra, token, body) => {
          sent += 1;
          const verb = method ?? (route.method as HTTPMethods);
          const url = `${fill(route.url, values)}${search}`;
          const requestHeaders: Record<string, string> = { ...extra };
          if (token !== undefined) requestHeaders.authorization = token;
          let response: LightMyRequestResponse;
          try {
            response = await app.inject({
              method: verb,
              url,
              headers: requestHeaders,
              ...(body === undefined || verb === "GET" || verb === "HEAD" ? {} : { payload: body }),
            });
          } catch (error) {
            // inject() refuses what no HTTP client could send (a URL it cannot parse): not the server's doing.
            if ((error as { code?: string }).code === "ERR_INVALID_URL") return;
            throw error;
          }
          const found = problem(response, verb);
          if (found)
            throw new Error(
              `${found}: ${verb} ${url} ${JSON.stringify(requestHeaders)} → ${response.statusCode} ${response.body.slice(0, 300)}`,
            );
        },
      ),
      { numRuns: RUNS },
    );
    expect(sent).toBeGreaterThanOrEqual(RUNS);
    const health = await app.inject({ method: "GET", url: "/healthz" });
    expect(health.statusCode).toBe(200);
    expect(running.logs.join("")).not.toContain('"level":50');
  }, 120_000);
});
