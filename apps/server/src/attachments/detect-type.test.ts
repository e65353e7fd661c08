import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { detectFileType } from "./detect-type.js";

/** The first bytes of a Windows program (an MZ header with a PE signature), as a `.jpg` might carry them. */
function windowsProgram(): Uint8Array {
  const bytes = new Uint8Array(512);
  bytes.set([0x4d, 0x5a], 0); // MZ
  bytes.set([0x80, 0x00, 0x00, 0x00], 0x3c); // e_lfanew → 0x80
  bytes.set([0x50, 0x45, 0x00, 0x00], 0x80); // PE\0\0
  bytes.set([0x4c, 0x01], 0x84); // i386
  return bytes;
}

describe("type detection by content", () => {
  it("refuses a program whatever it is called, and says what it is", async () => {
    const check = await detectFileType(windowsProgram());
    expect(check.accepted).toBe(false);
    expect(check.accepted ? "" : check.reason).toMatch(/Windows program/);
    const elf = new Uint8Array(64);
    elf.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0);
    expect((await detectFileType(elf)).accepted).toBe(false);
  });

  it("accepts an image by its bytes, with the extension of what it really is", async () => {
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: "#f00" } })
      .png()
      .toBuffer();
    expect(await detectFileType(png)).toEqual({
      accepted: true,
      type: { mime: "image/png", extension: "png", category: "image" },
    });
  });

  it("accepts UTF-8 text (notes, CSV, code) and refuses an unknown binary and an empty file", async () => {
    expect(await detectFileType(new TextEncoder().encode("名前,数\nAnn,3\n"))).toEqual({
      accepted: true,
      type: { mime: "text/plain", extension: undefined, category: "text" },
    });
    expect((await detectFileType(new Uint8Array([0, 159, 146, 150, 0, 1, 2]))).accepted).toBe(false);
    expect((await detectFileType(new Uint8Array())).accepted).toBe(false);
  });

  it("accepts a PDF and an Ogg voice recording", async () => {
    const pdf = new TextEncoder().encode("%PDF-1.7\n1 0 obj\n<<>>\nendobj\n");
    expect(await detectFileType(pdf)).toMatchObject({ accepted: true, type: { category: "document" } });
    const ogg = new Uint8Array([
      ...new TextEncoder().encode("OggS"),
      0,
      2,
      ...new Array(20).fill(0),
      1,
      19,
      ...new TextEncoder().encode("OpusHead"),
      1,
      1,
      0,
      0,
    ]);
    expect(await detectFileType(ogg)).toMatchObject({
      accepted: true,
      type: { mime: "audio/ogg", category: "audio" },
    });
  });
});
