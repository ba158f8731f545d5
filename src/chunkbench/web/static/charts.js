// An Experiment's charts in the dashboard: the reports' own SVG charts, drawn by the server's chart code
// (GET /benchmarks/{id}/charts lists them, /charts/{name} draws one) and put inline, so their tooltips work and the
// dashboard's colours apply. Nothing is measured or computed here. Shared by the Experiment view and the Decision
// Board.
import { html, useState, ErrorBox, Spinner, useApi } from "./ui.js";
import { api } from "./api.js";

const KINDS = {
  bars: "Mean with its 95% interval",
  curve: "Against context tokens",
  frontier: "Best for some budget",
  heatmap: "Per question",
};

// One chart, fetched with the API key (an <img> could not send it). The server escapes every name in it.
function Chart({ entry }) {
  const svg = useApi(() => api(entry.url), [entry.url]);
  if (svg.error) return html`<${ErrorBox} error=${svg.error} />`;
  if (!svg.data) return html`<${Spinner} label=${`Drawing ${entry.label}…`} />`;
  return html`<div class="chart-svg" role="figure" aria-label=${`${KINDS[entry.kind]}: ${entry.label}`}
    data-chart=${entry.name} dangerouslySetInnerHTML=${{ __html: svg.data }} />`;
}

// The charts of one kind, one at a time, with a picker of their metric when there are several.
function ChartPicker({ kind, entries, experimentName }) {
  const [name, setName] = useState(entries[0].name);
  const entry = entries.find((e) => e.name === name) || entries[0];
  return html`<section class="stack" aria-label=${`${KINDS[kind]} · ${experimentName}`}>
    <div class="row" style="align-items: center">
      <strong>${KINDS[kind]}</strong>
      ${entries.length > 1 ? html`<select aria-label=${`${KINDS[kind]}: metric`} value=${entry.name}
        onChange=${(e) => setName(e.target.value)}>
        ${entries.map((e) => html`<option key=${e.name} value=${e.name}>${e.label}</option>`)}
      </select>` : html`<span class="muted">${entry.label}</span>`}
    </div>
    <div class=${kind === "heatmap" ? "chart-frame" : ""}><${Chart} entry=${entry} /></div>
  </section>`;
}

// A heatmap is drawn only once its details are opened: a large Experiment's is thousands of cells.
function Collapsed({ kind, entries, experimentName }) {
  const [open, setOpen] = useState(false);
  return html`<details class="charts-more" onToggle=${(e) => setOpen(e.currentTarget.open)}>
    <summary>${KINDS[kind]} (${entries[0].label})</summary>
    ${open ? html`<${ChartPicker} kind=${kind} entries=${entries} experimentName=${experimentName} />` : null}
  </details>`;
}

/** The charts of Experiment ``experimentId`` (``stamp``: reload when it changes, e.g. a run that ended); the
 * kinds in ``collapsed`` sit behind a disclosure. */
export function ExperimentCharts({ experimentId, experimentName, stamp, collapsed = [] }) {
  const index = useApi(() => api(`/benchmarks/${encodeURIComponent(experimentId)}/charts`), [experimentId, stamp]);
  if (index.error) return html`<${ErrorBox} error=${index.error} />`;
  if (!index.data) return html`<${Spinner} label="Loading the charts…" />`;
  const kinds = Object.keys(KINDS).filter((kind) => index.data.some((e) => e.kind === kind));
  if (!kinds.length) return html`<p class="muted">No chart yet: the Experiment has no results.</p>`;
  const of = (kind) => index.data.filter((e) => e.kind === kind);
  const shown = kinds.filter((kind) => !collapsed.includes(kind));
  return html`<div class="stack" data-testid="charts">
    <div class="charts">${shown.map((kind) => html`<${ChartPicker} key=${`${experimentId}-${kind}`} kind=${kind}
      entries=${of(kind)} experimentName=${experimentName} />`)}</div>
    ${kinds.filter((kind) => collapsed.includes(kind)).map((kind) => html`<${Collapsed} key=${kind} kind=${kind}
      entries=${of(kind)} experimentName=${experimentName} />`)}
  </div>`;
}
