import { unlink } from "node:fs/promises";
import { join } from "node:path";
import { formatSessionKey, sessionKeyToFileStem } from "@almanac/core";
import { fillDisk, lastUserText, mountSmallFileSystem, script } from "@almanac/testkit";
import { APIError } from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { readTranscriptLines, startTestServer, type TestServer } from "./test-server.js";

// A real full disk: a 4 MiB tmpfs as ALMANAC_HOME, filled on purpose. Mounting needs root (as in CI); anywhere
// else the suite is skipped and says why.
const disk = await mountSmallFileSystem("4m", "almanac-full-disk-");
const mountPoint = disk.path;
const mountProblem = disk.problem;
afterAll(() => disk.dispose());

const stem = sessionKeyToFileStem(
  formatSessionKey({ channel: "api", account: "default", kind: "api", id: "disk" }),
);

describe.skipIf(mountProblem !== undefined)(
  `a full disk${mountProblem === undefined ? "" : ` (skipped: cannot mount a tmpfs, needs root: ${mountProblem})`}`,
  () => {
    let running: TestServer | undefined;
    afterAll(async () => {
      await running?.close();
    });

    it("answers 507 storage.full naming the data directory, says so in /readyz, and heals when space returns", async () => {
      running = await startTestServer({ home: mountPoint });
      const { client, llm, api } = running;
      llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
      const ask = (content: string) =>
        client.chat.completions.create({
          model: "almanac",
          user: "disk",
          messages: [{ role: "user", content }],
        });
      const askStreaming = (content: string) =>
        client.chat.completions.create({
          model: "almanac",
          user: "disk",
          stream: true,
          messages: [{ role: "user", content }],
        });

      const first = await ask("The vault code is 4711.");
      expect(first.choices[0]?.message.content).toBe("echo: The vault code is 4711.");

      const filler = join(mountPoint, "filler.bin");
      await fillDisk(filler);

      // Longer than a page, so the transcript append itself runs out of space part-way through a line.
      const long = `Also remember the gate code 0815. ${"(padding) ".repeat(1_000)}`;
      const refused = await ask(long).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(APIError);
      const apiError = refused as APIError;
      expect(apiError.status).toBe(507);
      expect(apiError.code).toBe("storage.full");
      expect(apiError.message).toContain(mountPoint);
      expect(apiError.message).toContain("ENOSPC");

      // A streamed request is refused before any event is sent: the same status and body.
      const streamed = await askStreaming("Streamed while full.").catch((error: unknown) => error);
      expect((streamed as APIError).status).toBe(507);
      expect((streamed as APIError).code).toBe("storage.full");

      const unready = await fetch(`${running.server.url}/readyz`);
      expect(unready.status).toBe(503);
      const unreadyBody = (await unready.json()) as { checks: { storage: Record<string, unknown> } };
      expect(unreadyBody.checks.storage).toMatchObject({
        ok: false,
        code: "storage.full",
        errno: "ENOSPC",
        dataDir: mountPoint,
        since: expect.any(String),
        hint: expect.stringContaining("Free space"),
      });
      const info = (await (await api("/api/info")).json()) as { storage: Record<string, unknown> };
      expect(info.storage).toMatchObject({ ok: false, code: "storage.full" });

      await unlink(filler);
      const healed = await ask("What codes did I give you?");
      expect(healed.choices[0]?.message.content).toBe("echo: What codes did I give you?");
      const ready = await fetch(`${running.server.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(((await ready.json()) as { checks: { storage: unknown } }).checks.storage).toEqual({
        ok: true,
        dataDir: mountPoint,
      });

      // Nothing the user sent is lost: the refused messages reach the model and the transcript once space is back.
      const sent = llm
        .chatRequests()
        .at(-1)
        ?.messages.filter((message) => message.role === "user")
        .map((message) => String(message.content));
      expect(sent).toEqual([
        "The vault code is 4711.",
        long,
        "Streamed while full.",
        "What codes did I give you?",
      ]);
      const transcript = await readTranscriptLines(mountPoint, stem);
      expect(transcript.map((line) => `${line.role}:${line.text}`)).toEqual([
        "user:The vault code is 4711.",
        "assistant:echo: The vault code is 4711.",
        `user:${long}`,
        "user:Streamed while full.",
        "user:What codes did I give you?",
        "assistant:echo: What codes did I give you?",
      ]);
    });
  },
);
