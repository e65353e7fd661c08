import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type FakeQdrant, QDRANT_SCHEMA_VERSION, startFakeQdrant } from "@almanac/testkit/qdrant";
import { QdrantClient } from "@qdrant/js-client-rest";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type BackendHarness,
  describeBackendContract,
  fileFor,
  indexChunks,
} from "../test/backend-contract.js";
import { createQdrantIndex } from "./qdrant-index.js";

const qdrantUrl = process.env.QDRANT_URL;

/** Harness over one Qdrant: a fresh collection per test, deleted afterwards. */
function qdrantHarness(url: string, apiKey?: string): BackendHarness {
  const collection = `almanac_contract_${randomUUID().replaceAll("-", "")}`;
  const auth = apiKey === undefined ? {} : { apiKey };
  return {
    open: async ({ dimensions }) => createQdrantIndex({ url, collection, dimensions, ...auth }),
    dispose: async () => {
      await new QdrantClient({ url, checkCompatibility: false, ...auth }).deleteCollection(collection);
    },
  };
}

// Every run: against the fake Qdrant, which checks each request against Qdrant's published schema.
let fake: FakeQdrant;
beforeAll(async () => {
  fake = await startFakeQdrant();
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  expect(fake.violations, "requests the published Qdrant schema refuses").toEqual([]);
});
describeBackendContract(
  `Qdrant backend contract against the fake Qdrant (schema ${QDRANT_SCHEMA_VERSION})`,
  async () => qdrantHarness(fake.url),
);

// And against a real Qdrant when one is given (see docs/memory-search.md).
describeBackendContract(
  qdrantUrl === undefined
    ? "Qdrant backend contract against a real Qdrant (skipped: set QDRANT_URL)"
    : `Qdrant backend contract against ${qdrantUrl}`,
  async () => qdrantHarness(qdrantUrl!, process.env.QDRANT_API_KEY),
  { skip: qdrantUrl === undefined },
);

/** A URL where nothing listens: a port we bound and released. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe("createQdrantIndex without a reachable Qdrant", () => {
  it("fails with a retryable index.unavailable error naming the URL", async () => {
    const url = await closedPortUrl();
    const index = createQdrantIndex({ url, collection: "memory", dimensions: 8, timeoutMs: 2000 });
    const attempt = index.upsertFile(fileFor("MEMORY.md", "x"), indexChunks("MEMORY.md", "Hello.\n"));
    await expect(attempt).rejects.toMatchObject({ code: "index.unavailable", isRetryable: true });
    await expect(index.search({ terms: ["hello"], limit: 5 })).rejects.toThrow(url);
  });

  it("maps a failing server to index.unavailable and a refusal to index.request_failed", async () => {
    let status = 503;
    const server = createServer((_request, response) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify({ status: { error: "nope" }, time: 0 }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const index = createQdrantIndex({
        url: `http://127.0.0.1:${port}`,
        collection: "memory",
        dimensions: 8,
      });
      await expect(index.stats()).rejects.toMatchObject({
        code: "index.unavailable",
        isRetryable: true,
        status: 503,
      });
      status = 403;
      await expect(index.stats()).rejects.toMatchObject({
        code: "index.request_failed",
        isRetryable: false,
        status: 403,
      });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("createQdrantIndex when Qdrant goes down and comes back", () => {
  it("fails with index.unavailable while it is down and serves the same points once it is back", async () => {
    const index = createQdrantIndex({
      url: fake.url,
      collection: "down_and_up",
      dimensions: 8,
      timeoutMs: 2000,
    });
    await index.upsertFile(fileFor("MEMORY.md", "x"), indexChunks("MEMORY.md", "Kestrel sightings.\n"));
    await fake.stop();
    try {
      await expect(index.search({ terms: ["kestrel"], limit: 5 })).rejects.toMatchObject({
        code: "index.unavailable",
        isRetryable: true,
      });
      await expect(index.stats()).rejects.toThrow(fake.url);
    } finally {
      await fake.start();
    }
    expect((await index.search({ terms: ["kestrel"], limit: 5 })).map((hit) => hit.chunk.path)).toEqual([
      "MEMORY.md",
    ]);
  });
});
