import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type RecordedChatRequest, type ScriptedLlm, startScriptedLlm } from "@almanac/testkit";
import OpenAI from "openai";
import { type ServerHandle, startServer } from "../src/server.js";

/** A server on a random port with its own data dir and scripted model, plus a client for it. */
export interface TestServer {
  readonly server: ServerHandle;
  readonly llm: ScriptedLlm;
  readonly home: string;
  readonly logs: string[];
  readonly client: OpenAI;
  /** fetch against the server with the admin token. */
  api(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/** Options: extra environment, and whether to configure the model at all. */
export interface TestServerOptions {
  readonly env?: Record<string, string>;
  readonly withModel?: boolean;
  readonly contextWindow?: number;
  readonly llm?: ScriptedLlm;
  readonly home?: string;
}

export const TEST_TOKEN = "test-admin-token-0123456789";
export const TEST_MODEL_KEY = "sk-test-model-key-must-not-leak";

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const llm =
    options.llm ??
    (await startScriptedLlm({ contextWindow: options.contextWindow ?? 32_000, apiKey: TEST_MODEL_KEY }));
  const home = options.home ?? (await mkdtemp(join(tmpdir(), "almanac-server-")));
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const env: Record<string, string> = {
    ALMANAC_HOME: home,
    ALMANAC_PORT: "0",
    ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
    ALMANAC_LOG_LEVEL: "info",
    ...(options.withModel === false
      ? {}
      : {
          ALMANAC_MODEL_BASE_URL: llm.baseURL,
          ALMANAC_MODEL_NAME: "scripted-model",
          ALMANAC_MODEL_API_KEY: TEST_MODEL_KEY,
          ALMANAC_MODEL_MAX_RETRIES: "0",
          ALMANAC_MODEL_CONTEXT_WINDOW: String(options.contextWindow ?? 32_000),
          ALMANAC_MODEL_MAX_OUTPUT_TOKENS: "512",
        }),
    ...options.env,
  };
  const server = await startServer({ env, cwd: home, logDestination: destination, announce: () => {} });
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 });
  return {
    server,
    llm,
    home,
    logs,
    client,
    api: (path, init = {}) =>
      fetch(`${server.url}${path}`, {
        ...init,
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
          ...init.headers,
        },
      }),
    async close() {
      await server.close();
      if (!options.llm) await llm.close();
      if (!options.home) await rm(home, { recursive: true, force: true });
    },
  };
}

/** The text of every user/assistant message of a session transcript, in file order. */
export async function readTranscriptLines(
  home: string,
  stem: string,
): Promise<Array<{ role: string; text: string; timestamp: number }>> {
  const { readFile } = await import("node:fs/promises");
  const text = await readFile(join(home, "sessions", `${stem}.jsonl`), "utf8");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const parsed = JSON.parse(line) as {
        message: { role: string; timestamp: number; content: Array<{ type: string; text?: string }> };
      };
      return {
        role: parsed.message.role,
        timestamp: parsed.message.timestamp,
        text: parsed.message.content.map((block) => block.text ?? "").join(""),
      };
    });
}

/** True for a request made by the summarizer agent (it is the one offered the day-log tools). */
export function isSummarizerRequest(request: RecordedChatRequest): boolean {
  const tools: unknown = request.tools;
  return (
    Array.isArray(tools) &&
    tools.some((tool: unknown) => JSON.stringify(tool).includes('"name":"append_day_log"'))
  );
}

/** What a fake DingTalk needs of its connection: `startFakeDingTalk`'s answer, in part. */
interface DingTalkFakeConnection {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly robotCode: string;
  readonly url: string;
}

/**
 * The variables that point the server's DingTalk channel at a fake DingTalk (stream gateway and OpenAPI on it),
 * with the fake's default sender allowed.
 */
export function dingTalkEnv(fake: DingTalkFakeConnection): Record<string, string> {
  return {
    ALMANAC_DINGTALK_CLIENT_ID: fake.clientId,
    ALMANAC_DINGTALK_CLIENT_SECRET: fake.clientSecret,
    ALMANAC_DINGTALK_ROBOT_CODE: fake.robotCode,
    ALMANAC_DINGTALK_GATEWAY_URL: fake.url,
    ALMANAC_DINGTALK_API_BASE_URL: fake.url,
    ALMANAC_DINGTALK_ALLOW_FROM: "staff-001",
  };
}
