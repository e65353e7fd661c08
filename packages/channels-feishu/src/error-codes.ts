import { type CodesOf, defineErrorCodes } from "@almanac/core";

/** Every code the Feishu adapter throws or answers a webhook with. */
export const feishuErrorCodes = defineErrorCodes({
  "feishu.config_invalid": { category: "user" },
  "feishu.session_key_invalid": { category: "user" },
  "feishu.already_started": { category: "internal" },
  "feishu.not_started": { category: "internal", status: 503 },
  "feishu.split_failed": { category: "internal" },
  "feishu.rate_limited": { category: "provider" },
  "feishu.message_too_large": { category: "provider" },
  "feishu.auth_failed": { category: "provider" },
  "feishu.connect_failed": { category: "provider" },
  "feishu.network_error": { category: "provider" },
  "feishu.invalid_response": { category: "provider" },
  "feishu.api_error": { category: "provider" },
  "feishu.upload_too_large": { category: "user" },
  "feishu.webhook_disabled": { category: "user", status: 404 },
  "feishu.webhook_invalid_body": { category: "user", status: 400 },
  "feishu.webhook_encrypted": { category: "user", status: 400 },
  "feishu.webhook_decrypt_failed": { category: "user", status: 401 },
  "feishu.webhook_signature_invalid": { category: "user", status: 401 },
  "feishu.webhook_signature_missing": { category: "user", status: 401 },
  "feishu.webhook_stale": { category: "user", status: 401 },
  "feishu.webhook_token_invalid": { category: "user", status: 401 },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof feishuErrorCodes> {}
}

/** A code of a failed call to the Feishu open platform. */
export type FeishuApiErrorCode = Extract<
  keyof typeof feishuErrorCodes,
  | "feishu.rate_limited"
  | "feishu.message_too_large"
  | "feishu.auth_failed"
  | "feishu.connect_failed"
  | "feishu.network_error"
  | "feishu.invalid_response"
  | "feishu.api_error"
>;
