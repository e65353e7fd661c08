import { type CodesOf, defineErrorCodes } from "@almanac/core";

/** Codes that tests throw on purpose from fakes (a store that is down, a script that ran out): tests only. */
export const testErrorCodes = defineErrorCodes({
  "test.failure": { category: "provider" },
  "test.internal": { category: "internal" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof testErrorCodes> {}
}
