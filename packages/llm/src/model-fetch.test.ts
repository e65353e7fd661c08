import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type FakeProxy, type ScriptedLlm, script, startFakeProxy, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModelFetch } from "./model-fetch.js";
import { createOpenAIChatModel } from "./openai-chat-model.js";

let llm: ScriptedLlm;
let proxy: FakeProxy;
beforeEach(async () => {
  llm = await startScriptedLlm();
  llm.setFallback(() => script.text("through"));
  const port = Number(new URL(llm.baseURL).port);
  // `model.invalid` has no DNS entry: only a request through the proxy reaches the model.
  proxy = await startFakeProxy({
    resolve: (host, requested) =>
      host === "model.invalid" ? { host: "127.0.0.1", port } : { host, port: requested },
  });
});
afterEach(async () => {
  await proxy.close();
  await llm.close();
});

const ask = (baseURL: string, proxySettings: Parameters<typeof createOpenAIChatModel>[0]["proxy"]) =>
  createOpenAIChatModel({ baseURL, apiKey: "k", model: "m", maxRetries: 0, proxy: proxySettings }).complete({
    messages: [{ id: "u", role: "user", timestamp: 0, content: [{ type: "text", text: "hi" }], marks: [] }],
  });

describe("model requests and proxies", () => {
  it("go through the configured proxy, with its credentials, and reuse the connection", async () => {
    const port = new URL(llm.baseURL).port;
    const proxyUrl = proxy.url.replace("http://", "http://user:s3cret@");
    const model = createOpenAIChatModel({
      baseURL: `http://model.invalid:${port}/v1`,
      apiKey: "k",
      model: "m",
      maxRetries: 0,
      proxy: { httpProxy: proxyUrl },
    });
    const message = {
      id: "u",
      role: "user" as const,
      timestamp: 0,
      content: [{ type: "text" as const, text: "hi" }],
      marks: [],
    };
    for (let index = 0; index < 3; index += 1) {
      const answer = await model.complete({ messages: [message] });
      expect(answer.message.content).toEqual([{ type: "text", text: "through" }]);
    }
    const requests = proxy.requests();
    expect(requests.length).toBeGreaterThan(0);
    // Three requests, fewer tunnels: the connection through the proxy is kept alive.
    expect(requests.length).toBeLessThan(3);
    expect(requests[0]).toMatchObject({
      target: `model.invalid:${port}`,
      authorization: `Basic ${Buffer.from("user:s3cret").toString("base64")}`,
    });
  });

  it("go directly to hosts listed in noProxy, and directly when no proxy is set", async () => {
    await ask(llm.baseURL, { httpProxy: proxy.url, noProxy: "127.0.0.1" });
    await ask(llm.baseURL, {});
    expect(proxy.requests()).toEqual([]);
    expect(llm.chatRequests()).toHaveLength(2);
  });
});

describe("createModelFetch", () => {
  let server: Server;
  let base: string;
  let received: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[];
  beforeEach(async () => {
    received = [];
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received.push({
          method: req.method ?? "",
          url: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        if (req.url === "/moved") {
          res.writeHead(307, { location: "/v1/answer" }).end();
        } else if (req.url === "/empty") {
          res.writeHead(204).end();
        } else if (req.url === "/slow") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write("data: first\n\n");
        } else {
          res.setHeader("x-many", ["one", "two"]);
          res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ ok: "ünïcode" }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("sends a text body whole with its headers and answers with a standard Response", async () => {
    const modelFetch = createModelFetch();
    const body = JSON.stringify({ text: "€".repeat(20_000) });
    const response = await modelFetch(`${base}/v1/answer`, {
      method: "POST",
      headers: new Headers({ "content-type": "application/json", authorization: "Bearer k" }),
      body,
    });
    expect(response).toBeInstanceOf(Response);
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.headers.get("x-many")).toBe("one, two");
    expect(await response.json()).toEqual({ ok: "ünïcode" });
    expect(received[0]).toMatchObject({ method: "POST", body });
    expect(received[0]?.headers).toMatchObject({
      "content-type": "application/json",
      authorization: "Bearer k",
      "content-length": String(Buffer.byteLength(body)),
    });
  });

  it("follows a redirect as fetch does, and gives an empty body for 204", async () => {
    const modelFetch = createModelFetch();
    const moved = await modelFetch(`${base}/moved`, { method: "POST", body: "{}" });
    expect(moved.status).toBe(201);
    expect(received.map((request) => request.url)).toEqual(["/moved", "/v1/answer"]);
    const empty = await modelFetch(`${base}/empty`, { method: "POST", body: "{}" });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it("ends a body being read when the request's signal fires", async () => {
    const modelFetch = createModelFetch();
    const controller = new AbortController();
    const response = await modelFetch(`${base}/slow`, {
      method: "POST",
      body: "{}",
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: first\n\n");
    controller.abort();
    await expect(reader.read()).rejects.toThrow();
  });

  it("sends a form built with the global FormData as multipart form data", async () => {
    const modelFetch = createModelFetch();
    const form = new FormData();
    form.append("file", new Blob(["voice"]), "note.ogg");
    const response = await modelFetch(`${base}/v1/audio`, { method: "POST", body: form });
    expect(response.status).toBe(201);
    expect(received[0]?.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(received[0]?.body).toContain("voice");
  });
});
