import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

/** The reference "everything" server's entry (stdio by default; `streamableHttp` or `sse` as its argument). */
export const EVERYTHING_SERVER = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

/** The reference filesystem server's entry (its arguments are the allowed directories). */
export const FILESYSTEM_SERVER = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", import.meta.url),
);

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The everything server over HTTP (`streamableHttp` or `sse`), listening once this resolves. */
export async function startEverythingOverHttp(
  mode: "streamableHttp" | "sse",
): Promise<{ readonly port: number; readonly child: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_SERVER, mode], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the everything server (${mode}) did not start`)),
      20_000,
    );
    const onData = (chunk: Buffer) => {
      if (/listening|running/i.test(chunk.toString())) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stderr?.on("data", onData);
    child.stdout?.on("data", onData);
    child.on("exit", (code) => reject(new Error(`the everything server exited with ${code}`)));
  });
  return {
    port,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}
