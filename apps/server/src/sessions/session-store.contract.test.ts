import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createMemorySessionState,
  createMemorySessionStore,
} from "../../test/support/memory-session-store.js";
import { describeSessionStoreContract } from "../../test/support/session-store-contract.js";
import { createSessionStore } from "./session-store.js";

describeSessionStoreContract("files", async () => {
  const root = await mkdtemp(join(tmpdir(), "almanac-session-contract-"));
  const dir = join(root, "sessions");
  const opened = [createSessionStore({ dir })];
  return {
    store: opened[0]!,
    reopen: () => {
      const store = createSessionStore({ dir });
      opened.push(store);
      return store;
    },
    cleanup: async () => {
      await Promise.all(opened.map((store) => store.close()));
      await rm(root, { recursive: true, force: true });
    },
  };
});

describeSessionStoreContract("in memory (the test fake)", async () => {
  const state = createMemorySessionState();
  return {
    store: createMemorySessionStore(state),
    reopen: () => createMemorySessionStore(state),
    cleanup: async () => {},
  };
});
