import { z } from "zod";
import { DingTalkError } from "./errors.js";
import { describeErrorBody, postJson } from "./http-json.js";

/** What `POST /v1.0/gateway/connections/open` needs. */
export interface OpenConnectionRequest {
  readonly gatewayUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly ua: string;
  readonly subscriptions: readonly { readonly type: string; readonly topic: string }[];
  readonly timeoutMs: number;
}

/** Where to open the stream WebSocket. */
export interface StreamEndpoint {
  readonly endpoint: string;
  readonly ticket: string;
}

const endpointSchema = z.object({
  endpoint: z.url({ protocol: /^wss?$/ }),
  ticket: z.string().min(1),
});

/**
 * Asks DingTalk's gateway for a stream endpoint and a one-time ticket (what `DWClient.getEndpoint` does,
 * with a configurable base URL and classified errors).
 * @throws DingTalkError `dingtalk.auth_failed` when DingTalk refuses the credentials (HTTP 400/401/403),
 * `dingtalk.gateway_unavailable` or `dingtalk.network` otherwise.
 */
export async function openStreamConnection(request: OpenConnectionRequest): Promise<StreamEndpoint> {
  const url = `${request.gatewayUrl}/v1.0/gateway/connections/open`;
  const response = await postJson(
    url,
    {
      clientId: request.clientId,
      clientSecret: request.clientSecret,
      ua: request.ua,
      subscriptions: request.subscriptions,
    },
    { timeoutMs: request.timeoutMs, what: "connections/open" },
  );
  if (response.status === 200) {
    const parsed = endpointSchema.safeParse(response.body);
    if (parsed.success) return parsed.data;
    throw new DingTalkError(
      "dingtalk.gateway_unavailable",
      "DingTalk connections/open answered without a ws endpoint and ticket.",
      {
        status: response.status,
      },
    );
  }
  const { code, message } = describeErrorBody(response.body);
  const said = `HTTP ${response.status}${code === undefined ? "" : ` ${code}`}: ${message}`;
  if (response.status === 400 || response.status === 401 || response.status === 403) {
    throw new DingTalkError(
      "dingtalk.auth_failed",
      `DingTalk refused the credentials at connections/open (${said}); check clientId and clientSecret.`,
      { status: response.status, ...(code === undefined ? {} : { platformCode: code }), retryable: false },
    );
  }
  throw new DingTalkError("dingtalk.gateway_unavailable", `DingTalk connections/open failed (${said}).`, {
    status: response.status,
    ...(code === undefined ? {} : { platformCode: code }),
  });
}
