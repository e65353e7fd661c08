export {
  type FakeQdrant,
  type FakeQdrantOptions,
  type FakeQdrantRequest,
  startFakeQdrant,
} from "./fake-qdrant.js";
export { QDRANT_SCHEMA_VERSION } from "./qdrant-schema.js";
