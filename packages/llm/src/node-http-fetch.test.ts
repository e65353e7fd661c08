import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNodeHttpFetch } from "./node-http-fetch.js";

let server: Server;
let base: string;
const routes = new Map<string, (request: IncomingMessage, response: ServerResponse, body: string) => void>();

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      body += chunk;
    });
    request.on("end", () => routes.get(request.url ?? "")?.(request, response, body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("createNodeHttpFetch", () => {
  const nodeFetch = createNodeHttpFetch();

  it("sends method, headers and body, and answers like fetch (status, headers, JSON)", async () => {
    routes.set("/echo", (request, response, body) => {
      response.writeHead(201, { "content-type": "application/json", "x-request-id": "req-1" });
      response.end(JSON.stringify({ method: request.method, auth: request.headers.authorization, body }));
    });
    const response = await nodeFetch(`${base}/echo`, {
      method: "POST",
      headers: new Headers({ authorization: "Bearer k", "content-type": "application/json" }),
      body: '{"a":"é"}',
    });
    expect(response.status).toBe(201);
    expect(response.headers.get("x-request-id")).toBe("req-1");
    expect(await response.json()).toEqual({ method: "POST", auth: "Bearer k", body: '{"a":"é"}' });
  });

  it("reads a whole body as fetch does: once, as text, JSON, bytes, a blob, a clone or a stream", async () => {
    const text = '{"word":"grüße"}';
    routes.set("/whole", (_request, response) => {
      response.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      response.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    });
    const fromFetch = await fetch(`${base}/whole`);
    const response = await nodeFetch(`${base}/whole`);
    expect(response).toBeInstanceOf(Response);
    expect(response.bodyUsed).toBe(false);
    const copy = response.clone();
    expect(await response.text()).toBe(await fromFetch.text());
    expect(response.bodyUsed).toBe(true);
    await expect(response.json()).rejects.toThrow(TypeError);
    await expect(response.arrayBuffer()).rejects.toThrow(TypeError);
    expect(() => response.clone()).toThrow(TypeError);
    expect(await copy.json()).toEqual({ word: "grüße" });

    const bytes = new Uint8Array(await (await nodeFetch(`${base}/whole`)).arrayBuffer());
    expect(Buffer.from(bytes).toString("utf8", 3)).toBe(text);
    expect((await (await nodeFetch(`${base}/whole`)).bytes()).byteLength).toBe(bytes.byteLength);
    const blob = await (await nodeFetch(`${base}/whole`)).blob();
    expect(blob.type).toBe((await (await fetch(`${base}/whole`)).blob()).type);
    expect(blob.size).toBe(bytes.byteLength);

    const streamed = await nodeFetch(`${base}/whole`);
    const chunks: Uint8Array[] = [];
    const reader = (streamed.body as ReadableStream<Uint8Array>).getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value);
    expect(Buffer.concat(chunks).equals(Buffer.from(bytes))).toBe(true);
    expect(streamed.bodyUsed).toBe(true);
    await expect(streamed.text()).rejects.toThrow(TypeError);
  });

  it("decodes a gzip body and gives a 204 no body", async () => {
    routes.set("/gzip", (_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      response.end(gzipSync('{"ok":true}'));
    });
    routes.set("/empty", (_request, response) => {
      response.writeHead(204);
      response.end();
    });
    expect(await (await nodeFetch(`${base}/gzip`)).json()).toEqual({ ok: true });
    const empty = await nodeFetch(`${base}/empty`, { method: "DELETE" });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it("streams an event stream as it arrives", async () => {
    let finish: (() => void) | undefined;
    routes.set("/events", (_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write("data: one\n\n");
      finish = () => response.end("data: two\n\n");
    });
    const response = await nodeFetch(`${base}/events`);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("data: one\n\n");
    finish?.();
    const rest: string[] = [];
    for (let next = await reader.read(); !next.done; next = await reader.read())
      rest.push(new TextDecoder().decode(next.value));
    expect(rest.join("")).toBe("data: two\n\n");
  });

  it("rejects with the signal's reason when aborted before or during the request", async () => {
    routes.set("/hang", () => {});
    const before = new AbortController();
    before.abort(new Error("stop now"));
    await expect(nodeFetch(`${base}/hang`, { signal: before.signal })).rejects.toThrow("stop now");
    const during = new AbortController();
    const pending = nodeFetch(`${base}/hang`, { signal: during.signal });
    setTimeout(() => during.abort(), 20);
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
  });

  it("rejects with a connection error when the socket dies mid-body or cannot connect", async () => {
    routes.set("/cut", (_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      response.write('{"partial":');
      setTimeout(() => response.socket?.destroy(), 10);
    });
    await expect(nodeFetch(`${base}/cut`)).rejects.toMatchObject({ code: "ECONNRESET" });
    await expect(nodeFetch("http://127.0.0.1:1/")).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it("sends a request again, once, when the kept-alive connection it was written to had just been closed", async () => {
    // A server that closes a kept-alive connection as the next request arrives on it, without reading it: what a
    // client sees when the server's idle timeout runs out just as the connection is reused.
    const seen: string[] = [];
    const served = new WeakSet<object>();
    const closing = createServer((request, response) => {
      const socket = request.socket;
      seen.push(served.has(socket) ? "reused" : "new");
      if (served.has(socket) && request.url === "/closed-while-idle") {
        socket.destroy();
        return;
      }
      served.add(socket);
      if (request.url === "/reset-on-new") {
        socket.destroy();
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ url: request.url }));
    });
    await new Promise<void>((resolve) => closing.listen(0, "127.0.0.1", resolve));
    const at = `http://127.0.0.1:${(closing.address() as AddressInfo).port}`;
    const ownFetch = createNodeHttpFetch();
    try {
      expect(await (await ownFetch(`${at}/first`, { method: "POST", body: "{}" })).json()).toEqual({
        url: "/first",
      });
      const again = await ownFetch(`${at}/closed-while-idle`, { method: "POST", body: "{}" });
      expect(await again.json()).toEqual({ url: "/closed-while-idle" });
      expect(seen).toEqual(["new", "reused", "new"]);
      // A connection reset on a new connection is the server's doing, not an idle close: not sent again.
      seen.length = 0;
      const fresh = createNodeHttpFetch();
      await expect(fresh(`${at}/reset-on-new`, { method: "POST", body: "{}" })).rejects.toMatchObject({
        code: "ECONNRESET",
      });
      expect(seen).toEqual(["new"]);
    } finally {
      closing.closeAllConnections();
      await new Promise((resolve) => closing.close(resolve));
    }
  });

  it("closes a kept-alive connection a second before the server's Keep-Alive hint says it will", async () => {
    const connections: string[] = [];
    const served = new WeakSet<object>();
    const hinting = createServer((request, response) => {
      connections.push(served.has(request.socket) ? "reused" : "new");
      served.add(request.socket);
      response.writeHead(200, { "content-type": "application/json" });
      response.end("{}");
    });
    // Node's server closes connections idle for 2 s and says so: `Keep-Alive: timeout=2`.
    hinting.keepAliveTimeout = 2_000;
    await new Promise<void>((resolve) => hinting.listen(0, "127.0.0.1", resolve));
    const at = `http://127.0.0.1:${(hinting.address() as AddressInfo).port}`;
    const ownFetch = createNodeHttpFetch();
    try {
      await (await ownFetch(`${at}/a`)).json();
      await (await ownFetch(`${at}/b`)).json();
      // Idle for 1.4 s: past the hint less a second, before the server's own close.
      await new Promise((resolve) => setTimeout(resolve, 1_400));
      await (await ownFetch(`${at}/c`)).json();
      expect(connections).toEqual(["new", "reused", "new"]);
    } finally {
      hinting.closeAllConnections();
      await new Promise((resolve) => hinting.close(resolve));
    }
  });
});
