// The Decision Board (docs/dashboard.md): candidate Experiments from /experiments, filtered and pruned by hand, then
// a two-stage heat comparison — configurations × metrics, then questions × the chosen configurations — and the
// Decision each Experiment stored. Every figure comes from the server; nothing statistical is computed here.
import { html, useState, useEffect, ErrorBox, Spinner, ProgressBar, fmt, useApi, usePager, targetName } from "../ui.js";
import { useMemo } from "../vendor/htm-preact-standalone.module.js";
import { api, withKey } from "../api.js";
import { Breakdowns } from "../breakdowns.js";
import { ExperimentCharts } from "../charts.js";
import { Term, describe } from "../glossary.js";

const EXCLUDED_KEY = "chunkbench.decision.excluded";
// More than this many Experiments at once is rarely a comparison anyone can read; it also bounds the download.
const MAX_COMPARED = 8;

// Stage 1 columns. `lower`: lower is better (the colour scale is reversed). `judge`: shown only when measured.
const METRICS = [
  { id: "recall", label: "recall" },
  { id: "precision", label: "precision" },
  { id: "iou", label: "IoU" },
  { id: "recall_at_k", label: "recall@k" },
  { id: "mrr", label: "MRR" },
  { id: "ndcg_at_k", label: "nDCG@k" },
  { id: "token_f1", label: "token F1" },
  { id: "answer_similarity", label: "answer sim." },
  { id: "judge_context_relevance", label: "judge context", judge: true },
  { id: "judge_answer_similarity", label: "judge answer", judge: true },
  { id: "judge_faithfulness", label: "judge faithful", judge: true },
  { id: "judge_hallucination", label: "judge halluc.", judge: true, lower: true },
  { id: "tok_at_k", label: "tok@k", lower: true, digits: 0 },
  { id: "latency", label: "latency p50 ms", lower: true, digits: 1 },
];

const STATUS = {
  winner: ["good", "Winner"],
  tie_broken_by_cost: ["accent", "Tie broken by cost"],
  cannot_tell: ["warn", "Cannot tell"],
  no_clear_winner: ["warn", "No clear winner"],
  insufficient_data: ["bad", "Insufficient data"],
};

// ------------------------------------------------------------------------------------------- data

// Completed Experiments do not change: each is fetched once (scores only, without retrieved text) and kept.
const cache = new Map();

function loadExperiment(id) {
  if (!cache.has(id)) {
    const promise = api(`/benchmarks/${encodeURIComponent(id)}`, { query: { cells: "scores" } }).then((experiment) => ({
      experiment,
      cells: new Map(experiment.cells.map((cell) => [`${cell.question_id}\u0000${cell.config_key}`, cell])),
    }));
    promise.catch(() => cache.delete(id)); // a failed load is tried again next time
    cache.set(id, promise);
  }
  return cache.get(id);
}

function readExcluded() {
  try {
    return new Set(JSON.parse(localStorage.getItem(EXCLUDED_KEY) || "[]"));
  } catch {
    return new Set();
  }
}

const expLabel = (summary) => summary.name || summary.id.slice(0, 8);
const neighbours = (s) => `±${s.neighbor_prev}/${s.neighbor_next}`;
const aggregateValue = (aggregate, metric) =>
  metric === "latency" ? aggregate?.latency_ms_p50 ?? null : aggregate?.metrics?.[metric]?.mean ?? null;
const cellValue = (cell, metric) => (metric === "latency" ? cell.latency_ms?.total : cell.metrics?.[metric]) ?? null;

// 0 = worst, 1 = best of `values`; null when they are all equal (nothing to tell apart).
function scale(values, lower) {
  const present = values.filter((v) => v !== null && v !== undefined);
  if (!present.length) return () => null;
  const min = Math.min(...present);
  const max = Math.max(...present);
  if (max === min) return () => null;
  return (v) => (v === null || v === undefined ? null : lower ? (max - v) / (max - min) : (v - min) / (max - min));
}

const heat = (t) => (t === null ? undefined : `background: rgba(245, 165, 36, ${(0.06 + 0.44 * t).toFixed(3)})`);

// What makes several Experiments' figures incomparable (the mismatch warning, docs/benchmarks.md).
function mismatches(summaries, loaded) {
  const distinct = (values) => [...new Set(values)];
  const out = [];
  const documents = distinct(summaries.map(targetName));
  if (documents.length > 1) out.push(`Different documents (${documents.join(", ")}): the figures are not paired.`);
  const corpus = distinct(summaries.map((s) => s.corpus_model_id || "—"));
  if (corpus.length > 1) out.push(`Different Corpus models (${corpus.join(", ")}).`);
  const boundary = distinct(summaries.map((s) => s.boundary_model_id || "—"));
  if (boundary.length > 1) out.push(`Different Boundary models (${boundary.join(", ")}).`);
  const expansion = distinct(summaries.map(neighbours));
  if (expansion.length > 1) out.push(`Different Neighbor Expansion (${expansion.join(", ")}).`);
  const questionSets = distinct(
    summaries.map((s) => JSON.stringify((loaded.get(s.id)?.experiment.questions || []).map((q) => q.question))),
  );
  if (documents.length === 1 && questionSets.length > 1) {
    out.push("Different questions: compare means, not per-question results.");
  }
  return out;
}

// ------------------------------------------------------------------------------------------- candidates

function Candidates({ rows, excluded, toggle, compared }) {
  const [page, pager] = usePager(rows, 10);
  return html`
    <div class="scroll-x">
      <table class="data" aria-label="Candidate experiments">
        <thead><tr>
          <th>Exclude</th><th>Experiment</th><th>Document</th><th>Strategies</th>
          <th><${Term} name="corpus_model">Corpus</${Term}></th>
          <th><${Term} name="boundary_model">Boundary</${Term}></th><th><${Term} name="neighbors">Neighbors</${Term}></th>
          <th class="num">Questions</th><th>Decision</th><th>Finished</th>
        </tr></thead>
        <tbody>
          ${page.map((s) => html`
            <tr key=${s.id} class=${excluded.has(s.id) ? "excluded" : compared.has(s.id) ? "" : "muted"}
              data-testid="candidate">
              <td><input type="checkbox" checked=${excluded.has(s.id)} onChange=${() => toggle(s.id)}
                aria-label=${`Exclude experiment ${expLabel(s)}`} /></td>
              <td><strong>${expLabel(s)}</strong><div class="muted mono">${s.id.slice(0, 12)}</div></td>
              <td>${targetName(s)}</td>
              <td>${s.strategies.join(", ")}</td>
              <td>${s.corpus_models?.length ? s.corpus_models.join(", ") : s.corpus_model_id || "—"}</td>
              <td>${s.boundary_model_id || "—"}</td>
              <td><span class="badge" title="Neighbor Expansion: previous/next chunks">${neighbours(s)}</span></td>
              <td class="num">${s.questions}</td>
              <td>${s.decision_status ? html`<span class=${`badge ${STATUS[s.decision_status]?.[0] || ""}`}>
                ${STATUS[s.decision_status]?.[1] || s.decision_status}</span>` : "—"}
                ${s.best ? html` <span class="mono">${s.best}</span>` : null}</td>
              <td class="muted">${(s.finished_at || s.created_at || "").replace("T", " ").slice(0, 16)}</td>
            </tr>`)}
        </tbody>
      </table>
    </div>
    ${pager}`;
}

// ------------------------------------------------------------------------------------------- stage 1

function ConfigurationHeat({ rows, metrics, selected, toggle }) {
  const [sortBy, setSortBy] = useState(null);
  const scales = useMemo(
    () => Object.fromEntries(metrics.map((m) => [m.id, scale(rows.map((r) => r.values[m.id]), m.lower)])),
    [rows, metrics],
  );
  const sorted = useMemo(() => {
    if (!sortBy) return rows;
    const metric = metrics.find((m) => m.id === sortBy);
    const rank = (r) => (r.values[sortBy] === null ? -Infinity : metric.lower ? -r.values[sortBy] : r.values[sortBy]);
    return [...rows].sort((a, b) => rank(b) - rank(a));
  }, [rows, sortBy, metrics]);
  const [page, pager] = usePager(sorted, 30);
  return html`
    <p class="muted">Each metric's mean over the Experiment's questions. Sort by a metric with its header; select
      configurations to compare them question by question.</p>
    <div class="table-frame">
      <table class="data heat" data-testid="config-heat" aria-label="Configurations by metrics">
        <thead><tr>
          <th scope="col">Configuration <span class="muted">(compare)</span></th>
          ${metrics.map((m) => html`<th scope="col" class="num" aria-sort=${sortBy === m.id ? "descending" : "none"}>
            <button class="link" onClick=${() => setSortBy(sortBy === m.id ? null : m.id)} ...${describe(m.id)}
              aria-label=${`Sort by ${m.label}, best first${m.lower ? " (lower is better)" : ""}`}>
              ${m.label}${m.lower ? " ↓" : ""}${sortBy === m.id ? " ▾" : ""}</button></th>`)}
        </tr></thead>
        <tbody>
          ${page.map((r) => html`
            <tr key=${r.key} class=${selected.has(r.key) ? "selected" : ""} data-testid="config-row">
              <th scope="row" class="mono config"><input type="checkbox" checked=${selected.has(r.key)}
                onChange=${() => toggle(r.key)} aria-label=${`Compare ${r.label} per question`} />${" "}
                <button class="link" onClick=${() => toggle(r.key)}>${r.label}</button></th>
              ${metrics.map((m) => {
                const t = scales[m.id](r.values[m.id]);
                return html`<td class=${`num${t === 1 ? " best" : ""}`} style=${heat(t)}
                  title=${t === 1 ? `best ${m.label} among these rows` : undefined}>${fmt(r.values[m.id], m.digits ?? 3)}</td>`;
              })}
            </tr>`)}
        </tbody>
      </table>
    </div>
    ${pager}
    <${Legend}>Each column is coloured from its worst value (faint) to its best (strong amber, in bold) among these
      rows; columns marked ↓ (tok@k, latency, hallucination) are better when lower. Equal values are not coloured.
      The numbers are what counts: colour is only an aid.<//>`;
}

function Legend({ children }) {
  return html`<p class="legend muted"><span class="heat-swatch" aria-hidden="true"></span>
    <span>worse → better.</span> ${children}</p>`;
}

// ------------------------------------------------------------------------------------------- stage 2

function QuestionHeat({ columns, loaded, metrics, defaultMetric }) {
  const choices = [...metrics.filter((m) => m.id !== "latency"), { id: "latency", label: "latency ms", lower: true, digits: 1 }];
  const [metricId, setMetricId] = useState(defaultMetric);
  const [perQuestion, setPerQuestion] = useState(false);
  const metric = choices.find((m) => m.id === metricId) || choices[0];
  // Rows are questions by their text, so Experiments that asked the same questions line up.
  const questions = useMemo(() => {
    const rows = new Map();
    for (const column of columns) {
      for (const question of loaded.get(column.experimentId).experiment.questions) {
        if (!rows.has(question.question)) rows.set(question.question, { text: question.question, ids: new Map() });
        rows.get(question.question).ids.set(column.experimentId, question.id);
      }
    }
    return [...rows.values()];
  }, [columns, loaded]);
  const table = useMemo(
    () => questions.map((q) => ({
      text: q.text,
      cells: columns.map((column) => {
        const id = q.ids.get(column.experimentId);
        if (id === undefined) return { missing: true };
        const cell = loaded.get(column.experimentId).cells.get(`${id}\u0000${column.configKey}`);
        if (!cell) return { missing: true };
        if (cell.status !== "ok") return { failed: cell.error || cell.status };
        return { value: cellValue(cell, metric.id) };
      }),
    })),
    [questions, columns, loaded, metric.id],
  );
  const wholeScale = useMemo(
    () => scale(table.flatMap((row) => row.cells.map((c) => c.value ?? null)), metric.lower),
    [table, metric],
  );
  const [page, pager] = usePager(table, 25);
  return html`
    <div class="row">
      <label>Per-question metric
        <select value=${metric.id} onChange=${(e) => setMetricId(e.target.value)}>
          ${choices.map((m) => html`<option value=${m.id}>${m.label}</option>`)}
        </select></label>
      <label>Colour scale
        <select value=${perQuestion ? "row" : "table"} onChange=${(e) => setPerQuestion(e.target.value === "row")}>
          <option value="table">whole table</option>
          <option value="row">per question</option>
        </select></label>
      <span class="muted">${questions.length} questions × ${columns.length} configuration${columns.length === 1 ? "" : "s"}</span>
    </div>
    <div class="table-frame">
      <table class="data heat" data-testid="question-heat" aria-label=${`${metric.label} per question`}>
        <thead><tr><th scope="col">Question</th>
          ${columns.map((c) => html`<th scope="col" class="num mono">${c.label}</th>`)}</tr></thead>
        <tbody>
          ${page.map((row) => {
            const rowScale = perQuestion ? scale(row.cells.map((c) => c.value ?? null), metric.lower) : wholeScale;
            return html`<tr data-testid="question-row">
              <th scope="row" class="question" title=${row.text}>${row.text}</th>
              ${row.cells.map((c) => {
                if (c.missing) return html`<td class="num muted" title="not asked in this Experiment">n/a</td>`;
                if (c.failed) return html`<td class="num bad" title=${c.failed}>failed</td>`;
                const t = rowScale(c.value);
                return html`<td class="num" style=${heat(t)}>${fmt(c.value, metric.digits ?? 3)}</td>`;
              })}
            </tr>`;
          })}
        </tbody>
      </table>
    </div>
    ${pager}
    <${Legend}>${perQuestion ? "Each question (row) is coloured on its own, so it shows which configuration wins it."
      : "One scale for the whole table, so it shows which questions are hard for every configuration."}
      ${metric.lower ? " Lower is better for this metric." : ""} Values are the cells' own scores.<//>`;
}

// ------------------------------------------------------------------------------------------- verdict

// The Decision's own figures per configuration: mean on its metric, probability of being best, standing.
function Standing({ decision }) {
  const names = Object.keys(decision.means || {});
  const ruledOut = new Set(decision.ruled_out || []);
  const [page, pager] = usePager(names, 10);
  if (!names.length) return null;
  const standing = (name) => (name === decision.best ? "best" : name === decision.leader ? "leader"
    : ruledOut.has(name) ? "ruled out" : "contender");
  return html`
    <div class="table-frame"><table class="data" aria-label="Standing of each configuration">
      <thead><tr><th><${Term} name="configuration">Configuration</${Term}></th><th class="num">mean <${Term}
        name=${decision.metric} /></th><th class="num"><${Term} name="p_best" /></th>
        <th>standing</th></tr></thead>
      <tbody>${page.map((name) => html`<tr>
        <td class="mono">${name}</td><td class="num">${fmt(decision.means[name])}</td>
        <td class="num">${decision.prob_best?.[name] === undefined ? "—" : `${Math.round(decision.prob_best[name] * 100)}%`}</td>
        <td>${standing(name)}</td></tr>`)}</tbody>
    </table></div>
    ${pager}`;
}

// The Decision made again at another context budget, by the server (GET /benchmarks/{id}/decision?budget=N): its
// verdict in the server's words; nothing is stored, so the Experiment keeps its own.
function BudgetControl({ experimentId, decision }) {
  const [budget, setBudget] = useState(String(decision.budget_matched?.budget || ""));
  const [state, setState] = useState({ busy: false, again: null, error: null });
  const decide = (event) => {
    event.preventDefault();
    setState({ busy: true, again: null, error: null });
    api(`/benchmarks/${encodeURIComponent(experimentId)}/decision`, { query: { budget } })
      .then((again) => setState({ busy: false, again, error: null }))
      .catch((error) => setState({ busy: false, again: null, error }));
  };
  return html`
    <form class="inline" data-testid="budget-control" onSubmit=${decide}>
      <label>Decide again at <input type="number" min="1" step="1" required value=${budget} aria-label="context budget in tokens"
        data-testid="budget-input" onInput=${(e) => setBudget(e.target.value)} /> context tokens per question</label>
      <button type="submit" disabled=${state.busy}>${state.busy ? "deciding…" : "Decide"}</button>
    </form>
    ${state.error ? html`<${ErrorBox} error=${state.error} />` : null}
    ${state.again ? html`<p class="verdict-text" data-testid="budget-verdict"
      >${`At ${state.again.budget_matched?.budget} tokens: `}<strong>${state.again.verdict}</strong></p>` : null}`;
}

// The verdict first, in the server's words (benchmarking/verdicts.py: the reports and the CLI say the same), the
// Experiment's charts, then the details collapsed.
function Verdict({ summary, experiment }) {
  const decision = experiment.decision;
  const [tone, title] = STATUS[decision?.status] || ["", decision?.status || "no decision"];
  return html`
    <article class="verdict" data-testid="verdict" aria-label=${`Decision of ${expLabel(summary)}`}>
      <h3>${expLabel(summary)} <span class="muted">· ${targetName(summary)}</span></h3>
      ${!decision ? html`<p class="muted">This Experiment has no stored Decision.</p>` : html`
        <p><span class=${`badge ${tone}`}>${title}</span>
          ${decision.best ? html` <strong class="mono">${decision.best}</strong>` : null}
          <span class="muted"> on ${decision.metric} over ${decision.n_questions} question${decision.n_questions === 1 ? "" : "s"}</span></p>
        <p class="verdict-text" data-testid="decision-verdict"><strong>${decision.verdict}</strong></p>
        ${decision.budget_matched ? html`<${BudgetControl} experimentId=${summary.id} decision=${decision} />` : null}
        ${(experiment.warnings || []).map((w) => html`<div class="notice" role="alert" data-testid="language-warning"
          dir="auto"><span class="badge bad">${w.language} not covered</span> ${w.message}${" "}
          ${w.questions_share != null ? `Its documents hold ${(w.questions_share * 100).toFixed(1)} % of the questions. ` : ""}
          ${w.material === false ? "The Decision stands (its reasons say why); built on it:" : "No winner is named among"}${" "}
          <span class="mono">${w.configurations.join(", ")}</span>.</div>`)}
        <${ExperimentCharts} experimentId=${summary.id} experimentName=${expLabel(summary)} collapsed=${["heatmap"]} />
        <details data-testid="decision-details"><summary>Details: standing, reasons, breakdowns</summary>
          <dl class="kv">
            <dt>leader</dt><dd class="mono">${decision.leader || "—"}</dd>
            <dt>runner-up</dt><dd class="mono">${decision.runner_up || "—"}</dd>
            <dt>ruled out</dt><dd class="mono">${decision.ruled_out?.length ? decision.ruled_out.join(", ") : "none"}</dd>
            <dt>contenders</dt><dd class="mono">${decision.contenders?.length ? decision.contenders.join(", ") : "—"}</dd>
          </dl>
          ${decision.budget_matched?.ranking?.length ? html`<p class="muted" data-testid="budget-ranking">At an equal
            budget of ${decision.budget_matched.budget} context tokens (${decision.budget_matched.metric}):
            ${decision.budget_matched.ranking.map((k) => `${k} ${fmt(decision.budget_matched.means[k])}`).join(", ")}</p>` : null}
          <ul class="reasons">${decision.reasons.map((reason) => html`<li>${reason}</li>`)}</ul>
          <${Standing} decision=${decision} />
          <${Breakdowns} experiment=${experiment} />
        </details>`}
      <p class="links">Reports:${" "}
        <a href=${`/benchmarks/${summary.id}/report?view=managerial`} target="_blank" rel="noopener" onClick=${withKey}>managerial</a>${" · "}
        <a href=${`/benchmarks/${summary.id}/report?view=technical`} target="_blank" rel="noopener" onClick=${withKey}>technical</a></p>
    </article>`;
}

// ------------------------------------------------------------------------------------------- the tab

export function DecisionTab({ active, openTab }) {
  const list = useApi(() => api("/experiments", { query: { status: "completed", limit: 1000 } }), []);
  // The list is one small request: refresh it each time the tab is shown again (a benchmark may have finished).
  useEffect(() => { if (active && list.data) list.reload(); }, [active]);
  const [documentId, setDocumentId] = useState("");
  const [corpus, setCorpus] = useState("");
  const [excluded, setExcluded] = useState(readExcluded);
  const [selected, setSelected] = useState(() => new Set());
  const [loaded, setLoaded] = useState(() => new Map());
  const [loadState, setLoadState] = useState({ done: 0, total: 0, error: null });

  const all = list.data || [];
  // What an Experiment searched: its corpus or its one document (the filter picks either).
  const targetOf = (s) => (s.corpus_name || s.corpus_id ? `corpus:${s.corpus_id || s.corpus_name}` : s.document_id);
  const documents = useMemo(() => [...new Map(all.map((s) => [targetOf(s), targetName(s)]))], [all]);
  const corpora = useMemo(() => [...new Set(all.flatMap((s) => [s.corpus_model_id, ...(s.corpus_models || [])])
    .filter(Boolean))], [all]);
  const filtered = all.filter((s) => (!documentId || targetOf(s) === documentId)
    && (!corpus || s.corpus_model_id === corpus || s.corpus_models?.includes(corpus)));
  const included = filtered.filter((s) => !excluded.has(s.id));
  const compared = included.slice(0, MAX_COMPARED);
  const comparedIds = compared.map((s) => s.id).join(",");

  const toggleExcluded = (id) => setExcluded((set) => {
    const next = new Set(set);
    if (next.has(id)) next.delete(id); else next.add(id);
    try { localStorage.setItem(EXCLUDED_KEY, JSON.stringify([...next])); } catch { /* private mode: not kept */ }
    return next;
  });
  const toggleSelected = (key) => setSelected((set) => {
    const next = new Set(set);
    if (next.has(key)) next.delete(key); else next.add(key);
    return next;
  });

  useEffect(() => {
    let live = true;
    const ids = comparedIds ? comparedIds.split(",") : [];
    let done = 0;
    setLoadState({ done: 0, total: ids.length, error: null });
    Promise.all(ids.map((id) => loadExperiment(id).then((data) => {
      done += 1;
      if (live) setLoadState((s) => ({ ...s, done }));
      return [id, data];
    }))).then(
      (entries) => live && setLoaded((previous) => new Map([...previous, ...entries])),
      (error) => live && setLoadState((s) => ({ ...s, error })),
    );
    return () => { live = false; };
  }, [comparedIds]);

  const ready = compared.length > 0 && compared.every((s) => loaded.has(s.id));
  const rows = useMemo(() => {
    if (!ready) return [];
    return compared.flatMap((s) => {
      const { experiment } = loaded.get(s.id);
      return experiment.configurations.map((configuration) => ({
        key: `${s.id}|${configuration.key}`,
        label: `${expLabel(s)}/${configuration.key}`,
        experimentId: s.id,
        configKey: configuration.key,
        values: Object.fromEntries(METRICS.map((m) => [m.id, aggregateValue(experiment.aggregate?.[configuration.key], m.id)])),
      }));
    });
  }, [ready, comparedIds, loaded]);
  const metrics = METRICS.filter((m) => !m.judge || rows.some((r) => r.values[m.id] !== null));
  const columns = rows.filter((r) => selected.has(r.key));
  const warnings = ready ? mismatches(compared, loaded) : [];
  const primary = ready ? loaded.get(compared[0].id).experiment.config?.primary_metric || "recall" : "recall";

  if (list.loading && !list.data) return html`<div class="panel"><${Spinner} label="Loading experiments…" /></div>`;
  if (list.error) return html`<div class="panel"><${ErrorBox} error=${list.error} /></div>`;
  if (!all.length) {
    return html`<div class="panel"><h2>Decision Board</h2>
      <p class="notice">No completed experiments yet. Run a benchmark first; its configurations and Decision appear here.</p>
      <button class="primary" onClick=${() => openTab("benchmarks")}>Go to Benchmarks</button></div>`;
  }
  return html`
    <div class="decision stack">
      <section class="panel" aria-labelledby="decision-candidates">
        <h2 id="decision-candidates">Candidates</h2>
        <div class="row">
          <label>Document or corpus
            <select value=${documentId} onChange=${(e) => setDocumentId(e.target.value)}>
              <option value="">All documents and corpora</option>
              ${documents.map(([id, name]) => html`<option value=${id}>${name}</option>`)}
            </select></label>
          <label>Corpus model
            <select value=${corpus} onChange=${(e) => setCorpus(e.target.value)}>
              <option value="">All Corpus models</option>
              ${corpora.map((id) => html`<option value=${id}>${id}</option>`)}
            </select></label>
          <button class="secondary" onClick=${() => list.reload()}>Refresh</button>
          <span class="muted" data-testid="candidate-count">${filtered.length} experiment${filtered.length === 1 ? "" : "s"},${" "}
            ${filtered.length - included.length} excluded, ${compared.length} compared</span>
        </div>
        ${included.length > MAX_COMPARED ? html`<p class="notice">Only the ${MAX_COMPARED} newest are compared:
          narrow the filters or exclude some.</p>` : null}
        <${Candidates} rows=${filtered} excluded=${excluded} toggle=${toggleExcluded}
          compared=${new Set(compared.map((s) => s.id))} />
      </section>

      <section class="panel" aria-labelledby="decision-stage1">
        <h2 id="decision-stage1">1 · Configurations × metrics</h2>
        <${ErrorBox} error=${loadState.error} />
        ${!compared.length ? html`<p class="muted">Every candidate is excluded or filtered out.</p>`
          : !ready ? html`<${ProgressBar} value=${loadState.total ? loadState.done / loadState.total : 0}
              label=${`Loading experiment ${loadState.done} of ${loadState.total}…`} />`
          : html`<${ConfigurationHeat} rows=${rows} metrics=${metrics} selected=${selected} toggle=${toggleSelected} />`}
      </section>

      ${ready ? html`
        <section class="panel" aria-labelledby="decision-stage2">
          <h2 id="decision-stage2">2 · Per question</h2>
          ${columns.length
            ? html`<${QuestionHeat} columns=${columns} loaded=${loaded} metrics=${metrics} defaultMetric=${primary} />`
            : html`<p class="muted">Select one or more configurations above to see their scores question by question.</p>`}
        </section>
        <section class="panel" aria-labelledby="decision-verdict">
          <h2 id="decision-verdict">Verdict</h2>
          ${compared.length > 1 ? html`<div class="notice" role="note" data-testid="not-paired">
            <strong>These Decisions are not paired across experiments.</strong> Each comes from its own
            Experiment, whose questions are compared configuration against configuration; nothing here compares
            configurations of different Experiments with statistics. For one Decision over all of them, run one
            benchmark that includes every configuration.</div>` : null}
          ${warnings.length ? html`<ul class="warnings" data-testid="mismatches">
            ${warnings.map((w) => html`<li><span class="badge warn">mismatch</span> ${w}</li>`)}</ul>` : null}
          <div class="verdicts">
            ${compared.map((s) => html`<${Verdict} key=${s.id} summary=${s} experiment=${loaded.get(s.id).experiment} />`)}
          </div>
        </section>` : null}
    </div>`;
}
