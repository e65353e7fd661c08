/** The offset each line of `text` starts at (the first is 0). */
export function lineStartsOf(text: string): number[] {
  const lineStarts = [0];
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1))
    lineStarts.push(index + 1);
  return lineStarts;
}

/** The index of the line holding `offset`, given the lines' start offsets in order (binary search). */
export function lineAt(lineStarts: readonly number[], offset: number): number {
  let low = 0;
  let high = lineStarts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (lineStarts[middle]! <= offset) low = middle;
    else high = middle - 1;
  }
  return low;
}
