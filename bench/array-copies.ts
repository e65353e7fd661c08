/**
 * How the session's history (a frozen array of messages) is best copied and compared, in µs a call: the
 * choices behind `WorkingMemory.append`, `buildPrompt` and `onlyAppended`. V8's sampling heap profiler
 * (bench/allocation.ts) takes slower paths for some of these builtins, so its attribution alone misled once
 * (BENCHMARKS.md, "What a turn allocates"); this times them without it. Not part of the test run.
 *
 * Run: node --import tsx bench/array-copies.ts [--messages 600]
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { messages: { type: "string", default: "600" } } });
const history = Object.freeze(Array.from({ length: Number(values.messages) }, (_, index) => ({ index })));
const added = [{ index: -1 }];
const system = { index: -2 };
/** The history one turn later: what `onlyAppended` compares the checkpoint's messages with. */
const later = Object.freeze([...history, ...added]);

const ways: Record<string, () => unknown> = {
  "append: [...history, ...added]": () => Object.freeze([...history, ...added]),
  "append: history.concat(added)": () => Object.freeze(history.concat(added)),
  "copy: [...history]": () => [...history],
  "copy: history.slice()": () => history.slice(),
  "prompt: [system, ...history]": () => [system, ...history],
  "prompt: [system].concat(history)": () => [system].concat(history),
  "prefix check: for…of entries()": () => {
    for (const [index, message] of history.entries()) if (later[index] !== message) return false;
    return true;
  },
  "prefix check: index loop": () => {
    for (let index = 0; index < history.length; index += 1) if (later[index] !== history[index]) return false;
    return true;
  },
};

for (const [name, run] of Object.entries(ways)) {
  for (let call = 0; call < 2_000; call += 1) run();
  const start = performance.now();
  for (let call = 0; call < 20_000; call += 1) run();
  console.log(`${name.padEnd(34)} ${(((performance.now() - start) * 1000) / 20_000).toFixed(2)} µs`);
}
console.log(`node ${process.version}, ${history.length} messages`);
