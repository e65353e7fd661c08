import type { ChildProcess } from "node:child_process";

/**
 * Kills `child` when this bench exits, however it exits: a bench piped to `head` or `grep -m1`, or stopped with
 * Ctrl-C, must not leave a server or a scripted model running (it would load the machine's next measurements).
 */
export function killOnExit(child: ChildProcess): void {
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  child.once("exit", () => process.off("exit", kill));
  endOnBrokenPipeOrSignal();
}

let installed = false;

/** Output piped to `head` or `grep -m1`, Ctrl-C or a TERM: exit (running the `exit` handlers) instead of running on. */
function endOnBrokenPipeOrSignal(): void {
  if (installed) return;
  installed = true;
  process.stdout.on("error", () => process.exit(1));
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));
}
