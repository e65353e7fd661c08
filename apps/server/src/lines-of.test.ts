import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { linesOf } from "./lines-of.js";

async function lines(chunks: readonly (Buffer | string)[]): Promise<string[]> {
  const read: string[] = [];
  for await (const line of linesOf(Readable.from(chunks))) read.push(line);
  return read;
}

describe("linesOf", () => {
  it("splits on newlines only: U+2028 and U+2029 inside a JSON string stay in their line", async () => {
    const message = JSON.stringify({ text: "one\u2028two\u2029three" });
    expect(message).toContain("\u2028");
    expect(await lines([`${message}\n{"b":1}\n`])).toEqual([message, '{"b":1}']);
  });

  it("joins characters whose bytes are split across chunks, and keeps a last line without a newline", async () => {
    const bytes = Buffer.from("第一行\n😀 second\r\nlast", "utf8");
    const chunks = Array.from({ length: bytes.length }, (_, index) => bytes.subarray(index, index + 1));
    expect(await lines(chunks)).toEqual(["第一行", "😀 second", "last"]);
  });

  it("yields empty lines between newlines but nothing after a final newline", async () => {
    expect(await lines(["a\n\nb\n"])).toEqual(["a", "", "b"]);
    expect(await lines([])).toEqual([]);
  });
});
