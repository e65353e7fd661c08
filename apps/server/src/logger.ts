import { createRequire } from "node:module";
import pino, { type Logger as PinoLogger } from "pino";
import type * as PinoPretty from "pino-pretty";

/** Paths pino replaces with "[redacted]": credentials must never reach a log line. */
export const REDACTED_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "headers.authorization",
  "*.apiKey",
  "*.adminToken",
  "*.token",
  "*.appSecret",
  "*.clientSecret",
  "*.*.apiKey",
  "*.*.adminToken",
  "config.model.apiKey",
  "config.server.adminToken",
];

const MAX_LOGGED_KEY_CHARS = 64;

/**
 * A URL with its query values replaced: `/x?token=abc&q` → `/x?token=[redacted]&[redacted]`. Keys stay (they
 * say what was asked), values never reach the log (`?token=` or `?key=` may be a credential).
 */
export function redactQuery(url: string): string {
  const start = url.indexOf("?");
  if (start === -1) return url;
  const parts = url
    .slice(start + 1)
    .split("&")
    .map((part) => {
      const equals = part.indexOf("=");
      // A bare `?abc` may itself be the secret: only a key followed by `=` is kept.
      if (equals === -1) return part === "" ? "" : "[redacted]";
      return `${part.slice(0, Math.min(equals, MAX_LOGGED_KEY_CHARS))}=[redacted]`;
    });
  return `${url.slice(0, start)}?${parts.join("&")}`;
}

/** What an incoming request looks like to the serializer (fastify's request). */
interface LoggedRequest {
  readonly method?: string;
  readonly url?: string;
  readonly host?: string;
  readonly ip?: string;
  readonly socket?: { readonly remotePort?: number };
}

/**
 * fastify's `req` serializer without secrets: method, path with the query values redacted, host and peer.
 * No headers at all, so neither `Authorization` nor cookies can be logged by it.
 */
export function serializeRequest(request: LoggedRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: typeof request.url === "string" ? redactQuery(request.url) : undefined,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** Secrets shorter than this are not searched for in text (too likely to match ordinary words). */
const MIN_SCRUBBED_SECRET_CHARS = 6;

/**
 * Replaces every occurrence of a known secret value in a text with `[redacted]`: for messages written by
 * libraries (an SDK's debug line that prints the token it was given), which no redaction path can reach.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of secrets) {
    if (secret.length >= MIN_SCRUBBED_SECRET_CHARS && scrubbed.includes(secret))
      scrubbed = scrubbed.replaceAll(secret, "[redacted]");
  }
  return scrubbed;
}

/**
 * Short, coloured lines for a person at a terminal (`14:03:07 INFO: almanac listening url=…`), written in this
 * process (no transport thread). Loaded only then: a service manager or Docker gets JSON lines, as before.
 */
function prettyTerminal(): pino.DestinationStream {
  const { build } = createRequire(import.meta.url)("pino-pretty") as typeof PinoPretty;
  return build({
    colorize: true,
    translateTime: "SYS:HH:MM:ss",
    ignore: "pid,hostname,service",
    singleLine: true,
    sync: true,
  });
}

/** Where log lines go when no destination is given: pretty on a terminal, JSON lines otherwise. */
export function defaultLogDestination(stdout: {
  readonly isTTY?: boolean;
}): pino.DestinationStream | undefined {
  return stdout.isTTY === true ? prettyTerminal() : undefined;
}

/**
 * Creates the server's root logger (JSON lines to stdout, or to the given destination). Fields named like
 * credentials are redacted by path; the configured secret values are also scrubbed from messages and from
 * string fields, whoever wrote them.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  secrets: readonly string[] = [],
): PinoLogger {
  const scrub = (value: unknown) => (typeof value === "string" ? scrubSecrets(value, secrets) : value);
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      serializers: { req: serializeRequest },
      base: { service: "almanac" },
      ...(secrets.length === 0
        ? {}
        : {
            hooks: {
              logMethod(args, method) {
                method.apply(this, args.map(scrub) as Parameters<typeof method>);
              },
            },
            formatters: {
              log: (object: Record<string, unknown>) =>
                Object.fromEntries(Object.entries(object).map(([key, value]) => [key, scrub(value)])),
            },
          }),
    },
    destination,
  );
}
