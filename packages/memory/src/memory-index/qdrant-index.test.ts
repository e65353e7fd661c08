import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { QdrantClient } from "@qdrant/js-client-rest";
import { describe, expect, it } from "vitest";
import { describeBackendContract, fileFor, indexChunks } from "./backend-contract.js";
import { createQdrantIndex } from "./qdrant-index.js";

const qdrantUrl = process.env.QDRANT_URL;

describeBackendContract(
  qdrantUrl === undefined
    ? "Qdrant backend contract (skipped: set QDRANT_URL to run against a real Qdrant)"
    : `Qdrant backend contract against ${qdrantUrl}`,
  async () => {
    const url = qdrantUrl!;
    const apiKey = process.env.QDRANT_API_KEY;
    const collection = `almanac_contract_${randomUUID().replaceAll("-", "")}`;
    return {
      open: async ({ dimensions }) =>
        createQdrantIndex({ url, collection, dimensions, ...(apiKey === undefined ? {} : { apiKey }) }),
      dispose: async () => {
        const client = new QdrantClient({
          url,
          checkCompatibility: false,
          ...(apiKey === undefined ? {} : { apiKey }),
        });
        await client.deleteCollection(collection);
      },
    };
  },
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
