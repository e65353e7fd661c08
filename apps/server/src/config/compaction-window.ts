import type { AlmanacConfig } from "./config-schema.js";

/** The window, output reserve and thresholds compaction works with: one reading of the config for all users. */
export function compactionWindow(config: AlmanacConfig) {
  return {
    contextWindow: config.model.contextWindow,
    maxOutputTokens: config.model.maxOutputTokens,
    thresholds: {
      ceiling: config.compaction.ceilingTokens,
      ...(config.compaction.share === undefined ? {} : { share: config.compaction.share }),
    },
  };
}
