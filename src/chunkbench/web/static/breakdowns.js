// An Experiment's breakdowns (the server's ``breakdowns``): per document (several-document Experiments, by source
// key), per language (documents in several languages) and per question category, each configuration's mean on the primary metric and its failures (failed cells
// and scores of 0). The server lists the groups worst first over every configuration; choosing a configuration
// orders them by that one's mean, worst first. Shared by the Experiment view and the Decision Board.
import { html, useState, fmt, fmtInt } from "./ui.js";
import { useMemo } from "./vendor/htm-preact-standalone.module.js";

// The metrics where lower is better (the server's METRIC_DIRECTIONS): their worst is the highest mean.
const LOWER_IS_BETTER = new Set(["tok_at_k", "judge_hallucination"]);

// Each kind of group: its table's title, its first column, and a group's name.
const GROUPS = [
  ["documents", "Per document", "document", (g) => g.source_key || g.id],
  ["languages", "Per language", "language", (g) => `${g.label} · ${g.documents} documents`],
  ["categories", "Per category", "category", (g) => g.category],
];

export function Breakdowns({ experiment }) {
  const breakdowns = experiment.breakdowns;
  const keys = experiment.configurations.map((c) => c.key);
  if (!breakdowns || !GROUPS.some(([kind]) => breakdowns[kind]?.length)) return null;
  return html`<section class="stack" aria-label="Breakdowns">
    <h3>Where each configuration fails <span class="muted">· ${breakdowns.metric}, worst first</span></h3>
    ${GROUPS.filter(([kind]) => breakdowns[kind]?.length).map(([kind, title, column, name]) => html`<${BreakdownTable}
      key=${kind} title=${title} column=${column} groups=${breakdowns[kind]} keys=${keys} metric=${breakdowns.metric}
      name=${name} />`)}
  </section>`;
}

function BreakdownTable({ title, column, groups, keys, metric, name }) {
  const [by, setBy] = useState(""); // "": the server's order (every configuration)
  const lower = LOWER_IS_BETTER.has(metric);
  const rows = useMemo(() => {
    if (!by) return groups;
    // Groups that configuration did not measure go last, as the server puts them.
    const badness = (g) => {
      const mean = g.configurations[by]?.mean;
      return mean === null || mean === undefined ? Infinity : lower ? -mean : mean;
    };
    return [...groups].sort((a, b) => badness(a) - badness(b));
  }, [groups, by, lower]);
  const failing = groups.filter((g) => Object.values(g.configurations).some((f) => f.failures > 0)).length;
  return html`<div class="stack">
    <div class="row" style="align-items: center">
      <strong>${title}</strong>
      <span class="muted">${fmtInt(groups.length)} groups, ${fmtInt(failing)} with failures</span>
      <label>Worst first by
        <select aria-label=${`${title}: worst first by`} value=${by} onChange=${(e) => setBy(e.target.value)}>
          <option value="">every configuration</option>
          ${keys.map((k) => html`<option key=${k} value=${k}>${k}</option>`)}
        </select></label>
    </div>
    <div class="scroll" style="max-height: 45vh">
      <table class="data" aria-label=${`Breakdown ${title.toLowerCase()}`}>
        <thead><tr><th>${column}</th><th class="num">questions</th>
          ${keys.map((k) => html`<th class="num mono" key=${k} style="white-space: nowrap">${k}</th>`)}</tr></thead>
        <tbody>${rows.map((g) => html`<tr key=${name(g)}>
          <td style="overflow-wrap: anywhere">${name(g)}</td><td class="num">${fmtInt(g.questions)}</td>
          ${keys.map((k) => {
            const f = g.configurations[k];
            if (!f) return html`<td class="num muted">—</td>`;
            return html`<td class="num" style="white-space: nowrap">${fmt(f.mean)}${f.failures
              ? html` <span class="badge bad" title="failed cells and scores of 0">${fmtInt(f.failures)} ✗</span>`
              : null}</td>`;
          })}</tr>`)}</tbody>
      </table>
    </div>
  </div>`;
}
