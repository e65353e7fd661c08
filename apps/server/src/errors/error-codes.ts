import { agentErrorCodes } from "@almanac/agent";
import { dingTalkErrorCodes } from "@almanac/channels-dingtalk/error-codes";
import { discordErrorCodes } from "@almanac/channels-discord/error-codes";
import { feishuErrorCodes } from "@almanac/channels-feishu/error-codes";
import { compactionErrorCodes } from "@almanac/compaction";
import { consolidationErrorCodes } from "@almanac/consolidation";
import {
  type CodesOf,
  coreErrorCodes,
  defineErrorCodes,
  type ErrorCode,
  type ErrorCodeInfo,
} from "@almanac/core";
import { llmErrorCodes } from "@almanac/llm";
import { memoryFilesErrorCodes } from "@almanac/memory-files";
import { memoryIndexErrorCodes } from "@almanac/memory-index";
import { summarizerErrorCodes } from "@almanac/summarizer";

/** The codes the server itself throws or answers with, with their HTTP status and, where a chat sees one, text. */
export const serverErrorCodes = defineErrorCodes({
  "auth.unauthorized": { category: "user", status: 401 },
  "request.invalid": { category: "user", status: 400 },
  "request.malformed_json": { category: "user", status: 400 },
  "request.malformed": { category: "user", status: 400 },
  "request.bad_url": { category: "user", status: 400 },
  "request.too_large": { category: "user", status: 413 },
  "request.forbidden": { category: "user", status: 403 },
  "request.method_not_allowed": { category: "user", status: 405 },
  "request.timeout": { category: "user", status: 408 },
  "request.uri_too_long": { category: "user", status: 414 },
  "request.unsupported_media_type": { category: "user", status: 415 },
  "request.headers_too_large": { category: "user", status: 431 },
  /** The client went away before the answer (nginx's 499). */
  "request.client_closed": { category: "user", status: 499 },
  "route.not_found": { category: "user", status: 404 },
  "message.too_long": {
    category: "user",
    status: 413,
    forPeople: "That message is longer than I accept; please send it in shorter parts.",
  },
  "session.not_found": { category: "user", status: 404 },
  /** A workspace file over `ALMANAC_ATTACHMENT_MAX_MB`, asked for by `send_file` or `GET /api/files/content`. */
  "file.too_large": { category: "user", status: 413 },
  "approval.not_found": { category: "user", status: 404 },
  "task.not_found": { category: "user", status: 404 },
  /** A schedule that cannot be used (a past time, a bad cron expression…): the message says what to send. */
  "task.schedule_invalid": { category: "user", status: 400 },
  /** Answered already, expired, or closed: the body says which. */
  "approval.not_pending": { category: "user", status: 409 },
  "session.busy": {
    category: "user",
    status: 429,
    forPeople: "I am still answering your earlier messages; please wait a moment before sending more.",
  },
  /** A day's inbox holds a thousand files of one name already. */
  "attachment.names_exhausted": { category: "internal" },
  "session.no_model": { category: "internal" },
  "session.message_invalid": { category: "internal" },
  "session.snapshot_invalid": { category: "internal" },
  "model.not_configured": {
    category: "user",
    status: 503,
    forPeople: "The assistant is not set up yet: its owner needs to configure a model.",
  },
  "turn.timeout": { category: "provider", status: 504 },
  "turn.stopped": { category: "user", status: 499 },
  "turn.failed": { category: "internal" },
  /** Any failure that is not an Almanac error: a bug. The client reads only "Internal error; see the server log." */
  "internal.error": { category: "internal", status: 500 },
  "server.shutting_down": {
    category: "user",
    status: 503,
    forPeople: "The assistant is restarting; please send that again in a minute.",
  },
  "server.port_in_use": { category: "user" },
  "server.cannot_listen": { category: "user" },
  "home.locked": { category: "user", status: 409 },
  "memory.reindex_running": { category: "user", status: 409 },
  "backup.not_found": { category: "user", status: 404 },
  /** One archive is made at a time. */
  "backup.running": { category: "user", status: 409 },
  /** A file shrank while it was archived (rewritten in place, not by Almanac): trying again works. */
  "backup.file_changed": { category: "user", status: 409 },
  "backup.exists": { category: "user", status: 409 },
  /** `almanac backup verify` / `restore`: the archive does not match its manifest, or is not one. */
  "backup.invalid": { category: "user" },
  /** `almanac backup restore` only writes into an empty or new directory. */
  "backup.target_not_empty": { category: "user" },
  "config.invalid": { category: "user" },
  "storage.full": {
    category: "provider",
    status: 507,
    forPeople:
      "Sorry, I cannot save anything right now: the server's disk is full. Your message is kept and will be answered once space is freed; please send another message then.",
  },
  "storage.read_only": {
    category: "provider",
    status: 507,
    forPeople:
      "Sorry, I cannot save anything right now: the server's disk is read-only. Please try again once its owner has fixed it.",
  },
  "storage.missing": {
    category: "provider",
    status: 503,
    forPeople:
      "Sorry, I cannot reach my memory right now: the server's data directory is missing. Its owner can see why in the server's status.",
  },
  "storage.not_writable": { category: "user" },
  "cli.malformed_response": { category: "provider" },
  "cli.request_failed": { category: "provider" },
  "cli.route_missing": { category: "user" },
  "cli.server_unreachable": { category: "provider" },
  "cli.token_refused": { category: "user" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof serverErrorCodes> {}
}

/**
 * Every error code of every package the server runs, with its category, HTTP status and text for people: the one
 * registry the HTTP mapping and the chat failure text are derived from. A code missing here does not compile
 * anywhere (see core's `AlmanacErrorCodes`), so every code a client can meet is listed.
 */
export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeInfo>> = {
  ...coreErrorCodes,
  ...agentErrorCodes,
  ...llmErrorCodes,
  ...compactionErrorCodes,
  ...memoryFilesErrorCodes,
  ...memoryIndexErrorCodes,
  ...summarizerErrorCodes,
  ...consolidationErrorCodes,
  ...discordErrorCodes,
  ...feishuErrorCodes,
  ...dingTalkErrorCodes,
  ...serverErrorCodes,
} as Readonly<Record<ErrorCode, ErrorCodeInfo>>;

const STATUS_BY_CATEGORY = { user: 400, provider: 502, internal: 500 } as const;

/** The HTTP status of an error code: the registry's, else by category. */
export function httpStatusOf(code: string, category: ErrorCodeInfo["category"]): number {
  return (
    (ERROR_CODES as Readonly<Record<string, ErrorCodeInfo | undefined>>)[code]?.status ??
    STATUS_BY_CATEGORY[category]
  );
}

/** What a person in a chat reads when a turn fails with `code`: the registry's words, else by category. */
export function textForPeople(code: string, category: ErrorCodeInfo["category"]): string {
  const known = (ERROR_CODES as Readonly<Record<string, ErrorCodeInfo | undefined>>)[code]?.forPeople;
  if (known !== undefined) return known;
  if (category === "provider")
    return "Sorry, I could not reach the language model just now. Please try again in a moment.";
  return "Sorry, something went wrong while answering. The error has been logged.";
}

/**
 * The source of `error-code-list.ts`: every code, sorted, as a constant the web console imports its type from
 * (the console cannot import the registries themselves: they load Node packages). Written by `pnpm docs:config`;
 * a test checks it is current.
 */
export function renderErrorCodeList(): string {
  const codes = Object.keys(ERROR_CODES).sort();
  return [
    "// Generated from apps/server/src/errors/error-codes.ts by `pnpm docs:config`: every error code a client can meet.",
    "// The web console imports its type; error-codes.test.ts checks this file is current.",
    "export const ERROR_CODE_LIST = [",
    ...codes.map((code) => `  ${JSON.stringify(code)},`),
    "] as const;",
    "",
    "/** An error code the server may answer with. */",
    "export type KnownErrorCode = (typeof ERROR_CODE_LIST)[number];",
    "",
  ].join("\n");
}
