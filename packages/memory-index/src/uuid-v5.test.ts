import { describe, expect, it } from "vitest";
import { documentSparseVector, querySparseVector, termDimension } from "./sparse-vector.js";
import { uuidV5 } from "./uuid-v5.js";

describe("uuidV5", () => {
  it("matches RFC 4122 reference values (as computed by Python's uuid.uuid5)", () => {
    expect(uuidV5("http://python.org/")).toBe("4c565f0d-3f5a-5890-b41b-20cf47701c5e");
    expect(uuidV5("www.example.com", "6ba7b810-9dad-11d1-80b4-00c04fd430c8")).toBe(
      "2ed6657d-e927-568b-95e1-2665a8aea6a2",
    );
  });

  it("refuses a namespace that is not a UUID", () => {
    expect(() => uuidV5("x", "not-a-uuid")).toThrow(RangeError);
  });
});

describe("sparse vectors", () => {
  it("hash terms to stable 32-bit dimensions, sorted and merged", () => {
    expect(termDimension("项目")).toBe(termDimension("项目"));
    expect(termDimension("apollo")).toBeLessThan(2 ** 32);
    const vector = documentSparseVector(["apollo", "launch", "apollo"], 3);
    expect(vector.indices).toEqual([...vector.indices].sort((a, b) => a - b));
    expect(vector.indices).toHaveLength(2);
    const apollo = vector.values[vector.indices.indexOf(termDimension("apollo"))]!;
    const launch = vector.values[vector.indices.indexOf(termDimension("launch"))]!;
    expect(apollo).toBeGreaterThan(launch); // term frequency counts, with saturation
    expect(apollo).toBeLessThan(2 * launch);
    expect(querySparseVector(["a", "a", "b"]).values).toEqual([1, 1]);
  });
});
