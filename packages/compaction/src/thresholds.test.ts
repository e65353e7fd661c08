import { describe, expect, it } from "vitest";
import { defaultThresholdCeiling, resolveThreshold } from "./thresholds.js";

describe("resolveThreshold", () => {
  it("uses 60% of the usable window for windows up to 16K", () => {
    const resolved = resolveThreshold(16_384, 2_048);
    expect(resolved.usableWindow).toBe(14_336);
    expect(resolved.share).toBe(0.6);
    expect(resolved.threshold).toBe(Math.floor(14_336 * 0.6));
  });

  it("moves to the next tier just above a tier's bound", () => {
    expect(resolveThreshold(16_385, 0).share).toBe(0.7);
    expect(resolveThreshold(65_536, 0).share).toBe(0.7);
    expect(resolveThreshold(65_537, 0).share).toBe(0.75);
    expect(resolveThreshold(262_144, 0).share).toBe(0.75);
    expect(resolveThreshold(262_145, 0).share).toBe(0.8);
  });

  it("caps a million-token window at the absolute ceiling", () => {
    const resolved = resolveThreshold(1_000_000, 32_000);
    expect(resolved.threshold).toBe(defaultThresholdCeiling);
    expect(resolved.capped).toBe(true);
  });

  it("lets a model override the share and the ceiling", () => {
    expect(resolveThreshold(128_000, 8_000, { share: 0.5 }).threshold).toBe(60_000);
    expect(resolveThreshold(128_000, 8_000, { ceiling: 50_000 }).threshold).toBe(50_000);
    expect(
      resolveThreshold(10_000, 0, { tiers: [{ upToWindow: 5_000, share: 0.9 }, { share: 0.4 }] }).threshold,
    ).toBe(4_000);
  });

  it("names the bad option when the output reserve eats the whole window", () => {
    expect(() => resolveThreshold(8_000, 8_000)).toThrow(/maxOutputTokens/);
    expect(() => resolveThreshold(8_000, 100, { share: 1.5 })).toThrow(/thresholds\.share/);
    expect(() => resolveThreshold(0, 0)).toThrow(
      expect.objectContaining({ code: "compaction.config_invalid" }) as unknown as Error,
    );
  });
});
