import { html } from "htm/preact";
import { useMemo, useState } from "preact/hooks";
import { api } from "../api.js";
import { Chart, type ChartSpec } from "../components/chart.js";
import { asArray, asRecord, num, str } from "../read.js";
import { ErrorBox, useLoad } from "../ui.js";

const RANGES = [7, 30, 90] as const;

/** A local date (`YYYY-MM-DD`) as chart time: noon UTC, so it lands on its own day in every time zone. */
function dayTime(date: string): number {
  return Date.parse(`${date}T12:00:00Z`) / 1000;
}

function tokensSpec(body: unknown): ChartSpec {
  const record = asRecord(body);
  const days = asArray(record.days).map(asRecord);
  const models = asArray(record.models).map((model) => str(model));
  return {
    x: days.map((day) => dayTime(str(day.date))),
    xKind: "time",
    yLabel: "Tokens",
    kind: models.length === 1 ? "bars" : "lines",
    series: models.map((model) => ({
      label: model,
      values: days.map((day) => {
        const usage = asRecord(asRecord(day.models)[model]);
        return (num(usage.promptTokens) ?? 0) + (num(usage.completionTokens) ?? 0);
      }),
    })),
  };
}

function summarizerSpec(body: unknown): ChartSpec {
  const days = asArray(asRecord(body).days).map(asRecord);
  return {
    x: days.map((day) => dayTime(str(day.date))),
    xKind: "time",
    yLabel: "Jobs",
    series: [
      { label: "Enqueued", values: days.map((day) => num(day.enqueued) ?? 0), color: "#2f5d8a" },
      { label: "Done", values: days.map((day) => num(day.done) ?? 0), color: "#3a8f5c" },
      { label: "Parked", values: days.map((day) => num(day.parked) ?? 0), color: "#b03a48" },
    ],
  };
}

function memorySpec(body: unknown, range: ChartSpec["xRange"]): ChartSpec {
  const samples = asArray(asRecord(body).samples).map(asRecord);
  return {
    x: samples.map((sample) => dayTime(str(sample.date))),
    xKind: "time",
    ...(range ? { xRange: range } : {}),
    yLabel: "Chunks",
    series: [
      { label: "Chunks", values: samples.map((sample) => num(sample.chunks) ?? 0) },
      { label: "Files", values: samples.map((sample) => num(sample.files) ?? 0), axis: "right" },
    ],
  };
}

/** Usage over time: tokens per day per model, summarizer jobs per day, memory files and chunks per day. */
export function ChartsPage() {
  const [days, setDays] = useState<number>(30);
  const tokens = useLoad(() => api(`/api/stats/tokens?days=${days}`), `tokens/${days}`);
  const summarizer = useLoad(() => api(`/api/stats/summarizer?days=${days}`), `summarizer/${days}`);
  const memory = useLoad(() => api(`/api/stats/memory?days=${days}`), `memory/${days}`);
  const tokenChart = useMemo(() => tokensSpec(tokens.data), [tokens.data]);
  const summarizerChart = useMemo(() => summarizerSpec(summarizer.data), [summarizer.data]);
  // Memory has points only on days the server sampled: show them against the whole range asked for.
  const memoryChart = useMemo(() => {
    const x = tokenChart.x;
    const first = x[0];
    const last = x.at(-1);
    return memorySpec(memory.data, first === undefined || last === undefined ? undefined : [first, last]);
  }, [memory.data, tokenChart]);
  const timeZone = str(asRecord(tokens.data).timeZone);
  const tokenTotal = tokenChart.series.reduce(
    (sum, series) => sum + series.values.reduce<number>((total, value) => total + (value ?? 0), 0),
    0,
  );
  return html`
    <section class="charts">
      <div class="title-row">
        <h1>Charts</h1>
        <div class="range" role="group" aria-label="Range">
          ${RANGES.map(
            (range) =>
              html`<button class=${range === days ? "" : "secondary"} aria-pressed=${range === days}
                onClick=${() => setDays(range)}>${range} days</button>`,
          )}
        </div>
      </div>
      <p class="muted small">Days in ${timeZone || "the server's time zone"} (the memory time zone).</p>
      <div class="charts-grid">
        <div class="card">
          <${ErrorBox} error=${tokens.error} />
          <${Chart}
            title="Tokens per day, by model"
            spec=${tokenChart}
            empty="No model calls in these days."
            caption=${`${tokenTotal.toLocaleString()} tokens (prompt + completion) in ${days} days: chat, compaction and summarizer calls.`}
          />
        </div>
        <div class="card">
          <${ErrorBox} error=${summarizer.error} />
          <${Chart}
            title="Summarizer jobs per day"
            spec=${summarizerChart}
            empty=${
              asRecord(summarizer.data).enabled === false
                ? "The summarizer is disabled: no model is configured."
                : "No summarizer job in these days."
            }
            caption="Done counts the jobs the queue still lists (its last 100 done jobs); parked: jobs waiting for a retry, on the day they failed."
          />
        </div>
        <div class="card">
          <${ErrorBox} error=${memory.error} />
          <${Chart}
            title="Memory files and chunks"
            spec=${memoryChart}
            empty="The server samples the index every hour; an empty index has nothing to chart."
            caption="One sample per day, recorded by the server while it runs (files on the right axis)."
          />
        </div>
      </div>
    </section>
  `;
}
