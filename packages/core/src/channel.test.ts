import { describe, expect, it } from "vitest";
import { type ChannelAdapter, hasWebhook } from "./channel.js";

const adapter: ChannelAdapter = {
  name: "example",
  start: async () => {},
  send: async () => {},
  status: () => ({ channel: "example", state: "ready" }),
  stop: async () => {},
};
const handleWebhook = async () => ({ status: 200, body: {} });

describe("hasWebhook", () => {
  it("recognizes an adapter by its ability, whatever its class: a handler and webhooks switched on", () => {
    expect(hasWebhook({ ...adapter, receivesWebhooks: true, handleWebhook } as ChannelAdapter)).toBe(true);
  });

  it("refuses an adapter without a handler, and one configured to connect out instead", () => {
    expect(hasWebhook(adapter)).toBe(false);
    expect(hasWebhook({ ...adapter, receivesWebhooks: false, handleWebhook } as ChannelAdapter)).toBe(false);
    expect(hasWebhook({ ...adapter, receivesWebhooks: true } as ChannelAdapter)).toBe(false);
  });
});
