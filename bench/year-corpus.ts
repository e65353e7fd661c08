import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

// The year corpus: a synthetic year of memory (MEMORY.md + 365 daily logs of 24 lines, ~1.1 MB) that the
// start-up, server and search benchmarks share, so their rows describe the same workspace.

const topics = ["deploy", "invoice", "garden", "kernel", "travel", "recipe", "backup", "meeting"];

/** Writes `MEMORY.md` and `memory/YYYY-MM-DD.md` for 2025 into `workspace`. */
export async function writeYearCorpus(workspace: string): Promise<void> {
  const memoryDir = join(workspace, "memory");
  await mkdir(memoryDir, { recursive: true });
  const day = (index: number) =>
    new Date(Date.UTC(2025, 0, 1) + index * 86_400_000).toISOString().slice(0, 10);
  await writeFile(
    join(workspace, "MEMORY.md"),
    `# Memory\n\n${topics.map((topic, index) => `- The ${topic} code is ${topic.toUpperCase()}-${index * 7}.`).join("\n")}\n`,
  );
  for (let index = 0; index < 365; index += 1) {
    const lines = Array.from({ length: 24 }, (_, line) => {
      const topic = topics[(index + line) % topics.length];
      return `- ${String(line).padStart(2, "0")}:00 talked about the ${topic} (ticket T-${index * 31 + line}), decided to follow up on day ${index + 1} with notes on ${topic} and its budget.`;
    });
    await writeFile(join(memoryDir, `${day(index)}.md`), `# ${day(index)}\n\n${lines.join("\n")}\n`);
  }
}

/** Questions over the year corpus: common words, a ticket id, a code, a miss, a sentence. */
export const yearQueries: readonly string[] = [
  "deploy budget",
  "invoice",
  "garden notes",
  "ticket T-4021",
  "KERNEL-21",
  "what did we decide about the backup",
  "recipe follow up",
  "travel day 200",
  "meeting budget notes",
  "zeppelin",
];
