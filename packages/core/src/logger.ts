/** A structured logger; pino's Logger satisfies it. Only `apps/server` creates a real one. */
export interface Logger {
  debug(object: Record<string, unknown>, message?: string): void;
  info(object: Record<string, unknown>, message?: string): void;
  warn(object: Record<string, unknown>, message?: string): void;
  error(object: Record<string, unknown>, message?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** A logger that drops everything (the default where none is injected). */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
