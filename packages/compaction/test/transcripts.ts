import { type ContentBlock, createMessage, type Message } from "@almanac/core";
import type { OpenAIChatMessage } from "@almanac/openai-wire";

/** A deterministic clock for tests: each call returns the next millisecond. */
export function createTestClock(start = 1_700_000_000_000): () => number {
  let now = start;
  return () => {
    now += 1;
    return now;
  };
}

/** A small deterministic pseudo-random generator (mulberry32), so generated text is reproducible. */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const english = [
  "deploy",
  "server",
  "config",
  "error",
  "retry",
  "database",
  "migration",
  "timeout",
  "queue",
  "worker",
  "cache",
  "index",
  "backup",
  "report",
  "OPS-4821",
  "src/app/main.ts",
  "https://status.example.com/incidents/42",
];
const chinese = [
  "部署",
  "数据库",
  "迁移",
  "检查",
  "日志",
  "服务器",
  "配置",
  "错误",
  "重试",
  "备份",
  "报告",
  "索引",
];

/** About `chars` characters of mixed English and Chinese text, one line every ~12 words. */
export function generatedText(random: () => number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const pool = random() < 0.3 ? chinese : english;
    const word = pool[Math.floor(random() * pool.length)] ?? "x";
    const separator = random() < 0.08 ? "\n" : " ";
    parts.push(word, separator);
    length += word.length + 1;
  }
  return parts.join("");
}

let nextId = 0;

/** A unique message id for tests. */
export function testId(prefix: string): string {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A user message. */
export function user(text: string, clock: () => number): Message {
  return createMessage({ id: testId("user"), role: "user", timestamp: clock(), content: text });
}

/** An assistant text message. */
export function assistant(text: string, clock: () => number): Message {
  return createMessage({ id: testId("assistant"), role: "assistant", timestamp: clock(), content: text });
}

/** One tool call of a round and the output it gets. */
export interface RoundCall {
  readonly name: string;
  readonly arguments: Record<string, unknown> | string;
  readonly output: string;
  readonly isError?: boolean;
}

/** An assistant message with parallel tool calls and one tool message per result, in call order. */
export function toolRound(calls: readonly RoundCall[], clock: () => number): Message[] {
  const callIds = calls.map(() => testId("call"));
  const blocks: ContentBlock[] = calls.map((call, index) => ({
    type: "tool_call",
    id: callIds[index] ?? "",
    name: call.name,
    arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
  }));
  const request = createMessage({
    id: testId("assistant"),
    role: "assistant",
    timestamp: clock(),
    content: blocks,
  });
  const results = calls.map((call, index) =>
    createMessage({
      id: testId("tool"),
      role: "tool",
      timestamp: clock(),
      content: [
        {
          type: "tool_result",
          callId: callIds[index] ?? "",
          content: call.output,
          ...(call.isError ? { isError: true } : {}),
        },
      ],
    }),
  );
  return [request, ...results];
}

/**
 * Pairing problems of a wire conversation as a strict provider sees it: every assistant `tool_calls` entry
 * answered by the tool messages right after it, and no tool message without its call. Empty when valid.
 */
export function wirePairingProblems(messages: readonly OpenAIChatMessage[]): string[] {
  const problems: string[] = [];
  let open = new Set<string>();
  for (const message of messages) {
    if (message.role === "tool") {
      if (!open.delete(message.tool_call_id))
        problems.push(`result ${message.tool_call_id} answers no open call`);
      continue;
    }
    for (const id of open) problems.push(`call ${id} unanswered before a ${message.role} message`);
    open = new Set(message.role === "assistant" ? (message.tool_calls ?? []).map((call) => call.id) : []);
  }
  for (const id of open) problems.push(`call ${id} unanswered at the end`);
  return problems;
}
