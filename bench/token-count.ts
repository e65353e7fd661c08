/**
 * Cost of re-counting a 1,000-message history after appending one message:
 * cached counter (per-message cache) versus counting every message from scratch.
 * Run: npx tsx bench/token-count.ts [--json <file>]   (or `pnpm bench:tokens`; not part of the test run)
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createMessage, type Message } from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { Figures, jsonOption } from "./figures.js";
import { percentile } from "./sample-stats.js";

const { values } = parseArgs({ options: { ...jsonOption } });
const figures = new Figures(values.json);

const HISTORY = 1000;
const ROUNDS = 200;

function sampleText(index: number): string {
  const english = `Turn ${index}: please look at src/server/routes-${index % 37}.ts and check why the request to https://api.example.com/v1/items/${index} returns 502 after the retry.`;
  const chinese = `第${index}轮：请检查项目的部署脚本，确认数据库迁移已经完成，并把结果写进日志。`;
  return index % 3 === 0 ? `${english} ${chinese}` : english.repeat(1 + (index % 4));
}

function history(): Message[] {
  return Array.from({ length: HISTORY }, (_, index) =>
    createMessage({ role: index % 2 === 0 ? "user" : "assistant", content: sampleText(index) }),
  );
}

function measure(label: string, name: string, count: (messages: readonly Message[]) => number): void {
  const messages = history();
  count(messages); // the history was counted before the new message arrived
  const timings: number[] = [];
  let total = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    messages.push(createMessage({ role: "user", content: sampleText(HISTORY + round) }));
    const start = performance.now();
    total = count(messages);
    timings.push(performance.now() - start);
  }
  console.log(
    `${label.padEnd(36)} p50 ${percentile(timings, 50).toFixed(3)} ms   p99 ${percentile(timings, 99).toFixed(3)} ms   (last total ${total} tokens)`,
  );
  figures.add(`${name}-p50`, percentile(timings, 50), "ms");
  figures.add(`${name}-p99`, percentile(timings, 99), "ms");
}

createTokenCounter().countMessages(history()); // warm the tokenizer itself (JIT, merge cache)

const cached = createTokenCounter();
measure("cached: recount after appending one", "recount-cached", (messages) =>
  cached.countMessages(messages),
);
measure("uncached: fresh counter every time", "recount-uncached", (messages) =>
  createTokenCounter().countMessages(messages),
);
console.log(
  `node ${process.version}; history ${HISTORY} messages, ${ROUNDS} appends; counter method ${cached.method}`,
);
figures.write();
