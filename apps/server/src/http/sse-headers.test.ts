import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { createLazyEventStream } from "./sse.js";

describe("lazy event stream headers", () => {
  it("refuses a header value HTTP cannot carry when the stream is created, before any work or event", async () => {
    const app = Fastify();
    let workRan = false;
    app.post("/stream", async (_request, reply) => {
      const stream = createLazyEventStream(reply, { "x-almanac-session": "api:default:api:张三" });
      workRan = true;
      stream.send({ late: true });
      stream.end();
      return reply;
    });
    const response = await app.inject({ method: "POST", url: "/stream" });
    // The route's error handler answers normally: a stream already taken over could only be dropped.
    expect(response.statusCode).toBe(500);
    expect(response.headers["content-type"]).toMatch(/json/);
    expect(workRan).toBe(false);
    await app.close();
  });
});
