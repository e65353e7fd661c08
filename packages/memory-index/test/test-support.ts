import { z } from "zod";

// Helpers shared by this directory's tests (never imported by production code).

/** Polls `check` until it returns true, failing after `timeoutMs` (watch tests wait on the index, never sleep blindly). */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const embeddingBody = z.object({ input: z.union([z.string(), z.array(z.string())]) });

/** Texts sent to the scripted embeddings endpoint, across all recorded requests. */
export function embeddedTexts(requests: readonly unknown[]): string[] {
  return requests.flatMap((body) => {
    const parsed = embeddingBody.parse(body);
    return typeof parsed.input === "string" ? [parsed.input] : parsed.input;
  });
}
