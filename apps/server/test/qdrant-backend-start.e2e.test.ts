import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./test-server.js";

// The Qdrant backend is imported only when it is configured (the client and its HTTP stack stay out of
// an embedded-index server's memory): this checks that the on-demand import still gives the configured backend.

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe("the Qdrant backend, loaded when configured", () => {
  it("starts with ALMANAC_INDEX_BACKEND=qdrant and answers from the Qdrant index (here: that Qdrant is down)", async () => {
    running = await startTestServer({
      env: {
        ALMANAC_INDEX_BACKEND: "qdrant",
        ALMANAC_QDRANT_URL: "http://127.0.0.1:9",
        ALMANAC_EMBEDDING_BASE_URL: "http://127.0.0.1:9/v1",
        ALMANAC_EMBEDDING_MODEL: "scripted-embedding",
        ALMANAC_EMBEDDING_DIMENSIONS: "64",
      },
    });
    // The index answers from Qdrant, which is down: the error names it (the SQLite index would answer 200).
    const response = await running.api("/api/memory/index");
    expect(response.status).toBe(502);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("index.unavailable");
    expect(body.error.message).toContain("Qdrant at http://127.0.0.1:9");
  });
});
