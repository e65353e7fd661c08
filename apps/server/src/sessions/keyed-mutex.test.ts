import { describe, expect, it } from "vitest";
import { createKeyedMutex } from "./keyed-mutex.js";

describe("createKeyedMutex", () => {
  it("runs work on one key one at a time, in call order, while other keys run alongside", async () => {
    const mutex = createKeyedMutex();
    const log: string[] = [];
    const step = (label: string) => async () => {
      log.push(`${label} start`);
      await new Promise((resolve) => setImmediate(resolve));
      log.push(`${label} end`);
      return label;
    };
    const results = await Promise.all([
      mutex.run("a", step("a1")),
      mutex.run("b", step("b1")),
      mutex.run("a", step("a2")),
    ]);
    expect(results).toEqual(["a1", "b1", "a2"]);
    expect(log.indexOf("a2 start")).toBe(log.indexOf("a1 end") + 1);
    expect(log.indexOf("b1 start")).toBeLessThan(log.indexOf("a1 end"));
  });

  it("passes a failure to its caller and still runs the next work on that key", async () => {
    const mutex = createKeyedMutex();
    const failing = mutex.run("a", async () => {
      throw new Error("boom");
    });
    const next = mutex.run("a", async () => "next");
    await expect(failing).rejects.toThrow("boom");
    await expect(next).resolves.toBe("next");
  });

  it("forgets keys once their work is done", async () => {
    const mutex = createKeyedMutex();
    const pending = Array.from({ length: 1_000 }, (_, index) => mutex.run(`key-${index}`, async () => index));
    expect(mutex.size).toBe(1_000);
    await Promise.all(pending);
    await new Promise((resolve) => setImmediate(resolve));
    expect(mutex.size).toBe(0);
  });
});
