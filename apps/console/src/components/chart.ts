import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";

/** One line (or set of bars) of a chart. */
export interface ChartSeries {
  readonly label: string;
  readonly values: readonly (number | null)[];
  readonly color?: string;
  /** A reference line, drawn dashed and never as bars. */
  readonly dash?: boolean;
  /** `right`: on a second axis (a series of another magnitude, e.g. files beside chunks). */
  readonly axis?: "left" | "right";
}

/** What a chart shows: x values (seconds since the epoch for `time`), its series, optional marks. */
export interface ChartSpec {
  readonly x: readonly number[];
  readonly xKind: "time" | "number";
  /** The x range to show whatever the data (e.g. every day asked for, when only some have a point). */
  readonly xRange?: readonly [number, number];
  readonly xLabel?: string;
  readonly yLabel?: string;
  readonly kind?: "lines" | "bars";
  readonly series: readonly ChartSeries[];
  /** Vertical marks at these x values (compactions on the context chart). */
  readonly marks?: readonly { readonly x: number; readonly label: string }[];
  readonly height?: number;
}

type Draw = (target: HTMLElement, spec: ChartSpec, width: number) => () => void;
let loading: Promise<Draw> | undefined;

/** uPlot and its stylesheet, loaded once on the first chart. */
function loadDraw(): Promise<Draw> {
  loading ??= import("./draw-chart.js").then((module) => module.drawChart);
  return loading;
}

/**
 * True when some series has a value other than 0: days listed with nothing on them (every day of a range is
 * listed) draw a flat line that says less than "No data yet".
 */
function hasData(spec: ChartSpec): boolean {
  return spec.x.length > 0 && spec.series.some((series) => series.values.some((value) => !!value));
}

/**
 * A chart (uPlot, canvas) with a title; "No data yet" (and why, from `empty`) while nothing was recorded. The
 * figure carries the number of points it plots (`data-points`, 0 when empty), so a reader (or a test) can tell
 * an empty chart from a drawn one.
 */
export function Chart(props: { title: string; spec: ChartSpec; empty?: string; caption?: string }) {
  const { spec } = props;
  const target = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string>();
  const points = hasData(spec) ? spec.x.length : 0;
  useEffect(() => {
    const element = target.current;
    if (!element || points === 0) return;
    let destroyPlot: (() => void) | undefined;
    let observer: ResizeObserver | undefined;
    let drawnWidth = 0;
    let current = true;
    loadDraw().then(
      (drawChart) => {
        if (!current) return;
        const draw = () => {
          const width = Math.max(240, element.clientWidth);
          if (width === drawnWidth) return;
          drawnWidth = width;
          destroyPlot?.();
          element.replaceChildren();
          destroyPlot = drawChart(element, spec, width);
        };
        draw();
        // Redrawn at the new width when the page is resized (a phone turned, a window narrowed).
        observer = new ResizeObserver(() => current && draw());
        observer.observe(element);
      },
      (caught: unknown) => current && setError(String(caught)),
    );
    return () => {
      current = false;
      observer?.disconnect();
      destroyPlot?.();
    };
  }, [spec, points]);
  return html`
    <figure class="chart" aria-label=${props.title} data-points=${points}>
      <figcaption><h3>${props.title}</h3></figcaption>
      ${
        points === 0
          ? html`<p class="chart-empty muted"><strong>No data yet.</strong>${props.empty ? ` ${props.empty}` : ""}</p>`
          : html`<div class="chart-canvas" ref=${target}></div>`
      }
      ${error ? html`<p class="error" role="alert">Could not draw the chart: ${error}</p>` : null}
      ${props.caption ? html`<p class="muted small">${props.caption}</p>` : null}
    </figure>
  `;
}
