import { describe, expect, it } from "vitest";
import { conversationHref, conversationOf, newConversationId, webSessionKey } from "./conversations.js";

describe("console conversations", () => {
  it("names a conversation's session as the server does, escaping % and : in its id", () => {
    expect(webSessionKey("tides")).toBe("web:default:web:tides");
    expect(webSessionKey("a:b%c 张三")).toBe("web:default:web:a%3Ab%25c 张三");
  });

  it("reads the id back from a console session key, and nothing from any other key", () => {
    for (const id of ["tides", "a:b%c", "%3A literal", "张三"])
      expect(conversationOf(webSessionKey(id))).toBe(id);
    expect(conversationOf("api:default:api:tides")).toBeUndefined();
    expect(conversationOf("web:default:web:")).toBeUndefined();
    expect(conversationOf("web:default:web:room:thread")).toBeUndefined();
  });

  it("links to a conversation with its id encoded, and makes fresh ids that differ", () => {
    expect(conversationHref("a&b c")).toBe("/chat?conversation=a%26b%20c");
    const ids = new Set(Array.from({ length: 50 }, () => newConversationId(1_700_000_000_000)));
    expect(ids.size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^chat-[0-9a-z]+-[0-9a-f]{8}$/);
  });
});
