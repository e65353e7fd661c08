import { defineTool } from "@almanac/agent";
import { z } from "zod";
import { createRandom, generatedText } from "./transcripts.js";

/** A tool that returns 2–20 KB of generated text per call; every 7th report repeats the one before. */
export function createReportTool(seed = 1) {
  const random = createRandom(seed);
  let previous = "";
  return defineTool({
    name: "fetch_report",
    description: "Fetch a generated report by id.",
    parameters: z.object({ id: z.number().int() }),
    async execute({ id }) {
      if (id % 7 === 0 && previous !== "") return previous;
      previous = `Report ${id}\n${generatedText(random, 2_000 + Math.floor(random() * 18_000))}`;
      return previous;
    },
  });
}

/** A tool that stores a note; the model sends the whole note as an argument (long arguments to shorten). */
export function createSaveNoteTool() {
  return defineTool({
    name: "save_note",
    description: "Save a note under a path.",
    parameters: z.object({ path: z.string(), content: z.string() }),
    async execute({ path, content }) {
      return `Saved ${path} (${content.length} characters).`;
    },
  });
}
