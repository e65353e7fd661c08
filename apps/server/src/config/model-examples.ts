/** Settings that point Almanac at one kind of model server, as the first-run page and the docs show them. */
export interface ModelExample {
  readonly id: string;
  readonly label: string;
  /** One or two sentences: what to run first, what to adapt. */
  readonly note: string;
  /** Environment variables to set (names from the configuration schema; a test checks them). */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Examples for the providers self-hosters use most. Values in angle brackets are placeholders; the rest work
 * as shown for a default install of that server. Local servers need no API key.
 */
export const MODEL_EXAMPLES: readonly ModelExample[] = [
  {
    id: "openai",
    label: "OpenAI",
    note: "An API key from platform.openai.com. Newer models take max_completion_tokens as the output cap.",
    env: {
      ALMANAC_MODEL_BASE_URL: "https://api.openai.com/v1",
      ALMANAC_MODEL_API_KEY: "<sk-... your key>",
      ALMANAC_MODEL_NAME: "gpt-4.1-mini",
      ALMANAC_MODEL_CONTEXT_WINDOW: "1047576",
      ALMANAC_MODEL_OUTPUT_CAP_PARAMETER: "max_completion_tokens",
      ALMANAC_EMBEDDING_BASE_URL: "https://api.openai.com/v1",
      ALMANAC_EMBEDDING_API_KEY: "<sk-... your key>",
      ALMANAC_EMBEDDING_MODEL: "text-embedding-3-small",
    },
  },
  {
    id: "dashscope",
    label: "DashScope (Qwen)",
    note: "Alibaba Cloud Model Studio's OpenAI-compatible mode; outside mainland China use dashscope-intl.aliyuncs.com.",
    env: {
      ALMANAC_MODEL_BASE_URL: "https://dashscope.aliyuncs.com/compatible-mode/v1",
      ALMANAC_MODEL_API_KEY: "<sk-... your DashScope key>",
      ALMANAC_MODEL_NAME: "qwen-plus",
      ALMANAC_MODEL_CONTEXT_WINDOW: "131072",
      ALMANAC_EMBEDDING_BASE_URL: "https://dashscope.aliyuncs.com/compatible-mode/v1",
      ALMANAC_EMBEDDING_API_KEY: "<sk-... your DashScope key>",
      ALMANAC_EMBEDDING_MODEL: "text-embedding-v3",
    },
  },
  {
    id: "ollama",
    label: "Ollama",
    note: "Run `ollama pull qwen2.5:7b` and `ollama pull nomic-embed-text` first. In Docker Compose use http://ollama:11434/v1.",
    env: {
      ALMANAC_MODEL_BASE_URL: "http://127.0.0.1:11434/v1",
      ALMANAC_MODEL_NAME: "qwen2.5:7b",
      ALMANAC_MODEL_CONTEXT_WINDOW: "32768",
      ALMANAC_EMBEDDING_BASE_URL: "http://127.0.0.1:11434/v1",
      ALMANAC_EMBEDDING_MODEL: "nomic-embed-text",
    },
  },
  {
    id: "vllm",
    label: "vLLM",
    note: "Started with `vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768`; add ALMANAC_MODEL_API_KEY if you passed --api-key.",
    env: {
      ALMANAC_MODEL_BASE_URL: "http://127.0.0.1:8000/v1",
      ALMANAC_MODEL_NAME: "Qwen/Qwen2.5-7B-Instruct",
      ALMANAC_MODEL_CONTEXT_WINDOW: "32768",
    },
  },
  {
    id: "lm-studio",
    label: "LM Studio",
    note: "Start the local server (Developer tab); the model name is the id LM Studio shows for the loaded model.",
    env: {
      ALMANAC_MODEL_BASE_URL: "http://127.0.0.1:1234/v1",
      ALMANAC_MODEL_NAME: "qwen2.5-7b-instruct",
      ALMANAC_MODEL_CONTEXT_WINDOW: "32768",
    },
  },
];
