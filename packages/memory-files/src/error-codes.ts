import { type CodesOf, defineErrorCodes } from "@almanac/core";

/** Every code the memory-files package throws. */
export const memoryFilesErrorCodes = defineErrorCodes({
  /** A path that is not a memory file of the scope (outside the workspace, wrong folder, wrong name). */
  "memory.path_refused": { category: "user", status: 400 },
  "memory.not_found": { category: "user", status: 404 },
  /** The file changed since it was read (a person edited it meanwhile). */
  "memory.conflict": { category: "user", status: 409 },
  /** A write that would drop most of the file is refused (the shrink guard). */
  "memory.shrink_refused": { category: "user", status: 409 },
  /** A forget request too short to mean one fact (it would remove half the memory). */
  "memory.forget_too_short": { category: "user", status: 400 },
  "config.invalid": { category: "user" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof memoryFilesErrorCodes> {}
}
