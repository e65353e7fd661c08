import { readFileSync } from "node:fs";
import { QdrantClient } from "@qdrant/js-client-rest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type FakeQdrant, startFakeQdrant } from "./fake-qdrant.js";
import { QDRANT_SCHEMA_VERSION } from "./qdrant-schema.js";

const A = "00000000-0000-4000-8000-00000000000a";
const B = "00000000-0000-4000-8000-00000000000b";
const C = "00000000-0000-4000-8000-00000000000c";

async function raw(fake: FakeQdrant, method: string, path: string, body?: unknown) {
  const response = await fetch(`${fake.url}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("fake Qdrant", () => {
  let fake: FakeQdrant;
  let client: QdrantClient;

  beforeEach(async () => {
    fake = await startFakeQdrant();
    client = new QdrantClient({ url: fake.url, checkCompatibility: false });
    await client.createCollection("notes", {
      vectors: { dense: { size: 3, distance: "Cosine" } },
      sparse_vectors: { text: { modifier: "idf" } },
    });
    await client.upsert("notes", {
      wait: true,
      points: [
        {
          id: A,
          vector: { dense: [1, 0, 0], text: { indices: [1, 2], values: [1, 1] } },
          payload: { path: "a.md", n: 1, tags: ["x", "y"] },
        },
        {
          id: B,
          vector: { dense: [0, 1, 0], text: { indices: [2], values: [1] } },
          payload: { path: "b.md", n: 5 },
        },
        {
          id: C,
          vector: { text: { indices: [3], values: [2] } },
          payload: { path: "c.md", n: 9, shared: null },
        },
      ],
    });
  });

  afterEach(async () => {
    await fake.close();
  });

  it("answers in Qdrant's envelope and accepts what the client sends", async () => {
    const info = await raw(fake, "GET", "/collections/notes");
    expect(info).toMatchObject({ status: 200, body: { status: "ok", result: { points_count: 3 } } });
    expect(typeof info.body.time).toBe("number");
    expect(await client.collectionExists("notes")).toEqual({ exists: true });
    expect(fake.violations).toEqual([]);
  });

  it("refuses a request that breaks the published schema with 400 and records it", async () => {
    const wrongDistance = await raw(fake, "PUT", "/collections/other", {
      vectors: { size: 3, distance: "cosine" },
    });
    expect(wrongDistance.status).toBe(400);
    expect(wrongDistance.body.status).toMatchObject({
      error: expect.stringContaining("Format error in JSON body"),
    });
    const unknownFilterKey = await raw(fake, "POST", "/collections/notes/points/count", {
      filter: { mustt: [] },
    });
    expect(unknownFilterKey.status).toBe(400);
    const badId = await raw(fake, "PUT", "/collections/notes/points", {
      points: [{ id: "not-a-uuid", vector: {} }],
    });
    expect(badId.status).toBe(400);
    const badQuery = await raw(fake, "PUT", "/collections/notes/points?wait=maybe", { points: [] });
    expect(badQuery.status).toBe(400);
    const noSuchRoute = await raw(fake, "POST", "/collections/notes/points/search/everything", {});
    expect(noSuchRoute.status).toBe(404);
    expect(fake.violations).toHaveLength(5);
  });

  it("answers semantic errors as Qdrant does", async () => {
    await expect(client.getCollection("missing")).rejects.toMatchObject({ status: 404 });
    const wrongSize = await raw(fake, "PUT", "/collections/notes/points", {
      points: [{ id: A, vector: { dense: [1, 2] } }],
    });
    expect(wrongSize).toMatchObject({
      status: 400,
      body: { status: { error: expect.stringContaining("expected dim: 3, got 2") } },
    });
    expect(fake.violations).toEqual([]);
  });

  it("filters with must, should, must_not, match value/any, range, is_empty, has_id and has_vector", async () => {
    const paths = async (filter: Record<string, unknown>) =>
      (await client.scroll("notes", { filter, with_payload: ["path"] })).points.map(
        (point) => point.payload?.path,
      );
    expect(await paths({ must: [{ key: "tags", match: { value: "y" } }] })).toEqual(["a.md"]);
    expect(await paths({ must: [{ key: "path", match: { any: ["b.md", "c.md"] } }] })).toEqual([
      "b.md",
      "c.md",
    ]);
    expect(await paths({ must: [{ key: "n", range: { gt: 1, lte: 9 } }] })).toEqual(["b.md", "c.md"]);
    expect(await paths({ should: [{ key: "n", match: { value: 1 } }, { has_id: [C] }] })).toEqual([
      "a.md",
      "c.md",
    ]);
    expect(await paths({ must_not: [{ has_vector: "dense" }] })).toEqual(["c.md"]);
    expect(await paths({ must: [{ is_empty: { key: "shared" } }] })).toEqual(["a.md", "b.md", "c.md"]);
    expect(await paths({ must: [{ is_empty: { key: "tags" } }] })).toEqual(["b.md", "c.md"]);
    expect(await paths({ must: [{ must_not: [{ key: "path", match: { value: "a.md" } }] }] })).toEqual([
      "b.md",
      "c.md",
    ]);
    expect((await client.count("notes", { filter: { must: [{ key: "n", range: { gte: 5 } }] } })).count).toBe(
      2,
    );
  });

  it("pages a scroll by id and returns the next offset", async () => {
    const first = await client.scroll("notes", { limit: 2, with_payload: false });
    expect(first.points.map((point) => point.id)).toEqual([A, B]);
    expect(first.next_page_offset).toBe(C);
    const second = await client.scroll("notes", { limit: 2, offset: C });
    expect(second.points.map((point) => point.id)).toEqual([C]);
    expect(second.next_page_offset).toBeNull();
  });

  it("scores dense queries by cosine, sparse ones by IDF-weighted dot product, and fuses with RRF", async () => {
    const dense = await client.query("notes", { query: [1, 1, 0], using: "dense", limit: 5 });
    expect(dense.points.map((point) => point.id)).toEqual([A, B]);
    expect(dense.points[0]!.score).toBeCloseTo(Math.SQRT1_2, 5);
    const sparse = await client.query("notes", { query: { indices: [1, 2], values: [1, 1] }, using: "text" });
    // Index 1 is rarer than 2 (in 1 of 3 points against 2 of 3), so A outranks B; C shares no index.
    expect(sparse.points.map((point) => point.id)).toEqual([A, B]);
    const idf = (n: number) => Math.log((3 - n + 0.5) / (n + 0.5) + 1);
    expect(sparse.points[0]!.score).toBeCloseTo(idf(1) + idf(2), 5);
    const fused = await client.query("notes", {
      prefetch: [
        { query: [0, 1, 0], using: "dense", limit: 5 },
        { query: { indices: [3], values: [1] }, using: "text", limit: 5 },
      ],
      query: { fusion: "rrf" },
      with_vector: ["dense"],
    });
    expect(
      fused.points
        .slice(0, 2)
        .map((point) => point.id)
        .sort(),
    ).toEqual([B, C]);
    expect(fused.points[0]!.score).toBeCloseTo(0.5, 5);
    expect(fake.violations).toEqual([]);
  });

  it("updates and deletes vectors, sets payload and deletes points by filter or id", async () => {
    await client.updateVectors("notes", { wait: true, points: [{ id: C, vector: { dense: [0, 0, 2] } }] });
    const [point] = await client.retrieve("notes", { ids: [C], with_vector: true, with_payload: ["n"] });
    expect(point).toMatchObject({ payload: { n: 9 }, vector: { dense: [0, 0, 1] } });
    await client.deleteVectors("notes", {
      wait: true,
      vector: ["dense"],
      filter: { must: [{ key: "n", range: { lt: 6 } }] },
    });
    expect((await client.count("notes", { filter: { must: [{ has_vector: "dense" }] } })).count).toBe(1);
    await client.setPayload("notes", { wait: true, payload: { model: "m" }, points: [A] });
    expect((await client.retrieve("notes", { ids: [A] }))[0]?.payload).toMatchObject({
      path: "a.md",
      model: "m",
    });
    await client.delete("notes", {
      wait: true,
      filter: { must: [{ key: "path", match: { value: "a.md" } }] },
    });
    await client.delete("notes", { wait: true, points: [B] });
    expect((await client.count("notes", {})).count).toBe(1);
    expect(fake.violations).toEqual([]);
  });

  it("refuses without the API key when one is set, and goes down and up keeping its data", async () => {
    const guarded = await startFakeQdrant({ apiKey: "secret" });
    try {
      expect((await raw(guarded, "GET", "/collections/x/exists")).status).toBe(401);
      const authed = new QdrantClient({ url: guarded.url, apiKey: "secret", checkCompatibility: false });
      expect(await authed.collectionExists("x")).toEqual({ exists: false });
    } finally {
      await guarded.close();
    }
    await fake.stop();
    await expect(client.collectionExists("notes")).rejects.toThrow();
    await fake.start();
    expect((await client.count("notes", {})).count).toBe(3);
  });
});

describe("the fake Qdrant's schema version", () => {
  it("is the major.minor of the @qdrant/js-client-rest it is tested with", () => {
    const manifest = new URL("../../node_modules/@qdrant/js-client-rest/package.json", import.meta.url);
    const { version } = z.object({ version: z.string() }).parse(JSON.parse(readFileSync(manifest, "utf8")));
    expect(QDRANT_SCHEMA_VERSION).toBe(`v${version.split(".").slice(0, 2).join(".")}.x`);
  });
});
