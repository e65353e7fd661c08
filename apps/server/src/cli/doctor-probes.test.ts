import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { type EndpointProbe, probeChatModel, probeEmbeddings } from "./doctor-probes.js";

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A fake provider endpoint on a random port; returns its `/v1` base URL. */
async function fakeProvider(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/v1`;
}

const reply = (response: ServerResponse, status: number, body: unknown) =>
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));

const probe = (baseUrl: string, overrides: Partial<EndpointProbe> = {}): EndpointProbe => ({
  name: "model",
  baseUrl,
  model: "tiny",
  apiKey: "sk-secret-1234",
  apiKeyVariable: "ALMANAC_MODEL_API_KEY",
  modelVariable: "ALMANAC_MODEL_NAME",
  baseUrlVariable: "ALMANAC_MODEL_BASE_URL",
  fetch,
  ...overrides,
});

describe("model probe", () => {
  it("reaches an endpoint whose URL carries a user and password, as Basic authorization, and never prints them", async () => {
    const seen: Array<string | undefined> = [];
    const baseUrl = await fakeProvider((request, response) => {
      seen.push(request.headers.authorization);
      reply(response, 200, { data: [{ id: "tiny" }] });
    });
    const withPassword = baseUrl.replace("http://", "http://almanac:p%40ss-word@");
    const result = await probeChatModel(probe(withPassword, { apiKey: undefined }));
    expect(result.status).toBe("ok");
    expect(seen).toEqual([`Basic ${Buffer.from("almanac:p@ss-word").toString("base64")}`]);
    expect(JSON.stringify(result)).not.toContain("p%40ss-word");
    expect(JSON.stringify(result)).not.toContain("p@ss-word");
  });

  it("falls back to a one-token chat completion when /models is not served", async () => {
    const paths: string[] = [];
    const baseUrl = await fakeProvider((request, response) => {
      paths.push(`${request.method} ${request.url}`);
      if (request.url === "/v1/models") return reply(response, 404, { error: { message: "nope" } });
      reply(response, 200, { choices: [{ message: { role: "assistant", content: "p" } }] });
    });
    const result = await probeChatModel(probe(baseUrl));
    expect(result).toMatchObject({ status: "ok", message: expect.stringContaining("one-token test") });
    expect(paths).toEqual(["GET /v1/models", "POST /v1/chat/completions"]);
  });

  it("warns when the endpoint does not list the configured model", async () => {
    const baseUrl = await fakeProvider((_request, response) =>
      reply(response, 200, { data: [{ id: "other-a" }, { id: "other-b" }] }),
    );
    const result = await probeChatModel(probe(baseUrl));
    expect(result).toMatchObject({ status: "warn" });
    expect(result.hint).toContain("other-a, other-b");
  });

  it("blanks out the key when the provider echoes it in an error", async () => {
    const baseUrl = await fakeProvider((request, response) => {
      if (request.url === "/v1/models") return reply(response, 404, {});
      reply(response, 400, { error: { message: "bad request for key sk-secret-1234" } });
    });
    const result = await probeChatModel(probe(baseUrl));
    expect(result.status).toBe("fail");
    expect(JSON.stringify(result)).not.toContain("sk-secret-1234");
  });

  it("names the host when the connection is refused", async () => {
    const baseUrl = await fakeProvider(() => {});
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    const result = await probeChatModel(probe(baseUrl));
    expect(result).toMatchObject({ status: "fail" });
    expect(result.message).toBe(`cannot reach ${new URL(baseUrl).host} (connection refused)`);
  });
});

describe("embeddings probe", () => {
  it("classifies 401 as a refused key naming the embedding variable", async () => {
    const baseUrl = await fakeProvider((_request, response) =>
      reply(response, 401, { error: { message: "no" } }),
    );
    const result = await probeEmbeddings(probe(baseUrl, { apiKeyVariable: "ALMANAC_EMBEDDING_API_KEY" }));
    expect(result).toMatchObject({
      status: "fail",
      hint: "check ALMANAC_EMBEDDING_API_KEY (the key is not shown)",
    });
  });
});
