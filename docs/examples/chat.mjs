// Talks to Almanac with the official OpenAI client, streaming the reply.
// In an empty folder: `npm i openai`, copy this file there, then (with the server running)
//   ALMANAC_URL=http://127.0.0.1:8787 TOKEN=<admin token> node chat.mjs "What did we decide yesterday?"
// Plain JavaScript (ES module): runs on Node 20 and later with no TypeScript loader.
import OpenAI from "openai";

const token = process.env.TOKEN;
if (!token) {
  console.error("Set TOKEN to the admin token (printed on first start, stored in data/admin-token).");
  process.exit(2);
}
const baseURL = `${process.env.ALMANAC_URL ?? "http://127.0.0.1:8787"}/v1`;
const client = new OpenAI({ baseURL, apiKey: token });
const question = process.argv.slice(2).join(" ") || "Hello!";

const stream = await client.chat.completions.create({
  model: "almanac",
  user: process.env.CONVERSATION ?? "me", // names the conversation; the server keeps its history
  stream: true,
  messages: [{ role: "user", content: question }],
});
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ?? "");
process.stdout.write("\n");
