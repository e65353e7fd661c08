import { type FakeProxy, type ScriptedLlm, script, startFakeProxy, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
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
