import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const example = fileURLToPath(new URL("../../../docs/examples/chat.mjs", import.meta.url));

describe("the README's client example", () => {
  it("runs as shipped with plain node and streams the reply", async () => {
    running = await startTestServer();
    running.llm.setFallback(() => script.text("We decided to ship on Friday.", { chunkDelayMs: 1 }));
    const { url } = running.server;
    // Asynchronous: the server answers in this process, so a blocking spawn would wait on itself.
    const child = spawn(process.execPath, [example, "What did we decide yesterday?"], {
      env: { PATH: process.env.PATH ?? "", TOKEN: TEST_TOKEN, ALMANAC_URL: url },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toBe("We decided to ship on Friday.\n");
    expect(running.llm.chatRequests().at(-1)?.messages.at(-1)).toMatchObject({
      role: "user",
      content: "What did we decide yesterday?",
    });
  });

  it("says what to set when the token is missing", () => {
    const run = spawnSync(process.execPath, [example], {
      env: { PATH: process.env.PATH ?? "" },
      encoding: "utf8",
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("Set TOKEN");
  });
});
