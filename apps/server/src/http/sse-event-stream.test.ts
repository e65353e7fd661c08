import { createServer, type Server } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type EventStream, type EventStreamOptions, openEventStream } from "./sse.js";

let server: Server | undefined;
let client: Socket | undefined;
afterEach(async () => {
  client?.destroy();
  client = undefined;
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server?.closeAllConnections();
  server = undefined;
});

/** A real HTTP server whose only response is an event stream, and a raw client socket reading it. */
async function openStream(
  options: EventStreamOptions,
): Promise<{ stream: EventStream; received: () => string }> {
  let resolveStream: (stream: EventStream) => void = () => {};
  const opened = new Promise<EventStream>((resolve) => {
    resolveStream = resolve;
  });
  server = createServer((_request, response) => resolveStream(openEventStream(response, options)));
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  let text = "";
  client = connect(port, "127.0.0.1");
  client.setEncoding("utf8");
  client.on("data", (chunk: string) => {
    text += chunk;
  });
  client.write("GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n");
  return { stream: await opened, received: () => text };
}

/** Waits (up to 2 s) for what the socket delivers. */
async function until(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 400 && !condition(); attempt += 1)
    await new Promise((resolve) => setTimeout(resolve, 5));
  if (!condition()) throw new Error("condition not reached");
}

describe("event streams", () => {
  it("writes named events with their id and JSON data, and heartbeats while idle", async () => {
    const { stream, received } = await openStream({ heartbeatMs: 10, maxBufferedBytes: 1_000_000 });
    stream.send("turn-started", { sessionKey: "web:default:web:a" }, 7);
    await until(() => received().includes(": heartbeat"));
    const text = received();
    expect(text).toContain("content-type: text/event-stream");
    expect(text).toContain('id: 7\nevent: turn-started\ndata: {"sessionKey":"web:default:web:a"}\n\n');
  });

  it("ends with a close event giving the reason, and tells its listeners once", async () => {
    const { stream, received } = await openStream({ heartbeatMs: 60_000, maxBufferedBytes: 1_000_000 });
    let closes = 0;
    stream.onClose(() => {
      closes += 1;
    });
    stream.close("server-shutdown");
    stream.close("server-shutdown");
    stream.send("ignored", {});
    await until(() => received().includes("event: close"));
    expect(received()).toContain('event: close\ndata: {"type":"close","reason":"server-shutdown"}');
    expect(received()).not.toContain("ignored");
    expect(closes).toBe(1);
    expect(stream.closed).toBe(true);
  });

  it("closes a client that reads nothing once the unsent bytes pass the limit, instead of buffering more", async () => {
    const { stream, received } = await openStream({ heartbeatMs: 60_000, maxBufferedBytes: 1_048_576 });
    await until(() => received().includes(": connected"));
    client?.pause();
    const big = "x".repeat(16 * 1_048_576);
    stream.send("big", big, 1);
    expect(stream.closed).toBe(false);
    // The socket cannot take 16 MiB at once: the next event finds the limit passed.
    stream.send("after", {}, 2);
    expect(stream.closed).toBe(true);
    client?.resume();
    await until(() => received().includes("event: close"));
    expect(received()).toContain('"reason":"slow-client"');
    expect(received()).not.toContain("event: after");
  });
});
