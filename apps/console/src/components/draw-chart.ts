// Loaded on demand (its own chunk, with uPlot's stylesheet): pages without charts never fetch it.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { ChartSpec } from "./chart.js";

/** Axis steps of whole numbers only (tokens, jobs, files and turns come in units). */
const WHOLE_STEPS = [1, 2, 5]
  .flatMap((step) => Array.from({ length: 10 }, (_, power) => step * 10 ** power))
  .sort((a, b) => a - b);
const HALF_DAY = 43_200;

const PALETTE = ["#2f5d8a", "#d17a22", "#3a8f5c", "#b03a48", "#7a5ab5", "#8a7a2f"];

/** Vertical dashed lines at the spec's marks (e.g. compactions), drawn over the plot. */
function marksPlugin(spec: ChartSpec): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (plot) => {
          const marks = spec.marks ?? [];
          if (marks.length === 0) return;
          const { ctx } = plot;
          const { top, height } = plot.bbox;
          ctx.save();
          ctx.strokeStyle = "#b03a48";
          ctx.lineWidth = 2 * uPlot.pxRatio;
          ctx.setLineDash([6 * uPlot.pxRatio, 4 * uPlot.pxRatio]);
          for (const mark of marks) {
            const x = Math.round(plot.valToPos(mark.x, "x", true));
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
          }
          ctx.restore();
        },
      ],
    },
  };
}

/** Draws `spec` into `target` at `width` pixels; returns the function that removes it. */
export function drawChart(target: HTMLElement, spec: ChartSpec, width: number): () => void {
  const bars = spec.kind === "bars" ? uPlot.paths.bars?.({ size: [0.7, 48] }) : undefined;
  const options: uPlot.Options = {
    width,
    height: spec.height ?? 220,
    scales: {
      // Days get half a day of room on each side: bars stay whole and a single day still has a range.
      x:
        spec.xKind === "time"
          ? spec.xRange
            ? { time: true, auto: false, min: spec.xRange[0] - HALF_DAY, max: spec.xRange[1] + HALF_DAY }
            : { time: true, range: (_plot, min, max) => [min - HALF_DAY, max + HALF_DAY] }
          : { time: false },
      y: { range: (_plot, min, max) => [Math.min(0, min), Math.max(max, 1) * 1.08] },
      ...(spec.series.some((series) => series.axis === "right")
        ? { right: { range: (_plot, min, max) => [Math.min(0, min), Math.max(max, 1) * 1.08] } }
        : {}),
    },
    axes: [
      spec.xKind === "time"
        ? {}
        : // Whole numbers only: there is no turn 1.5.
          {
            label: spec.xLabel,
            incrs: WHOLE_STEPS,
            values: (_plot, ticks) => ticks.map(String),
          },
      { label: spec.yLabel, size: 64, incrs: WHOLE_STEPS },
      ...(spec.series.some((series) => series.axis === "right")
        ? [{ scale: "right", side: 1 as const, grid: { show: false }, size: 56, incrs: WHOLE_STEPS }]
        : []),
    ],
    series: [
      { label: spec.xLabel ?? (spec.xKind === "time" ? "Day" : "x") },
      ...spec.series.map((series, index) => {
        const color = series.color ?? PALETTE[index % PALETTE.length] ?? "#2f5d8a";
        return {
          label: series.label,
          stroke: color,
          width: 2,
          ...(series.axis === "right" ? { scale: "right" } : {}),
          ...(series.dash ? { dash: [6, 4] } : {}),
          ...(bars && !series.dash ? { paths: bars, fill: `${color}cc`, points: { show: false } } : {}),
        };
      }),
    ],
    plugins: [marksPlugin(spec)],
  };
  const data: uPlot.AlignedData = [[...spec.x], ...spec.series.map((series) => [...series.values])];
  const plot = new uPlot(options, data, target);
  return () => plot.destroy();
}
