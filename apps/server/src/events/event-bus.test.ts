import { describe, expect, it } from "vitest";
import { createEventBus, type PublishedEvent } from "./event-bus.js";

describe("event bus", () => {
  it("gives every published event the next id and delivers it to each listener in order", () => {
    const bus = createEventBus();
    const first: PublishedEvent[] = [];
    const second: PublishedEvent[] = [];
    bus.subscribe((published) => first.push(published));
    bus.subscribe((published) => second.push(published));
    bus.publish({ type: "session-loaded", sessionKey: "web:default:web:a" });
    bus.publish({ type: "session-unloaded", sessionKey: "web:default:web:a" });
    expect(first.map((published) => [published.id, published.event.type])).toEqual([
      [1, "session-loaded"],
      [2, "session-unloaded"],
    ]);
    expect(second).toEqual(first);
  });

  it("is inactive and numbers nothing while nobody listens", () => {
    const bus = createEventBus();
    expect(bus.active).toBe(false);
    bus.publish({ type: "session-loaded", sessionKey: "web:default:web:a" });
    const seen: number[] = [];
    const unsubscribe = bus.subscribe((published) => seen.push(published.id));
    expect(bus.active).toBe(true);
    bus.publish({ type: "session-loaded", sessionKey: "web:default:web:b" });
    unsubscribe();
    expect(bus.active).toBe(false);
    bus.publish({ type: "session-loaded", sessionKey: "web:default:web:c" });
    expect(seen).toEqual([1]);
  });

  it("keeps delivering to the others when a listener throws, and reports the error", () => {
    const errors: unknown[] = [];
    const bus = createEventBus({ onListenerError: (error) => errors.push(error) });
    const seen: string[] = [];
    bus.subscribe(() => {
      throw new Error("broken listener");
    });
    bus.subscribe((published) => seen.push(published.event.type));
    bus.publish({ type: "session-created", sessionKey: "web:default:web:a" });
    expect(seen).toEqual(["session-created"]);
    expect(errors).toHaveLength(1);
  });

  it("tells watchers the listener count, and the same function subscribed twice counts twice", () => {
    const bus = createEventBus();
    const counts: number[] = [];
    bus.onListenerCount((count) => counts.push(count));
    const listener = () => {};
    const offFirst = bus.subscribe(listener);
    const offSecond = bus.subscribe(listener);
    offFirst();
    offFirst();
    offSecond();
    expect(counts).toEqual([1, 2, 1, 0]);
  });
});
