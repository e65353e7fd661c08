export {
  emptyMessagePlaceholder,
  type FromOpenAIOptions,
  fromOpenAIMessage,
  type OpenAIChatMessage,
  type OpenAIImagePart,
  type OpenAITextPart,
  type OpenAIToolCall,
  openAIChatMessageSchema,
  type ToOpenAIOptions,
  toOpenAIMessage,
  toOpenAIMessages,
  toOpenAIMessagesJson,
} from "./openai-wire.js";
