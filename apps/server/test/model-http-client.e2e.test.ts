import { type FakeProxy, script, startFakeProxy, startScriptedLlm } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, TEST_MODEL_KEY, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
let proxy: FakeProxy | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  await proxy?.close();
  proxy = undefined;
});

describe("model requests behind a proxy", () => {
  it("go through HTTP_PROXY by default, with its credentials, which never reach the log", async () => {
    const llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
    const port = Number(new URL(llm.baseURL).port);
    // `model.invalid` has no DNS entry: only a request through the proxy reaches the scripted model.
    proxy = await startFakeProxy({
      resolve: (host, requested) =>
        host === "model.invalid" ? { host: "127.0.0.1", port } : { host, port: requested },
    });
    const proxyUrl = proxy.url.replace("http://", "http://proxy-user:proxy-pass-2f9d@");
    running = await startTestServer({
      llm,
      env: {
        ALMANAC_MODEL_BASE_URL: `http://model.invalid:${port}/v1`,
        ALMANAC_MODEL_NAME: "scripted-model",
        ALMANAC_MODEL_CONTEXT_WINDOW: "32000",
        HTTP_PROXY: proxyUrl,
      },
    });
    llm.setFallback(() => script.text("through the proxy"));
    const answered = await running.client.chat.completions.create({
      model: "almanac",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(answered.choices[0]?.message.content).toBe("through the proxy");
    expect(proxy.requests()[0]).toMatchObject({ target: `model.invalid:${port}` });
    const info = await (await running.api("/api/info")).text();
    expect(info).not.toContain("proxy-pass-2f9d");
    expect(running.logs.join("")).not.toContain("proxy-pass-2f9d");
    await running.close();
    running = undefined;
    await llm.close();
  });

  it("reach a model on loopback directly, and hosts in NO_PROXY directly", async () => {
    proxy = await startFakeProxy();
    running = await startTestServer({ env: { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url } });
    running.llm.setFallback(() => script.text("direct"));
    await running.client.chat.completions.create({
      model: "almanac",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(running.llm.chatRequests()).toHaveLength(1);
    expect(proxy.requests()).toEqual([]);
  });
});
