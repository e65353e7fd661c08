/**
 * The work a turn does over the whole history, in-process and without I/O (not part of the test run): a turn
 * appends the user's message, checks tool pairs, measures the prompt (the compaction check), appends the reply,
 * checks pairs again and measures twice more (the stats and the live console), as the session runtime and the
 * compactor do. Printed: µs a turn while the history grows from 600 to 1,800 messages; a figure that grows with
 * the history's length means some step went back to walking all of it.
 *
 * Run: npx tsx bench/history-work.ts [--json <file>]
 */
import { parseArgs } from "node:util";
import { WorkingMemory } from "@almanac/agent";
import { createContextMeter } from "@almanac/compaction";
import { createMessage } from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { Figures, jsonOption } from "./figures.js";

const { values } = parseArgs({ options: { ...jsonOption } });
const meter = createContextMeter(createTokenCounter());
const memory = new WorkingMemory();
const input = {
  systemPrompt: "You are Almanac.",
  tools: [{ name: "memory_search", description: "Search memory", parameters: { type: "object" } }],
};

function turn(index: number): void {
  memory.append(createMessage({ role: "user", content: `message ${index} about the deploy budget` }));
  memory.repairToolPairs();
  meter.measure(memory, input);
  memory.append(createMessage({ role: "assistant", content: `noted ${index}` }));
  memory.repairToolPairs();
  meter.measure(memory, input);
  meter.measure(memory, input);
}

for (let index = 0; index < 300; index += 1) turn(index);
const started = performance.now();
for (let index = 300; index < 900; index += 1) turn(index);
const perTurn = ((performance.now() - started) / 600) * 1000;
console.log(`history work: ${perTurn.toFixed(1)} µs a turn (history 600 → 1,800 messages)`);
const figures = new Figures(values.json);
figures.add("history-work-per-turn", perTurn, "µs");
figures.write();
