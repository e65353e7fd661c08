import { describe, expect, it } from "vitest";
import { dailyLogDate, memorySource, passageDate } from "./memory-source.js";

describe("dailyLogDate", () => {
  it("reads dated logs under memory/ only", () => {
    expect(dailyLogDate("memory/2025-03-01.md")).toBe(Date.UTC(2025, 2, 1));
    expect(dailyLogDate("memory/2025/2025-03-01.md")).toBe(Date.UTC(2025, 2, 1));
    expect(dailyLogDate("MEMORY.md")).toBeUndefined();
    expect(dailyLogDate("memory/notes.md")).toBeUndefined();
    expect(dailyLogDate("other/2025-03-01.md")).toBeUndefined();
  });
});

describe("memorySource", () => {
  it("tells MEMORY.md, daily logs and other notes apart", () => {
    expect(memorySource("MEMORY.md")).toBe("memory");
    expect(memorySource("memory/2025-03-01.md")).toBe("daily");
    expect(memorySource("memory/projects/apollo.md")).toBe("notes");
  });
});

describe("passageDate", () => {
  const modified = Date.UTC(2026, 11, 3, 23, 30);

  it("gives a daily log its own day, whenever the file was last edited", () => {
    expect(passageDate("memory/2025-03-01.md", modified)).toBe("2025-03-01");
    expect(passageDate("memory/chats/discord-123/2025-03-02.md", modified)).toBe("2025-03-02");
  });

  it("gives MEMORY.md and topic notes the day their file was last modified (UTC)", () => {
    expect(passageDate("MEMORY.md", modified)).toBe("2026-12-03");
    expect(passageDate("memory/projects/apollo.md", modified)).toBe("2026-12-03");
  });
});
