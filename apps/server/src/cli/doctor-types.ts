/** Outcome of one doctor check. */
export type CheckStatus = "ok" | "warn" | "fail";

/** One line of `almanac doctor`: what was checked, how it went, and how to fix it. */
export interface CheckResult {
  readonly name: string;
  readonly status: CheckStatus;
  readonly message: string;
  readonly hint?: string;
}

/** Builds a check result, leaving out an undefined hint. */
export function check(name: string, status: CheckStatus, message: string, hint?: string): CheckResult {
  return { name, status, message, ...(hint === undefined ? {} : { hint }) };
}
