import { StringDecoder } from "node:string_decoder";

/**
 * The lines of a UTF-8 byte stream, split on "\n" only (a "\r" before it is dropped); a last line without a
 * newline is yielded too. Not `node:readline`: since Node 24 it also breaks lines at U+2028 and U+2029
 * (nodejs/node#57591), which `JSON.stringify` leaves unescaped inside strings, so a JSON line holding one was cut
 * into pieces that do not parse, and the message was lost on reload (reproduced: the transcript test fails on
 * Node 24.22 with readline). Twenty lines, and no dependency whose line rules can change under us again.
 */
export async function* linesOf(stream: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const decoder = new StringDecoder("utf8");
  let rest = "";
  for await (const chunk of stream) {
    rest += typeof chunk === "string" ? chunk : decoder.write(chunk);
    let from = 0;
    for (let end = rest.indexOf("\n"); end !== -1; end = rest.indexOf("\n", from)) {
      yield withoutCarriageReturn(rest.slice(from, end));
      from = end + 1;
    }
    rest = rest.slice(from);
  }
  rest += decoder.end();
  if (rest !== "") yield withoutCarriageReturn(rest);
}

function withoutCarriageReturn(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}
