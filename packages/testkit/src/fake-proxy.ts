import { createServer, request as httpRequest, type Server } from "node:http";
import { connect, type Socket } from "node:net";

/** What a client asked the proxy for. */
export interface ProxiedRequest {
  /** `CONNECT` (a tunnel) or the method of a plain forwarded request. */
  readonly method: string;
  /** `host:port` the client asked for. */
  readonly target: string;
  /** The `Proxy-Authorization` header, when the client sent one. */
  readonly authorization?: string;
}

/** A running forward proxy on 127.0.0.1. */
export interface FakeProxy {
  /** `http://127.0.0.1:PORT`, for HTTP_PROXY / HTTPS_PROXY. */
  readonly url: string;
  requests(): readonly ProxiedRequest[];
  close(): Promise<void>;
}

/** Options of {@link startFakeProxy}. */
export interface FakeProxyOptions {
  /**
   * Where a requested host really is: lets a test name its model by a host that has no DNS entry
   * (`model.invalid:PORT` → `127.0.0.1:PORT`), which only a request through the proxy can reach.
   */
  readonly resolve?: (host: string, port: number) => { readonly host: string; readonly port: number };
}

/**
 * An HTTP forward proxy as corporate networks run them: `CONNECT host:port` tunnels (what clients use for
 * https, and undici for every request) and absolute-URI requests (`GET http://host/path`). Records every
 * request. For tests only.
 */
export async function startFakeProxy(options: FakeProxyOptions = {}): Promise<FakeProxy> {
  const seen: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const where = (target: string): { host: string; port: number } => {
    const [host = "", port = "80"] = target.split(/:(?=\d+$)/);
    return options.resolve?.(host, Number(port)) ?? { host, port: Number(port) };
  };
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/");
    const authorization = request.headers["proxy-authorization"];
    seen.push({
      method: request.method ?? "GET",
      target: url.host,
      ...(authorization ? { authorization } : {}),
    });
    const { host, port } = where(`${url.hostname}:${url.port || "80"}`);
    const upstream = httpRequest(
      { host, port, path: `${url.pathname}${url.search}`, method: request.method, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on("error", () => response.writeHead(502).end());
    request.pipe(upstream);
  });
  server.on("connect", (request, client: Socket, head: Buffer) => {
    const authorization = request.headers["proxy-authorization"];
    const target = request.url ?? "";
    seen.push({ method: "CONNECT", target, ...(authorization ? { authorization } : {}) });
    const { host, port } = where(target);
    const upstream = connect(port, host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const socket of [upstream, client]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    }
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => [...seen],
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
