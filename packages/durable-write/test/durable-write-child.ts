/**
 * A child process for the durable-write crash test: replaces one file over and over, alternating between two
 * large contents, and prints `writing N` as each write starts. The test kills it with SIGKILL mid-write.
 * Arguments: the target path and the size of each content in bytes.
 */
import { writeFileDurably } from "../src/durable-write.js";

const [target, sizeText] = process.argv.slice(2);
if (target === undefined || sizeText === undefined)
  throw new Error("usage: durable-write-child <file> <bytes>");
const size = Number(sizeText);
const contents = [Buffer.alloc(size, "a"), Buffer.alloc(size, "b")] as const;

for (let count = 1; ; count += 1) {
  process.stdout.write(`writing ${count}\n`);
  await writeFileDurably(target, contents[count % 2] as Buffer, { syncDirectory: count % 2 === 0 });
}
