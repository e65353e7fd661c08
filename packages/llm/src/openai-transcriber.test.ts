import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isModelError } from "./model-error.js";
import { createOpenAITranscriber } from "./openai-transcriber.js";

const apiKey = "sk-test-whisper-secret-77bb";
let llm: ScriptedLlm;

beforeEach(async () => {
  llm = await startScriptedLlm({ apiKey });
});
afterEach(async () => {
  await llm.close();
});

function transcriber(key = apiKey) {
  return createOpenAITranscriber({
    baseURL: llm.baseURL,
    apiKey: key,
    model: "whisper-1",
    maxRetries: 1,
    sleep: async () => {},
  });
}

const ogg = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 1, 2, 3, 4]);

describe("the transcriber", () => {
  it("uploads the recording as multipart form data and returns the text", async () => {
    llm.enqueueTranscriptions({ type: "transcript", text: "  remind me to call Ann at five  " });
    const text = await transcriber().transcribe(
      { bytes: ogg, name: "voice.ogg", contentType: "audio/ogg" },
      { language: "en" },
    );
    expect(text).toBe("remind me to call Ann at five");
    const [request] = llm.transcriptionRequests();
    expect(request).toMatchObject({
      model: "whisper-1",
      fileName: "voice.ogg",
      contentType: "audio/ogg",
      language: "en",
      responseFormat: "json",
    });
    expect([...(request?.bytes ?? [])]).toEqual([...ogg]);
  });

  it("retries a server error once and classifies a refused key without retrying it or naming it", async () => {
    llm.enqueueTranscriptions(script.error(503));
    expect(await transcriber().transcribe({ bytes: ogg, name: "a.ogg", contentType: "audio/ogg" })).toBe(
      "transcript of a.ogg (8 bytes)",
    );
    expect(llm.transcriptionRequests()).toHaveLength(2);

    const refused = await transcriber("sk-wrong-key-123456")
      .transcribe({ bytes: ogg, name: "a.ogg", contentType: "audio/ogg" })
      .catch((error: unknown) => error);
    expect(isModelError(refused, "auth")).toBe(true);
    expect(String((refused as Error).message)).toContain('transcription model "whisper-1"');
    expect(String((refused as Error).message)).not.toContain("sk-wrong-key");
  });
});
