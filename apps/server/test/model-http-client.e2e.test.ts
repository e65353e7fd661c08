import { script } from "@almanac/testkit";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await running?.close();
  running = undefined;
});

const PROXY_WITH_CREDENTIALS = "http://proxy-user:proxy-pass-2f9d@proxy.invalid:3128";

describe("how model requests go out", () => {
  it("warns at start when a proxy is set that model requests bypass, naming the variable but not its value", async () => {
    running = await startTestServer({ env: { HTTPS_PROXY: PROXY_WITH_CREDENTIALS } });
    running.llm.setFallback(() => script.text("hi"));
    const answered = await running.client.chat.completions.create({
      model: "almanac",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(answered.choices[0]?.message.content).toBeTruthy();
    const warning = running.logs.find((line) => line.includes("ALMANAC_MODEL_HTTP_CLIENT=fetch"));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning ?? "{}")).toMatchObject({ level: 40, proxy: ["HTTPS_PROXY"] });
    expect(running.logs.join("")).not.toContain("proxy-pass-2f9d");
  });

  it("sends model requests through Node's global fetch with ALMANAC_MODEL_HTTP_CLIENT=fetch, without the warning", async () => {
    const globalFetch = vi.spyOn(globalThis, "fetch");
    running = await startTestServer({
      env: { HTTPS_PROXY: PROXY_WITH_CREDENTIALS, ALMANAC_MODEL_HTTP_CLIENT: "fetch" },
    });
    const { llm } = running;
    llm.setFallback(() => script.text("hi"));
    await running.client.chat.completions.create({
      model: "almanac",
      messages: [{ role: "user", content: "hello" }],
    });
    const toModel = globalFetch.mock.calls.filter(([input]) => String(input).startsWith(llm.baseURL));
    expect(toModel.length).toBeGreaterThan(0);
    expect(running.logs.some((line) => line.includes("ALMANAC_MODEL_HTTP_CLIENT=fetch"))).toBe(false);
  });

  it("keeps model requests off the global fetch by default", async () => {
    const globalFetch = vi.spyOn(globalThis, "fetch");
    running = await startTestServer();
    const { llm } = running;
    llm.setFallback(() => script.text("hi"));
    await running.client.chat.completions.create({
      model: "almanac",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(llm.chatRequests().length).toBeGreaterThan(0);
    expect(globalFetch.mock.calls.filter(([input]) => String(input).startsWith(llm.baseURL))).toEqual([]);
  });
});
