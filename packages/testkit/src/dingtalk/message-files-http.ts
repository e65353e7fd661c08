import { randomUUID } from "node:crypto";
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { sendJson } from "../http-io.js";
import type { FakeRecords } from "./fake-records.js";
import type { RobotHttp } from "./robot-http.js";
import type { FakeFileInput } from "./types.js";

/** Options of {@link createMessageFilesHttp}. */
export interface MessageFilesHttpOptions {
  readonly records: FakeRecords;
  readonly robot: RobotHttp;
  readonly robotCode: string;
  /** The fake's own base URL, for the download URLs it hands out. */
  readonly baseUrl: () => string;
}

/** Received files: `messageFiles/download` and the download URLs it names. */
export interface MessageFilesHttp {
  addFile(downloadCode: string, file: FakeFileInput): void;
  /** Answers the request when it is one of the file routes; false otherwise. */
  handle(request: IncomingMessage, response: ServerResponse, url: URL, body: unknown): boolean;
}

const downloadBodySchema = z.object({ downloadCode: z.string().min(1), robotCode: z.string().min(1) });

/** Bytes written at a time, so a client that stops reading is noticed (backpressure) rather than buffered. */
const CHUNK_BYTES = 64 * 1024;

/** Resolves when the response can take more, or is gone; leaves no listener behind. */
function drainedOrClosed(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off("drain", done);
      response.off("close", done);
      resolve();
    };
    response.on("drain", done);
    response.on("close", done);
  });
}

/** Creates the message-file handlers. */
export function createMessageFilesHttp(options: MessageFilesHttpOptions): MessageFilesHttp {
  const { records, robot } = options;
  const files = new Map<string, FakeFileInput>();
  /** Download URL token → download code; DingTalk's URLs are short-lived and unguessable. */
  const urls = new Map<string, string>();

  function handleDownloadCode(request: IncomingMessage, response: ServerResponse, body: unknown): void {
    if (!robot.authorize(request, response, "messageFiles")) return;
    const parsed = downloadBodySchema.safeParse(body);
    if (!parsed.success) {
      robot.reject(
        response,
        "messageFiles",
        400,
        "InvalidParameter",
        `invalid request body: ${parsed.error.message}`,
      );
      return;
    }
    if (parsed.data.robotCode !== options.robotCode) {
      robot.reject(
        response,
        "messageFiles",
        400,
        "InvalidParameter",
        `robot ${parsed.data.robotCode} does not exist`,
      );
      return;
    }
    const file = files.get(parsed.data.downloadCode);
    if (file === undefined) {
      // DingTalk's answer for a code it does not know (or one of another robot); the code is the fake's choice.
      robot.reject(response, "messageFiles", 400, "InvalidParameter.DownloadCode", "downloadCode 无效");
      return;
    }
    const token = randomUUID();
    urls.set(token, parsed.data.downloadCode);
    sendJson(response, 200, { downloadUrl: file.downloadUrl ?? `${options.baseUrl()}/files/${token}` });
  }

  async function serveFile(response: ServerResponse, token: string): Promise<void> {
    const downloadCode = urls.get(token);
    const file = downloadCode === undefined ? undefined : files.get(downloadCode);
    if (downloadCode === undefined || file === undefined) {
      response.writeHead(404, { "content-type": "application/xml" });
      response.end("<Error><Code>NoSuchKey</Code></Error>");
      return;
    }
    const { bytes } = file;
    response.writeHead(200, {
      "content-type": file.contentType ?? "application/octet-stream",
      ...(file.declareLength === false ? {} : { "content-length": String(bytes.length) }),
    });
    const end = Math.min(bytes.length, file.stallAfterBytes ?? bytes.length);
    let sent = 0;
    while (sent < end && !response.destroyed) {
      const chunk = bytes.subarray(sent, Math.min(end, sent + CHUNK_BYTES));
      sent += chunk.length;
      if (!response.write(chunk)) await drainedOrClosed(response);
    }
    if (file.stallAfterBytes !== undefined && !response.destroyed) await once(response, "close");
    const completed = sent === bytes.length && !response.destroyed;
    if (completed) response.end();
    records.addDownload({ downloadCode, bytesSent: sent, completed });
  }

  return {
    addFile(downloadCode, file) {
      files.set(downloadCode, file);
    },
    handle(request, response, url, body) {
      if (request.method === "POST" && url.pathname === "/v1.0/robot/messageFiles/download") {
        handleDownloadCode(request, response, body);
        return true;
      }
      const match = /^\/files\/([^/]+)$/.exec(url.pathname);
      if (request.method === "GET" && match?.[1] !== undefined) {
        serveFile(response, match[1]).catch((error: unknown) => {
          records.addProblem(`fake DingTalk file download failed: ${String(error)}`);
          response.destroy();
        });
        return true;
      }
      return false;
    },
  };
}
