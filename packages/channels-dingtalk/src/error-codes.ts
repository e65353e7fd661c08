import { type CodesOf, defineErrorCodes } from "@almanac/core";
import { dingTalkErrorCategories } from "./errors.js";

/** Every code the DingTalk adapter throws, in the form the server's registry merges. */
export const dingTalkErrorCodes = defineErrorCodes(
  Object.fromEntries(
    Object.entries(dingTalkErrorCategories).map(([code, category]) => [code, { category }]),
  ) as {
    readonly [Code in keyof typeof dingTalkErrorCategories]: {
      readonly category: (typeof dingTalkErrorCategories)[Code];
    };
  },
);

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof dingTalkErrorCategories> {}
}
