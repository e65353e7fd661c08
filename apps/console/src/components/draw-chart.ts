// Loaded on demand (its own chunk, with uPlot's stylesheet): pages without charts never fetch it.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { ChartSpec } from "./chart.js";

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
      x: { time: spec.xKind === "time" },
      y: { range: (_plot, min, max) => [Math.min(0, min), Math.max(max, 1) * 1.08] },
      ...(spec.series.some((series) => series.axis === "right")
        ? { right: { range: (_plot, min, max) => [Math.min(0, min), Math.max(max, 1) * 1.08] } }
        : {}),
    },
    axes: [
      spec.xKind === "time" ? {} : { label: spec.xLabel, values: (_plot, ticks) => ticks.map(String) },
      { label: spec.yLabel, size: 64 },
      ...(spec.series.some((series) => series.axis === "right")
        ? [{ scale: "right", side: 1 as const, grid: { show: false }, size: 56 }]
        : []),
    ],
    series: [
      { label: spec.xLabel ?? "x" },
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
