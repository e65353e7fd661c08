import { html } from "htm/preact";
import { useMemo } from "preact/hooks";
import { asArray, asRecord, num, str } from "../read.js";
import { Chart, type ChartSpec } from "./chart.js";

/**
 * A session's context tokens after each turn against its window, with its compactions as dashed lines
 * (placed just before the turn they shaped). Reads `GET /api/sessions/{key}/context-history`.
 */
export function ContextChart(props: { history: unknown }) {
  const history = asRecord(props.history);
  const spec = useMemo((): ChartSpec => {
    const turns = asArray(history.turns).map(asRecord);
    return {
      x: turns.map((turn) => num(turn.turn) ?? 0),
      xKind: "number",
      xLabel: "Turn",
      yLabel: "Tokens",
      series: [{ label: "Context tokens", values: turns.map((turn) => num(turn.contextTokens) ?? null) }],
      marks: asArray(history.compactions)
        .map(asRecord)
        .filter((compaction) => num(compaction.turn) !== undefined)
        .map((compaction) => ({ x: (num(compaction.turn) ?? 0) - 0.5, label: str(compaction.reason) })),
    };
  }, [props.history]);
  const compactions = asArray(history.compactions).map(asRecord);
  const window = `Tokens of the next request after each turn, of a ${(num(history.contextWindow) ?? 0).toLocaleString()}-token window.`;
  const caption =
    compactions.length === 0
      ? `${window} No compaction yet.`
      : `${window} Compactions (dashed red lines): ${compactions
          .map(
            (compaction) =>
              `${num(compaction.turn) === undefined ? "after the last turn" : `before turn ${num(compaction.turn)}`} ` +
              `(${str(compaction.reason)}, ${(num(compaction.tokensBefore) ?? 0).toLocaleString()} → ${(num(compaction.tokensAfter) ?? 0).toLocaleString()} tokens)`,
          )
          .join("; ")}.`;
  return html`<${Chart}
    title="Context per turn"
    spec=${spec}
    empty="The chart starts with the next reply."
    caption=${caption}
  />`;
}
