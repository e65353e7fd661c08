/**
 * The work a turn does over the whole history, in-process and without I/O (not part of the test run): a turn
 * appends the user's message, checks tool pairs, measures the prompt (the compaction check), appends the reply,
 * checks pairs again and measures twice more (the stats and the live console), as the session runtime and the
 * compactor do. Printed: µs a turn while the history grows from 600 to 1,800 messages. On a tree from before
 * `WorkingMemory.repairToolPairs` it checks pairs with core's `repairToolPairs` over the whole list, as the
 * server did then, so the same file compares trees (copy it into the other tree's `bench/`).
 *
 * Run: npx tsx bench/history-work.ts
 */
import { WorkingMemory } from "@almanac/agent";
import { createContextMeter } from "@almanac/compaction";
import { createMessage, createTokenCounter, repairToolPairs } from "@almanac/core";

const meter = createContextMeter(createTokenCounter());
const memory = new WorkingMemory();
const input = {
  systemPrompt: "You are Almanac.",
  tools: [{ name: "memory_search", description: "Search memory", parameters: { type: "object" } }],
};
const checkPairs = (): void => {
  const own = (memory as { repairToolPairs?: () => boolean }).repairToolPairs;
  if (own !== undefined) own.call(memory);
  else memory.replaceMessages(repairToolPairs(memory.messages));
};

function turn(index: number): void {
  memory.append(createMessage({ role: "user", content: `message ${index} about the deploy budget` }));
  checkPairs();
  meter.measure(memory, input);
  memory.append(createMessage({ role: "assistant", content: `noted ${index}` }));
  checkPairs();
  meter.measure(memory, input);
  meter.measure(memory, input);
}

for (let index = 0; index < 300; index += 1) turn(index);
const started = performance.now();
for (let index = 300; index < 900; index += 1) turn(index);
const perTurn = ((performance.now() - started) / 600) * 1000;
console.log(`history work: ${perTurn.toFixed(1)} µs a turn (history 600 → 1,800 messages)`);
