import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./cli.js";

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A fake Almanac admin API on a random port, speaking HTTP like the real one. */
async function fakeServer(handler: Handler): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function run(args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([]),
    env: { ALMANAC_ADMIN_TOKEN: "token-0123456789abcdef" },
    cwd: "/nonexistent-almanac-cwd",
  });
  return { code, stdout, stderr };
}

describe("almanac memory", () => {
  it("search prints path:start-end, date, score and snippet, passing the query and --max", async () => {
    const seen: string[] = [];
    const url = await fakeServer((request, response) => {
      seen.push(`${request.method} ${request.url} ${request.headers.authorization}`);
      sendJson(response, 200, {
        mode: "fulltext",
        note: "embeddings not configured",
        results: [
          {
            path: "MEMORY.md",
            startLine: 3,
            endLine: 5,
            score: 0.91234,
            snippet: "Deploy key\nis K-77",
            date: "2026-11-30",
            source: "memory",
          },
        ],
      });
    });
    const result = await run(["memory", "search", "deploy", "key", "--max", "3", "--url", url]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("MEMORY.md:3-5  2026-11-30  0.912  Deploy key is K-77\n");
    expect(result.stderr).toBe("note: embeddings not configured\n");
    expect(seen).toEqual(["GET /api/memory/search?q=deploy+key&maxResults=3 Bearer token-0123456789abcdef"]);
  });

  it("search rejects a --max that is not a positive whole number", async () => {
    const result = await run(["memory", "search", "x", "--max", "lots", "--url", "http://127.0.0.1:9"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--max must be a positive whole number");
  });

  it("reindex follows a running rebuild until idle, printing plain progress lines when not a terminal", async () => {
    const requests: string[] = [];
    let polls = 0;
    const url = await fakeServer((request, response) => {
      requests.push(`${request.method} ${request.url}`);
      if (request.method === "POST") return sendJson(response, 409, { started: false });
      polls += 1;
      if (polls < 3) {
        const phase = polls === 1 ? "index" : "embed";
        return sendJson(response, 200, {
          state: "reindexing",
          progress: { phase, done: polls * 10, total: 30 },
        });
      }
      sendJson(response, 200, { state: "idle", files: 4, chunks: 30, embeddedChunks: 20, pendingChunks: 10 });
    });
    const result = await runCli(["memory", "reindex", "--url", url], {
      stdout: { write: (text: string) => requests.push(`out ${text.trim()}`) },
      stderr: { write: (text: string) => requests.push(`err ${text.trim()}`) },
      stdin: Readable.from([]),
      env: { ALMANAC_ADMIN_TOKEN: "token-0123456789abcdef" },
      cwd: "/nonexistent-almanac-cwd",
    });
    expect(result).toBe(0);
    expect(requests).toEqual([
      "POST /api/memory/index/reindex",
      "err a reindex is already running; following it",
      "GET /api/memory/index",
      "out indexing 10/30",
      "GET /api/memory/index",
      "out embedding 20/30",
      "GET /api/memory/index",
      "out reindexed: 4 files, 30 chunks, 20 embedded",
    ]);
  });

  it("reindex exits 1 with the index's error when the rebuild failed", async () => {
    const url = await fakeServer((request, response) =>
      request.method === "POST"
        ? sendJson(response, 202, { started: true })
        : sendJson(response, 200, { state: "idle", files: 0, chunks: 0, lastError: "disk full" }),
    );
    const result = await run(["memory", "reindex", "--url", url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("the rebuild failed: disk full");
  });

  it("says the server lacks the route when it answers route.not_found", async () => {
    const url = await fakeServer((request, response) =>
      sendJson(response, 404, {
        error: {
          message: `No route GET ${request.url}`,
          type: "invalid_request_error",
          code: "route.not_found",
        },
      }),
    );
    const result = await run(["memory", "search", "x", "--url", url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("does not offer GET /api/memory/search");
  });
});
