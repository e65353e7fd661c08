import { createHash } from "node:crypto";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/iu;

/** The RFC 4122 URL namespace (`6ba7b811-…`), a fixed namespace for names that are not DNS names. */
export const URL_NAMESPACE = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";

/**
 * A name-based UUID (RFC 4122 version 5: SHA-1 of namespace + name). The same name always gives
 * the same id, which is what makes re-indexing idempotent in Qdrant.
 */
export function uuidV5(name: string, namespace: string = URL_NAMESPACE): string {
  if (!uuidPattern.test(namespace)) throw new RangeError(`uuidV5: "${namespace}" is not a UUID`);
  const namespaceBytes = Buffer.from(namespace.replaceAll("-", ""), "hex");
  const bytes = createHash("sha1").update(namespaceBytes).update(name, "utf8").digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
