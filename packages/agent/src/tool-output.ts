/**
 * Cuts text longer than `maxChars`, keeping the head and saying how much was cut, so the model
 * knows the output is incomplete rather than believing it saw everything.
 */
export function cutToolOutput(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = maxChars;
  // Never split a surrogate pair: a lone half is not valid text for the provider.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  const cut = text.length - end;
  return `${text.slice(0, end)}\n[… output cut: ${cut} of ${text.length} characters removed]`;
}
