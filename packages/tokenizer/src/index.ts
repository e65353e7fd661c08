export {
  countToolTokens,
  countWireToolTokens,
  createEstimatingTokenCounter,
  createTokenCounter,
  estimateTokens,
  IMAGE_TOKEN_ESTIMATE,
} from "./token-counter.js";
