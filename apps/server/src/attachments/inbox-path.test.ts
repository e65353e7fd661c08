import { OWNER_SCOPE, sharedScope } from "@almanac/memory-files";
import { describe, expect, it } from "vitest";
import { inboxFolder, isInboxFilePath, numberedFileName, safeFileName } from "./inbox-path.js";

describe("the inbox folder of a scope", () => {
  it("is inbox/<day> for the owner and shared/<scope folder>/inbox/<day> for a shared chat", () => {
    expect(inboxFolder(OWNER_SCOPE, "2026-12-06")).toBe("inbox/2026-12-06");
    const group = sharedScope({ channel: "discord", account: "default", kind: "group", id: "42" });
    expect(inboxFolder(group, "2026-12-06")).toBe("shared/discord-default-group-42/inbox/2026-12-06");
  });

  it("keeps a shared chat's files out of the owner's inbox, whatever the chat's id", () => {
    const sneaky = sharedScope({ channel: "feishu", account: "default", kind: "group", id: "../../inbox" });
    const folder = inboxFolder(sneaky, "2026-12-06");
    expect(folder.startsWith("shared/")).toBe(true);
    expect(folder.split("/")).toHaveLength(4);
    expect(folder.split("/")).not.toContain("..");
  });

  it("refuses a date that is not one", () => {
    expect(() => inboxFolder(OWNER_SCOPE, "../x")).toThrow(RangeError);
  });
});

describe("which paths an image reference may name", () => {
  it("accepts files in an inbox day folder and nothing else", () => {
    expect(isInboxFilePath("inbox/2026-12-06/photo.jpg")).toBe(true);
    expect(isInboxFilePath("shared/discord-default-group-42/inbox/2026-12-06/cat.png")).toBe(true);
    for (const path of [
      "MEMORY.md",
      "memory/2026-12-06.md",
      "inbox/2026-12-06/../../MEMORY.md",
      "inbox/../MEMORY.md",
      "inbox/2026-12-06/.hidden.jpg",
      "inbox/notadate/photo.jpg",
      "shared/x/2026-12-06.md",
      "shared/x/inbox/2026-12-06/a\\..\\b.jpg",
      "/etc/passwd",
      "inbox/2026-12-06/",
    ])
      expect(isInboxFilePath(path), path).toBe(false);
  });
});

describe("the name a received file is saved under", () => {
  it("keeps a plain name, and takes the extension of the type the content was detected as", () => {
    expect(safeFileName("Report Q3.pdf", "file", "pdf")).toBe("Report Q3.pdf");
    expect(safeFileName("photo.JPEG", "image", "jpg")).toBe("photo.jpeg");
    expect(safeFileName("photo.jpg", "image", "png")).toBe("photo.png");
    expect(safeFileName("notes.md", "file", undefined)).toBe("notes.md");
  });

  it("removes paths, control and reserved characters and leading dots; names a nameless file", () => {
    expect(safeFileName("../../etc/passwd", "file", undefined)).toBe("passwd");
    expect(safeFileName("C:\\Users\\me\\a<b>:c?.txt", "file", undefined)).toBe("abc.txt");
    expect(safeFileName(".bashrc", "file", undefined)).toBe("bashrc");
    expect(safeFileName(undefined, "voice-message", "ogg")).toBe("voice-message.ogg");
    expect(safeFileName("...", "image", "png")).toBe("image.png");
    expect(safeFileName("a\u0000b\nc.png", "image", "png")).toBe("abc.png");
  });

  it("stays within 120 bytes, cutting whole characters", () => {
    const name = safeFileName(`${"照片".repeat(100)}.jpg`, "image", "jpg");
    expect(new TextEncoder().encode(name).length).toBeLessThanOrEqual(120);
    expect(name.endsWith(".jpg")).toBe(true);
    expect(name).not.toContain("\ufffd");
  });

  it("numbers a second file of the same name", () => {
    expect(numberedFileName("photo.jpg", 2)).toBe("photo-2.jpg");
    expect(numberedFileName("README", 3)).toBe("README-3");
  });
});
