import { type Agent, request } from "node:http";

/** One HTTP request over `agent` (keep-alive in the benches); the whole answer as text, and its `Server-Timing`. */
export function httpCall(
  agent: Agent,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; text: string; serverTiming: string | undefined }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method, headers, agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          text: Buffer.concat(chunks).toString("utf8"),
          serverTiming: [response.headers["server-timing"] ?? []].flat().join(", ") || undefined,
        }),
      );
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/** The model wait and the whole request of an Almanac answer's `Server-Timing` header, in ms (NaN when absent). */
export interface ServerTimings {
  readonly model: number;
  readonly total: number;
}

/** Reads {@link ServerTimings} from a `Server-Timing` header. */
export function serverTimings(header: string | null | undefined): ServerTimings {
  const duration = (name: string) =>
    Number(new RegExp(`${name};dur=([\\d.]+)`).exec(header ?? "")?.[1] ?? Number.NaN);
  return { model: duration("model"), total: duration("total") };
}
