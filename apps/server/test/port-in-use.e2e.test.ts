import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runAlmanac } from "./cli-process.js";
import { TEST_TOKEN } from "./test-server.js";

let home: string;
let occupant: Server;
let port: number;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "almanac-port-"));
  occupant = createServer();
  await new Promise<void>((resolve) => occupant.listen(0, "127.0.0.1", resolve));
  const address = occupant.address();
  port = typeof address === "object" && address !== null ? address.port : 0;
});

afterEach(async () => {
  await new Promise<void>((resolve) => occupant.close(() => resolve()));
  await rm(home, { recursive: true, force: true });
});

describe("almanac start on a port that is already taken", () => {
  it("prints one line naming the address and the variable to change, and exits 5 without a stack", async () => {
    const run = await runAlmanac(["start"], {
      cwd: home,
      env: {
        ALMANAC_HOME: home,
        ALMANAC_HOST: "127.0.0.1",
        ALMANAC_PORT: String(port),
        ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
      },
    });
    expect(run.code).toBe(5);
    const lines = run.stderr.split("\n").filter((line) => line.trim() !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`127.0.0.1:${port}`);
    expect(lines[0]).toContain("already in use");
    expect(lines[0]).toContain("ALMANAC_PORT");
    // No stack anywhere, not in the log lines on stdout either.
    expect(`${run.stdout}\n${run.stderr}`).not.toMatch(/\n\s+at /);
    expect(run.stdout).not.toContain("almanac listening");
  });
});

describe("the first start of a new data directory", () => {
  it("prints the generated admin token only once the server listens, so a failed first start loses no token", async () => {
    const env = { ALMANAC_HOME: home, ALMANAC_HOST: "127.0.0.1", ALMANAC_PORT: String(port) };
    const failed = await runAlmanac(["start"], { cwd: home, env });
    expect(failed.code).toBe(5);
    expect(`${failed.stdout}${failed.stderr}`).not.toContain("generated an admin token");
    expect(existsSync(join(home, "admin-token"))).toBe(false);
  });
});

describe("almanac start on a data directory it cannot write", () => {
  it("prints one line naming the directory, the user and the fix, and exits 78 without a stack", async () => {
    // Root ignores permission bits: as root, the server runs as `nobody`, as a container's user would.
    const asRoot = process.getuid?.() === 0;
    const user = asRoot ? { uid: 65_534, gid: 65_534 } : undefined;
    await chmod(home, 0o755);
    const readOnly = join(home, "read-only");
    await mkdir(readOnly, { mode: 0o555 });
    const run = await runAlmanac(["start"], {
      cwd: home,
      env: { ALMANAC_HOME: join(readOnly, "data"), ALMANAC_PORT: "0", ALMANAC_ADMIN_TOKEN: TEST_TOKEN },
      ...(user === undefined ? {} : { user }),
    });
    expect(run.code, run.stderr).toBe(78);
    const lines = run.stderr.split("\n").filter((line) => line.trim() !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${join(readOnly, "data")} is not writable by this user`);
    expect(lines[0]).toContain("chown");
    expect(`${run.stdout}\n${run.stderr}`).not.toMatch(/\n\s+at /);
  });
});
