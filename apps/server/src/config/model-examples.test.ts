import { describe, expect, it } from "vitest";
import { loadConfig, missingModelSettings } from "./load-config.js";
import { MODEL_EXAMPLES } from "./model-examples.js";
import { listSettings } from "./settings.js";

describe("model examples of the first-run page", () => {
  it("cover OpenAI, DashScope, Ollama, vLLM and LM Studio", () => {
    expect(MODEL_EXAMPLES.map((example) => example.id)).toEqual([
      "openai",
      "dashscope",
      "ollama",
      "vllm",
      "lm-studio",
    ]);
  });

  it("name only variables of the configuration schema", () => {
    const known = new Set(listSettings().map((setting) => setting.env));
    for (const example of MODEL_EXAMPLES) {
      const unknown = Object.keys(example.env).filter((name) => !known.has(name));
      expect(unknown, example.id).toEqual([]);
    }
  });

  it("each load as a valid configuration with a model configured", () => {
    for (const example of MODEL_EXAMPLES) {
      const { config } = loadConfig({
        env: { ...example.env, ALMANAC_HOME: "/tmp/almanac-example" },
        cwd: "/",
      });
      expect(missingModelSettings(config), example.id).toEqual([]);
    }
  });
});
