#!/usr/bin/env node
// Entry point of the `almanac` command (start, doctor, sessions, memory, chat; see docs/cli.md).
// Runs the TypeScript sources through tsx's loader.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/main.ts");
await main();
