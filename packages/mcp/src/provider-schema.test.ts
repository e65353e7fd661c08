import { describe, expect, it } from "vitest";
import { toProviderSchema } from "./provider-schema.js";
import { namespacedToolName } from "./tool-names.js";
import { toToolOutput } from "./tool-result.js";

describe("a tool's schema as providers accept it", () => {
  it("drops keywords providers refuse, keeps the structure, and inlines local $refs", () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      $id: "urn:x",
      type: "object",
      properties: {
        when: { type: "string", format: "date-time", examples: ["2026-01-01"], description: "When." },
        where: { $ref: "#/$defs/Place", description: "Where." },
        $weird: { type: "number" },
      },
      required: ["when"],
      additionalProperties: false,
      $defs: { Place: { type: "object", properties: { city: { type: "string" } }, "x-vendor": 1 } },
    };
    expect(toProviderSchema(schema)).toEqual({
      type: "object",
      properties: {
        when: { type: "string", description: "When." },
        where: { type: "object", properties: { city: { type: "string" } }, description: "Where." },
        $weird: { type: "number" },
      },
      required: ["when"],
      additionalProperties: false,
    });
  });

  it("makes an object schema of anything else, and stops a recursive $ref", () => {
    expect(toProviderSchema(undefined)).toEqual({ type: "object", properties: {} });
    expect(toProviderSchema({ type: "string" })).toEqual({ type: "object", properties: {} });
    expect(toProviderSchema({ properties: { a: { type: "string" } } })).toEqual({
      type: "object",
      properties: { a: { type: "string" } },
    });
    const recursive = toProviderSchema({
      type: "object",
      properties: { node: { $ref: "#/definitions/Node" } },
      definitions: { Node: { type: "object", properties: { child: { $ref: "#/definitions/Node" } } } },
    });
    expect(JSON.stringify(recursive).length).toBeLessThan(2_000);
  });
});

describe("tool names and results", () => {
  it("names a tool mcp__server__tool with characters providers accept, at most 64, without collisions", () => {
    expect(namespacedToolName("calendar", "list.events")).toBe("mcp__calendar__list_events");
    const long = namespacedToolName(
      "a-very-long-server-name-indeed",
      "and_a_tool_with_an_even_longer_name_here",
    );
    const other = namespacedToolName(
      "a-very-long-server-name-indeed",
      "and_a_tool_with_an_even_longer_name_herf",
    );
    expect(long.length).toBeLessThanOrEqual(64);
    expect(long).not.toBe(other);
  });

  it("reads text parts, describes images and binary resources without pasting them, and flags errors", () => {
    expect(
      toToolOutput(
        {
          content: [
            { type: "text", text: "line one" },
            { type: "image", mimeType: "image/png", data: "aGVsbG8=" },
            { type: "resource", resource: { uri: "file:///a.txt", text: "inside" } },
          ],
        },
        "server",
      ),
    ).toBe("line one\n[image: image/png, 5 bytes, not shown]\n[resource file:///a.txt]\ninside");
    expect(toToolOutput({ content: [{ type: "text", text: "no" }], isError: true }, "server")).toEqual({
      content: "no",
      isError: true,
    });
    expect(toToolOutput({ content: [], structuredContent: { sum: 3 } }, "server")).toBe('{"sum":3}');
    expect(toToolOutput("garbage", "The server")).toMatchObject({ isError: true });
  });
});
