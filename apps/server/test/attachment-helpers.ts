import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { RecordedChatRequest } from "@almanac/testkit";

/** The image URLs of the newest user message of a request the model got (what a vision model was shown). */
export function imageParts(request: RecordedChatRequest | undefined): string[] {
  const user = request?.messages.findLast((message) => message.role === "user");
  if (!Array.isArray(user?.content)) return [];
  return user.content.flatMap((part: unknown) => {
    const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
    return typeof url === "string" ? [url] : [];
  });
}

/** Every file of the owner's inbox, as `<day>/<name>`. */
export async function inboxFiles(home: string): Promise<string[]> {
  const inbox = join(home, "workspace", "inbox");
  const days = await readdir(inbox).catch(() => []);
  const files = await Promise.all(
    days.map(async (day) => (await readdir(join(inbox, day))).map((name) => `${day}/${name}`)),
  );
  return files.flat();
}
