import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeDiscord, startFakeDiscord } from "./fake-discord.js";
import { MAX_NONCE_LENGTH } from "./fake-discord-schemas.js";

let fake: FakeDiscord;
let now = 1_800_000_000_000;

beforeEach(async () => {
  now = 1_800_000_000_000;
  fake = await startFakeDiscord({ clock: () => now, nonceWindowMs: 60_000 });
});
afterEach(async () => {
  await fake.close();
});

const post = (body: unknown, init: { readonly signal?: AbortSignal } = {}) =>
  fetch(`${fake.apiUrl}/v10/channels/${fake.world.ids.channel}/messages`, {
    method: "POST",
    headers: { authorization: `Bot ${fake.token()}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    ...init,
  });

const idOf = async (response: Response) => ((await response.json()) as { id: string }).id;

describe("fake Discord nonces", () => {
  it("answers a repeated nonce with enforce_nonce with the message already created, and creates nothing", async () => {
    const first = await post({ content: "Stretch now.", nonce: "a1", enforce_nonce: true });
    const again = await post({ content: "Stretch now.", nonce: "a1", enforce_nonce: true });
    expect(again.status).toBe(200);
    expect(await idOf(again)).toBe(await idOf(first));
    expect(fake.sent()).toHaveLength(1);
    expect(fake.events().filter((event) => event.t === "MESSAGE_CREATE")).toHaveLength(1);
    expect(fake.sent()[0]?.message).toMatchObject({ nonce: "a1" });
  });

  it("creates a new message without enforce_nonce, for another nonce, and once the window has passed", async () => {
    await post({ content: "one", nonce: "a1", enforce_nonce: true });
    await post({ content: "two", nonce: "a1" });
    await post({ content: "three", nonce: "b2", enforce_nonce: true });
    now += 60_001;
    await post({ content: "four", nonce: "a1", enforce_nonce: true });
    expect(fake.sent().map((message) => message.content)).toEqual(["one", "two", "three", "four"]);
  });

  it("refuses a nonce longer than 25 characters with 50035, as Discord does", async () => {
    const refused = await post({
      content: "x",
      nonce: "n".repeat(MAX_NONCE_LENGTH + 1),
      enforce_nonce: true,
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ code: 50035, errors: { nonce: expect.anything() } });
    expect((await post({ content: "x", nonce: "n".repeat(MAX_NONCE_LENGTH) })).status).toBe(200);
  });
});

describe("fake Discord held answers", () => {
  it("creates the next message but answers only when released", async () => {
    const held = fake.holdNextMessageResponse();
    let answered = false;
    const pending = post({ content: "held", nonce: "h1", enforce_nonce: true }).then((response) => {
      answered = true;
      return response;
    });
    const message = await held.message;
    expect(message.content).toBe("held");
    expect(fake.sent()).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    held.release();
    const response = await pending;
    expect(response.status).toBe(200);
    expect(await idOf(response)).toBe(message.id);
  });

  it("keeps the message when the client goes away while held, and a repeat of its nonce gets it, unheld", async () => {
    const held = fake.holdNextMessageResponse();
    const client = new AbortController();
    const pending = post({ content: "held", nonce: "h2", enforce_nonce: true }, { signal: client.signal });
    const message = await held.message;
    client.abort();
    await expect(pending).rejects.toThrow();
    fake.holdNextMessageResponse();
    const again = await post({ content: "held", nonce: "h2", enforce_nonce: true });
    expect(await idOf(again)).toBe(message.id);
    expect(fake.sent()).toHaveLength(1);
  });

  it("releasing before any request cancels the hold", async () => {
    fake.holdNextMessageResponse().release();
    expect((await post({ content: "free" })).status).toBe(200);
  });
});
