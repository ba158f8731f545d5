// The Benchmarks tab (issue 6, item 4): set up a benchmark (a processed document, a question file validated
// against it, the configuration grid, the judge), dry-run its cost, run it with live progress; the Experiment
// list with the ±P/N Neighbor badge and mismatch warnings (docs/dashboard.md); an Experiment's aggregates, Decision
// and reports; and Retrieval Inspect, a full-page view of one question × configuration at a time.
import { html, useEffect, useRef, useState, ErrorBox, Spinner, ProgressBar, fmt, fmtInt, ms, useApi, usePager, LIMITS,
  targetName } from "../ui.js";
import { api, cancelJob, strategyCatalog, upload, waitForJob, withKey } from "../api.js";
import { Breakdowns } from "../breakdowns.js";
import { emit, on, take } from "../bus.js";
import { EXPERIMENTS_CHANGED } from "../steps.js";
import { BENCHMARK_SET, QUESTION_SETS_CHANGED } from "./questions.js";
import { ExperimentCharts } from "../charts.js";
import { Unavailable, offered, rerankers, useCapabilities } from "../capabilities.js";
import { Term } from "../glossary.js";
import { go, setParams, useRouteParam } from "../router.js";
import { RetrievalInspect } from "../inspect.js";

const RETRIEVERS = ["dense", "bm25", "hybrid"];
// The aggregates table shows these next to the primary metric when they were measured.
const KEY_METRICS = ["recall", "recall_at_k", "mrr", "ndcg_at_k", "token_f1", "answer_similarity",
  "judge_answer_similarity", "judge_faithfulness"];
const DECISION_LABELS = {
  winner: ["winner", "good"], tie_broken_by_cost: ["tie broken by context cost", "accent"],
  cannot_tell: ["cannot tell", "warn"], no_clear_winner: ["no clear winner", "warn"],
  insufficient_data: ["insufficient data", "bad"],
};
// Layout of this tab only (the shared building blocks are in styles.css).
const CSS = `
.bench-grid { display: grid; gap: 1rem; grid-template-columns: minmax(340px, 5fr) minmax(0, 7fr); align-items: start; }
.bench-inspect { display: grid; gap: 1rem; grid-template-columns: minmax(220px, 1fr) minmax(0, 3fr); align-items: start; }
@media (max-width: 1000px) { .bench-grid { grid-template-columns: minmax(0, 1fr); } }
/* One column: an open Experiment (a deep link, a run just started) comes first, above the form and the list, rather
   than a screen or more below the fold. */
@media (max-width: 1000px) {
  .bench-grid.has-open > .bench-side { order: -1; display: flex; flex-direction: column; gap: 1rem; }
  .bench-grid.has-open > .bench-side > * { margin-top: 0; }
  .bench-grid.has-open > .bench-side > .open-experiment { order: -1; }
}
@media (max-width: 760px) { .bench-inspect { grid-template-columns: minmax(0, 1fr); } }
`;
const LIVE_POLL_MS = 1500; // how often running Experiments' counts are read again
const STATUS_CLASS = { completed: "good", running: "accent", failed: "bad", interrupted: "warn" };

const neighborBadge = (prev, next) => `±${prev}/${next}`;
const fmtMetric = (metric, value) => (metric === "tok_at_k" ? fmt(value, 0) : fmt(value));
const percent = (value) => (value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`);
// The API's timestamps are UTC; the summaries' have no zone suffix.
const when = (stamp) => {
  if (!stamp) return "—";
  const date = new Date(/[zZ]|[+-]\d\d:\d\d$/.test(stamp) ? stamp : `${stamp}Z`);
  return date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
};
const clip = (text, size = 140) => (text && text.length > size ? `${text.slice(0, size)}…` : text || "");

const targetKey = (row) => (row.corpus_name || row.corpus_id ? `corpus:${row.corpus_id || row.corpus_name}`
  : `document:${row.document_id}`);

function StatusBadge({ status }) {
  return html`<span class=${`badge ${STATUS_CLASS[status] || ""}`}>${status}</span>`;
}

function NeighborBadge({ prev, next }) {
  return html`<${Term} name="neighbors"><span class="badge accent"
    aria-label=${`Neighbor Expansion ${prev} before, ${next} after`}>${neighborBadge(prev, next)}</span></${Term}>`;
}

/** Warnings when Experiments that would be read side by side differ in Corpus, Boundary or Neighbor settings. */
export function mismatchWarnings(rows, expanding = new Set()) {
  const distinct = (values) => [...new Set(values)];
  const warnings = [];
  const corpus = distinct(rows.map((row) => row.corpus_model_id).filter(Boolean));
  if (corpus.length > 1) {
    warnings.push(`Corpus models differ (${corpus.join(", ")}): retrieval figures are not comparable across them.`);
  }
  const boundary = distinct(rows.map((row) => row.boundary_model_id).filter(Boolean));
  if (boundary.length > 1) {
    warnings.push(`Boundary models differ (${boundary.join(", ")}): semantic chunks were cut differently.`);
  }
  // Only Experiments with a strategy that expands neighbours (``expanding``: names from /strategies) have a setting.
  const withWindows = rows.filter((row) => row.strategies.some((name) => expanding.has(name)));
  const neighbours = distinct(withWindows.map((row) => neighborBadge(row.neighbor_prev, row.neighbor_next)));
  if (neighbours.length > 1) {
    warnings.push(`Neighbor Expansion differs (${neighbours.join(", ")}): fixed_size contexts are not the same size.`);
  }
  return warnings;
}

// What differs between one Experiment and the selected one (for the row's badge).
function differences(row, selected) {
  if (!selected || row.id === selected.id) return [];
  const out = [];
  if ((row.corpus_model_id || null) !== (selected.corpus_model_id || null)) out.push("Corpus");
  if (row.boundary_model_id && selected.boundary_model_id && row.boundary_model_id !== selected.boundary_model_id) {
    out.push("Boundary");
  }
  if (row.neighbor_prev !== selected.neighbor_prev || row.neighbor_next !== selected.neighbor_next) out.push("Neighbors");
  return out;
}

// ------------------------------------------------------------------------------------------ the set-up form

function parseTopK(text) {
  const values = text.split(/[\s,]+/).filter(Boolean).map(Number);
  if (!values.length || values.some((v) => !Number.isInteger(v) || v < 1 || v > LIMITS.max_top_k)) {
    throw new Error(`top_k: give whole numbers between 1 and ${LIMITS.max_top_k}, separated by commas (e.g. 3, 5).`);
  }
  return [...new Set(values)];
}

function Checks({ legend, options, selected, onChange, disabled = {} }) {
  const toggle = (value) => {
    const next = new Set(selected);
    next.has(value) ? next.delete(value) : next.add(value);
    onChange(next);
  };
  return html`<fieldset><legend>${legend}</legend><div class="checks">
    ${options.map(([value, text]) => html`<label key=${value}>
      <input type="checkbox" checked=${selected.has(value)} disabled=${Boolean(disabled[value])}
        onChange=${() => toggle(value)} />${text}</label>`)}
  </div></fieldset>`;
}

// Uploading never changes the benchmark's question file behind a person's back: the new file is chosen only when
// none was (or it replaced the chosen one); otherwise the status says which file the benchmark still uses, with
// a button to switch.
function QuestionUpload({ selected, onUploaded, onUse }) {
  const input = useRef(null);
  const [over, setOver] = useState(false);
  const [overwrite, setOverwrite] = useState(false);
  const [state, setState] = useState({ busy: false, progress: 0, name: null, error: null, done: null });
  const send = async (files) => {
    for (const file of files) {
      setState({ busy: true, progress: 0, name: file.name, error: null, done: null });
      try {
        const body = await upload("/admin/questions", file, {
          query: overwrite ? { overwrite: "true" } : {},
          onProgress: (progress) => setState((s) => ({ ...s, progress })),
        });
        setState({ busy: false, progress: 1, name: file.name, error: null, done: body, kept: selected });
        onUploaded(body.file.name);
      } catch (error) {
        setState({ busy: false, progress: 0, name: file.name, error, done: null });
        return;
      }
    }
  };
  const choose = () => input.current?.click();
  return html`<div class="stack">
    <div class=${`dropzone${over ? " over" : ""}`} role="button" tabindex="0"
      aria-label="Upload question files: drop them here, or press Enter to choose"
      onClick=${choose} onKeyDown=${(e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), choose())}
      onDragOver=${(e) => { e.preventDefault(); setOver(true); }} onDragLeave=${() => setOver(false)}
      onDrop=${(e) => { e.preventDefault(); setOver(false); send([...e.dataTransfer.files]); }}>
      Drop a question file here (.json, .jsonl, .csv) or click to choose
    </div>
    <input type="file" ref=${input} hidden multiple accept=".json,.jsonl,.csv" aria-label="Question file to upload"
      onChange=${(e) => { send([...e.target.files]); e.target.value = ""; }} />
    <div class="checks"><label><input type="checkbox" checked=${overwrite}
      onChange=${(e) => setOverwrite(e.target.checked)} />Replace a file of the same name</label></div>
    ${state.busy ? html`<${ProgressBar} value=${state.progress} label=${`Uploading ${state.name}…`} />` : null}
    ${state.done ? html`<div class="muted" role="status">${`${state.done.replaced ? "Replaced" : "Uploaded"} \
${state.done.file.name}: ${state.done.file.question_count} questions, ${state.done.file.reference_count} references.`}
      ${selected === state.done.file.name ? ` This benchmark uses it${state.kept === selected
        ? " (its new contents: validate again)" : ""}.`
        : html` This benchmark still uses <strong>${selected}</strong>. <button class="link"
          onClick=${() => onUse(state.done.file.name)}>Use ${state.done.file.name}</button>`}
      </div>` : null}
    ${state.error ? html`<${ErrorBox} error=${{ message: `${state.name}: ${state.error.message}` }} />` : null}
  </div>`;
}

function ValidationReport({ report }) {
  const validation = report.validation;
  const results = validation?.results || [];
  const unplaced = results.filter((r) => r.status !== "placed");
  const [page, pager] = usePager(results.filter((r) => r.status === "placed"), 10);
  if (!validation) return null;
  const counts = validation.counts;
  const methods = ["offsets", "exact", "whitespace", "fuzzy"].filter((m) => counts[m])
    .map((m) => `${counts[m]} ${m}`).join(", ");
  return html`<section class="stack" aria-label="Validation">
    <div role="status">
      <span class=${`badge ${validation.ok ? "good" : "bad"}`}>${validation.ok ? "valid" : "problems"}</span>
      ${" "}${fmtInt(counts.questions)} questions, ${fmtInt(counts.references)} references
      ${methods ? ` · placed: ${methods}` : ""}${counts.unplaced ? ` · ${counts.unplaced} cannot be placed` : ""}
      ${!counts.references ? html`<span class="muted"> · no evidence: the Decision ranks on answer similarity</span>`
        : null}
    </div>
    ${unplaced.length ? html`<div class="error" role="alert" style="white-space: normal">
      <strong>${unplaced.length} evidence snippet(s) cannot be placed in the document</strong> (similarity threshold ${validation.threshold}).
      Fix them in the file or remove those references:
      <ul>${unplaced.map((r) => html`<li key=${`${r.question_id}-${r.reference_index}`}>
        question <strong>${r.question_id}</strong>, reference ${r.reference_index + 1}: “${clip(r.snippet, 200)}”
        — ${r.message}${r.closest_text ? html`<br />closest text (${fmt(r.score, 2)}):
          “<span class="mono">${clip(r.closest_text, 200)}</span>”` : null}</li>`)}</ul>
    </div>` : null}
    ${results.length - unplaced.length ? html`<div class="scroll"><table class="data" aria-label="Evidence placements">
      <thead><tr><th>question</th><th class="num">ref</th><th>placed by</th><th class="num">score</th>
        <th class="num">offsets</th><th>snippet</th></tr></thead>
      <tbody>${page.map((r) => html`<tr key=${`${r.question_id}-${r.reference_index}`}>
        <td>${r.question_id}</td><td class="num">${r.reference_index + 1}</td><td>${r.method}</td>
        <td class="num">${fmt(r.score, 2)}</td><td class="num">${r.start_index}–${r.end_index}</td>
        <td>${clip(r.snippet, 60)}</td></tr>`)}</tbody></table></div>${pager}` : null}
  </section>`;
}

function EstimateView({ estimate }) {
  return html`<section class="stack" aria-label="Dry run">
    <div role="status"><strong>${`${fmtInt(estimate.configurations)} configurations × ${fmtInt(estimate.questions)} \
questions = ${fmtInt(estimate.cells)} cells`}</strong>${` · ${fmtInt(estimate.llm_calls)} LLM calls · `}${
      estimate.total_usd === null ? `at least $${fmt(estimate.known_usd, 4)} (some prices unknown)`
        : `$${fmt(estimate.total_usd, 4)}`}</div>
    <div class="scroll"><table class="data" aria-label="Estimated cost">
      <thead><tr><th>item</th><th>model</th><th class="num">calls</th><th class="num">input tokens</th>
        <th class="num">output tokens</th><th class="num">USD</th></tr></thead>
      <tbody>${estimate.items.map((item) => html`<tr key=${item.item}><td>${item.item}</td><td>${item.model || "—"}</td>
        <td class="num">${fmtInt(item.calls)}</td><td class="num">${fmtInt(item.input_tokens)}</td>
        <td class="num">${fmtInt(item.output_tokens)}</td>
        <td class="num">${item.usd === null ? "unknown" : fmt(item.usd, 4)}</td></tr>`)}</tbody>
    </table></div>
    ${estimate.warnings.map((w) => html`<div class="notice">${w}</div>`)}
    ${estimate.notes.map((n) => html`<div class="muted">${n}</div>`)}
    <div class="muted">Prices as of ${estimate.prices_as_of}.</div>
  </section>`;
}

// The strategies every indexed member of a corpus has been processed with (what a corpus benchmark can compare).
function corpusStrategies(detail) {
  const indexed = (detail?.documents || []).filter((d) => d.status === "indexed");
  if (!indexed.length) return [];
  return Object.keys(indexed[0].chunk_counts || {}).filter((name) => indexed.every((d) => name in (d.chunk_counts || {})));
}

function BenchmarkForm({ capabilities, preselect, onStarted, onFinished }) {
  const documents = useApi(() => api("/documents", { query: { status: "indexed", limit: 1000 } }), []);
  const [fileTick, setFileTick] = useState(0);
  const files = useApi(() => api("/admin/questions"), [fileTick]);
  useEffect(() => on(QUESTION_SETS_CHANGED, () => setFileTick((t) => t + 1)), []); // a set written in Questions
  const [target, setTarget] = useState("document"); // what retrieval searches: one document or a corpus
  const [corpusTick, setCorpusTick] = useState(0);
  const corpora = useApi(() => api("/corpora"), [corpusTick]);
  const [corpusName, setCorpusName] = useState("");
  // Read after the list (not with it): a corpus deleted since is not asked for.
  const listed = (corpora.data || []).some((c) => c.name === corpusName);
  const corpus = useApi(
    () => (target === "corpus" && listed ? api(`/corpora/${encodeURIComponent(corpusName)}`) : Promise.resolve(null)),
    [target, corpusName, corpora.data],
  );
  // A corpus made, changed or processed in the Documents tab: its members and strategies are read again.
  useEffect(() => on("documents-changed", () => setCorpusTick((t) => t + 1)), []);
  const models = useApi(() => api("/admin/embedding-models"), []);
  const [corpusModels, setCorpusModels] = useState(new Set()); // none ticked: the documents' last Corpus model
  const [documentId, setDocumentId] = useState("");
  const [fileName, setFileName] = useState("");
  const [strategies, setStrategies] = useState(new Set());
  const [retrievers, setRetrievers] = useState(new Set(["dense"]));
  const [topK, setTopK] = useState("5");
  const [prev, setPrev] = useState(0);
  const [next, setNext] = useState(0);
  const [rerank, setRerank] = useState(new Set(["none"]));
  const [judge, setJudge] = useState(false);
  // Successive halving (benchmarking/pruning.py): off by default, for grids of 30+ configurations.
  // The Decision's context budget (tokens per question); empty: the server's default, the smallest median tok@k.
  const [budget, setBudget] = useState("");
  const [prune, setPrune] = useState({ on: false, first_share: 0.25, eta: 3, confidence: 0.99, min_configurations: 30 });
  const [validation, setValidation] = useState({ data: null, error: null, busy: false });
  const [estimate, setEstimate] = useState({ data: null, error: null, busy: false });
  const [run, setRun] = useState({ busy: false, progress: 0, message: "", error: null, jobId: null });

  const docs = documents.data?.items || [];
  const doc = docs.find((d) => d.id === documentId);
  const onCorpus = target === "corpus";
  const corpusList = corpora.data || [];
  const members = corpus.data?.documents || [];
  const notIndexed = members.filter((d) => d.status !== "indexed").length;
  const processed = onCorpus ? corpusStrategies(corpus.data) : doc ? Object.keys(doc.chunk_counts || {}) : [];
  const questionFiles = files.data || [];
  const modelOptions = (models.data?.models || []).filter((m) => m.available).map((m) => [m.id, m.display_name || m.id]);

  // First load, or a document chosen elsewhere (Documents tab): pick it when it is processed.
  useEffect(() => {
    const wanted = docs.find((d) => d.id === preselect) || (!documentId && docs[0]);
    if (wanted && wanted.id !== documentId) setDocumentId(wanted.id);
  }, [documents.data, preselect]);
  useEffect(() => { if (corpora.data && !listed) setCorpusName(corpusList[0]?.name || ""); }, [corpora.data]);
  useEffect(() => { setStrategies(new Set(processed)); }, [target, documentId, documents.data, corpus.data]);
  useEffect(() => { if (!fileName && questionFiles[0]) setFileName(questionFiles[0].name); }, [files.data]);
  // "Benchmark it…" in Questions: its set on the scope it was written on (a corpus set on one document would leave
  // every other document's evidence unplaced). Taken on mount too: the click may be what first opens this tab.
  useEffect(() => {
    const apply = (handed) => {
      if (!handed) return;
      if (handed.corpus) {
        setTarget("corpus");
        setCorpusName(handed.corpus);
        setCorpusTick((t) => t + 1); // a corpus made since this tab last read the list
      } else {
        setTarget("document");
        if (handed.documentId) setDocumentId(handed.documentId);
      }
      setFileName(handed.name);
      setFileTick((t) => t + 1);
    };
    apply(take(BENCHMARK_SET));
    return on(BENCHMARK_SET, () => apply(take(BENCHMARK_SET)));
  }, []);
  // Only what can work is offered: the judge and rerankers the server can run (GET /admin/capabilities).
  const judgeOk = offered(capabilities, capabilities.data?.judge);
  const rerankOptions = rerankers(capabilities);
  // On by default when the server can run it (as the API's default), off when it cannot say.
  useEffect(() => { setJudge(Boolean(capabilities.data?.judge?.available)); }, [capabilities.data]);
  useEffect(() => {
    if (!capabilities.data) return;
    const ok = new Set(rerankOptions.filter(([, , can]) => can).map(([value]) => value));
    setRerank((chosen) => ([...chosen].every((v) => ok.has(v)) ? chosen
      : new Set([...chosen].filter((v) => ok.has(v)))));
  }, [capabilities.data]);
  // A different document or file makes the last validation and estimate stale.
  useEffect(() => {
    setValidation({ data: null, error: null, busy: false });
    setEstimate({ data: null, error: null, busy: false });
  }, [target, documentId, corpusName, fileName, fileTick]);

  const body = (dryRun) => ({
    ...(onCorpus ? { corpus: corpusName } : { document_id: documentId }),
    ...(corpusModels.size ? { corpus_models: [...corpusModels] } : {}),
    question_set: fileName, strategies: [...strategies], retrievers: [...retrievers],
    top_k: parseTopK(topK), neighbor_prev: Number(prev), neighbor_next: Number(next), rerank: [...rerank],
    judge: judgeOk && judge, dry_run: dryRun,
    ...(budget ? { budget: Number(budget) } : {}),
    ...(prune.on ? { prune: { first_share: Number(prune.first_share), eta: Number(prune.eta),
      confidence: Number(prune.confidence), min_configurations: Number(prune.min_configurations) } } : {}),
  });
  const validate = async () => {
    setValidation({ data: null, error: null, busy: true });
    try {
      const data = await api(`/admin/questions/${encodeURIComponent(fileName)}`, {
        // A corpus's set names several documents: its evidence is placed in every member, not in one document.
        query: { document_id: onCorpus ? members.map((d) => d.id) : documentId },
      });
      setValidation({ data, error: null, busy: false });
    } catch (error) {
      setValidation({ data: null, error, busy: false });
    }
  };
  const dryRun = async () => {
    setEstimate({ data: null, error: null, busy: true });
    try {
      setEstimate({ data: await api("/benchmarks", { method: "POST", json: body(true) }), error: null, busy: false });
    } catch (error) {
      setEstimate({ data: null, error, busy: false });
    }
  };
  const start = async () => {
    setRun({ busy: true, progress: 0, message: "Starting…", error: null, jobId: null });
    let accepted = null;
    try {
      accepted = await api("/benchmarks", { method: "POST", json: body(false) });
      setRun((s) => ({ ...s, jobId: accepted.job_id }));
      onStarted(accepted.experiment_id);
      await waitForJob(accepted.job_id, { onProgress: (progress, message) => setRun((s) => ({ ...s, progress, message })) });
      setRun({ busy: false, progress: 1, message: "Finished.", error: null, jobId: null });
    } catch (error) {
      setRun({ busy: false, progress: 0, message: "", error, jobId: null });
    }
    if (accepted) onFinished(accepted.experiment_id);
  };
  const cancel = async () => {
    setRun((s) => ({ ...s, message: "Cancelling: the cells in flight finish first…", cancelling: true }));
    try { await cancelJob(run.jobId); } catch (error) { setRun((s) => ({ ...s, error })); }
  };

  const ready = (onCorpus ? corpusName : documentId) && fileName && strategies.size && retrievers.size && rerank.size;
  const busy = validation.busy || estimate.busy || run.busy;
  return html`<section class="panel stack" aria-label="New benchmark">
    <h2>New benchmark</h2>
    <${ErrorBox} error=${documents.error || files.error || corpora.error || corpus.error || models.error} />
    <fieldset><legend>Retrieval searches</legend><div class="checks">
      <label><input type="radio" name="bench-target" checked=${!onCorpus} onChange=${() => setTarget("document")} />
        one document</label>
      <label><input type="radio" name="bench-target" checked=${onCorpus}
        onChange=${() => { setTarget("corpus"); setCorpusTick((t) => t + 1); }} />a corpus</label>
    </div></fieldset>
    ${!onCorpus && documents.loading && !documents.data ? html`<${Spinner} label="Loading documents…" />` : null}
    ${!onCorpus && documents.data && !docs.length ? html`<div class="notice">No processed document yet: upload one in the
      Documents tab and process it, then come back.</div>` : null}
    ${onCorpus && corpora.data && !corpusList.length ? html`<div class="notice">No corpus yet: tick documents in the
      Documents tab and make one (or <span class="mono">chunkbench ingest DIR --corpus NAME</span>), then process it.
      </div>` : null}
    <div class="row">
      ${onCorpus ? html`<label>Corpus
        <select value=${corpusName} onChange=${(e) => setCorpusName(e.target.value)}>
          ${corpusList.map((c) => html`<option key=${c.id} value=${c.name}>${
            `${c.name} (${fmtInt(c.document_count)} documents)`}</option>`)}
        </select></label>` : html`<label>Document
        <select value=${documentId} onChange=${(e) => setDocumentId(e.target.value)}>
          ${docs.map((d) => html`<option key=${d.id} value=${d.id}>${d.source_key || d.filename}</option>`)}
        </select></label>`}
      <label>Question file
        <select value=${fileName} onChange=${(e) => setFileName(e.target.value)}>
          ${!questionFiles.length ? html`<option value="">— upload one below —</option>` : null}
          ${questionFiles.map((f) => html`<option key=${f.name} value=${f.name}>
            ${f.name}${f.error ? " (unreadable)" : ` (${f.question_count} questions)`}</option>`)}
        </select></label>
      <button class="secondary" disabled=${!(onCorpus ? members.length : documentId) || !fileName || busy}
        onClick=${validate}>Validate</button>
    </div>
    ${onCorpus ? html`<div class="muted">Each question names its document (<span class="mono">document_id</span>: an id,
      source key, filename or stem); the dry run and the run place every snippet in it and refuse what cannot be
      placed.${corpus.data ? ` ${fmtInt(members.length)} documents${notIndexed ? `, ${fmtInt(notIndexed)} not indexed`
      : ""}.` : ""}</div>` : null}
    <${QuestionUpload} selected=${fileName} onUse=${setFileName}
      onUploaded=${(name) => {
        if (!fileName) setFileName(name);
        // Other readers of the question files (the step strip, this form's list through its listener) read again.
        emit(QUESTION_SETS_CHANGED, { name });
      }} />
    ${validation.busy ? html`<${Spinner} label="Placing the evidence in the document…" />` : null}
    <${ErrorBox} error=${validation.error} />
    ${validation.data ? html`<${ValidationReport} report=${validation.data} />` : null}

    <${Checks} legend=${onCorpus ? "Strategies (processed for every document of the corpus)"
      : "Strategies (processed for this document)"} options=${processed.map((s) => [s, s])}
      selected=${strategies} onChange=${setStrategies} />
    ${!onCorpus && doc && !processed.length ? html`<div class="muted">This document has no processed strategy.</div>`
      : null}
    ${onCorpus && corpus.data && !processed.length ? html`<div class="muted">No strategy has been processed for every
      document of this corpus: process the corpus in the Documents tab.</div>` : null}
    <${Checks} legend=${html`<${Term} name="corpus_model">Corpus models</${Term}> (none ticked: the one the documents
      were last processed with)`}
      options=${modelOptions} selected=${corpusModels} onChange=${setCorpusModels} />
    <${Checks} legend=${html`<${Term} name="retriever">Retrievers</${Term}>`} options=${RETRIEVERS.map((r) => [r, r])}
      selected=${retrievers} onChange=${setRetrievers} />
    <${Checks} legend=${html`<${Term} name="rerank">Rerank</${Term}>`} selected=${rerank} onChange=${setRerank}
      options=${rerankOptions.map(([value, text, can]) => [value, can ? text : `${text} (not available)`])}
      disabled=${Object.fromEntries(rerankOptions.map(([value, , can]) => [value, !can]))} />
    <div class="row">
      <label><span><${Term} name="top_k" /> values</span><input type="text" value=${topK}
        onInput=${(e) => setTopK(e.target.value)} inputmode="numeric" placeholder="3, 5" /></label>
      <label>Neighbors before<input type="number" min="0" max=${LIMITS.max_neighbors} value=${prev}
        onInput=${(e) => setPrev(e.target.value)} /></label>
      <label>Neighbors after<input type="number" min="0" max=${LIMITS.max_neighbors} value=${next}
        onInput=${(e) => setNext(e.target.value)} /></label>
      <div class="checks"><label><input type="checkbox" checked=${judgeOk && judge} disabled=${!judgeOk}
        onChange=${(e) => setJudge(e.target.checked)} /><${Term} name="judge" /></label></div>
    </div>
    <div class="muted"><${Term} name="neighbor_expansion" /> applies to fixed_size only.</div>
    <details data-testid="advanced-options"><summary>Advanced options</summary>
      <div class="row">
        <div class="checks"><label><input type="checkbox" checked=${prune.on} data-testid="prune-toggle"
          onChange=${(e) => setPrune((p) => ({ ...p, on: e.target.checked }))} />Prune (successive halving)</label></div>
        <label>First share of questions<input type="number" min="0.05" max="0.9" step="0.05" value=${prune.first_share}
          disabled=${!prune.on} onInput=${(e) => setPrune((p) => ({ ...p, first_share: e.target.value }))} /></label>
        <label>Growth per rung (eta)<input type="number" min="2" max="4" value=${prune.eta} disabled=${!prune.on}
          onInput=${(e) => setPrune((p) => ({ ...p, eta: e.target.value }))} /></label>
        <label>Confidence<input type="number" min="0.8" max="0.999" step="0.005" value=${prune.confidence}
          disabled=${!prune.on} onInput=${(e) => setPrune((p) => ({ ...p, confidence: e.target.value }))} /></label>
        <label>Minimum configurations<input type="number" min="3" value=${prune.min_configurations}
          disabled=${!prune.on} onInput=${(e) => setPrune((p) => ({ ...p, min_configurations: e.target.value }))} />
        </label>
      </div>
      <div class="muted">Every configuration answers a seeded share of the questions first; those worse than the
        leader with the family-wise confidence (Holm-corrected) stop, the rest go on to eta times more questions until
        every question is scored. A grid smaller than the minimum is refused.</div>
      <div class="row"><label>Decision budget (context tokens per question)<input type="number" min="1" step="1"
        value=${budget} placeholder="default: the leanest median" data-testid="budget-field"
        onInput=${(e) => setBudget(e.target.value)} /></label></div>
      <div class="muted">The verdict names the winner with every configuration's context cut to this budget first,
        when it is not the winner at full context.</div>
    </details>
    <${Unavailable} items=${[["The LLM-as-judge", capabilities.data?.judge],
      ...rerankOptions.filter(([value]) => value !== "none")
        .map(([, text, , capability]) => [`${text[0].toUpperCase()}${text.slice(1)} reranking`, capability])]} />
    <div class="row">
      <button class="secondary" disabled=${!ready || busy} onClick=${dryRun}>Dry run</button>
      <button class="primary" disabled=${!ready || busy} onClick=${start}>Run benchmark</button>
    </div>
    ${estimate.busy ? html`<${Spinner} label="Estimating…" />` : null}
    <${ErrorBox} error=${estimate.error} />
    ${estimate.data ? html`<${EstimateView} estimate=${estimate.data} />` : null}
    ${run.busy ? html`<${ProgressBar} value=${run.progress} label=${run.message} />
      <div class="row"><button class="secondary" onClick=${cancel} disabled=${!run.jobId || run.cancelling}>
        ${run.cancelling ? "Cancelling…" : "Cancel"}</button>
        <span class="muted">stops after the cells in flight; resume the Experiment to finish it</span></div>` : null}
    <${ErrorBox} error=${run.error} />
  </section>`;
}

// ------------------------------------------------------------------------------------------ Experiments

function ExperimentList({ selectedId, onSelect, version }) {
  const [tick, setTick] = useState(0);
  const list = useApi(() => api("/experiments", { query: { limit: 1000 } }), [version, tick]);
  // Live counts: while any Experiment runs, the list is read again (cells done, status) until none does.
  const anyRunning = (list.data || []).some((row) => row.status === "running");
  useEffect(() => {
    if (!anyRunning || list.loading) return undefined;
    const timer = setTimeout(() => setTick((t) => t + 1), LIVE_POLL_MS);
    return () => clearTimeout(timer);
  }, [anyRunning, list.data, list.loading]);
  const [documentFilter, setDocumentFilter] = useState(""); // "": all; else a targetKey
  const rows = (list.data || []).filter((row) => !documentFilter || targetKey(row) === documentFilter);
  const targets = [...new Map((list.data || []).map((row) => [targetKey(row), targetName(row)])).entries()];
  const [page, pager] = usePager(rows, 15);
  const selected = (list.data || []).find((row) => row.id === selectedId);
  const catalog = useApi(() => strategyCatalog(), []);
  const expanding = new Set((catalog.data || []).filter((s) => s.expands_neighbours).map((s) => s.name));
  const warnings = mismatchWarnings(rows, expanding);
  return html`<div class="panel stack">
    <div class="row" style="justify-content: space-between">
      <h2>Experiments</h2>
      <div class="row">
        <label>Show document
          <select value=${documentFilter} onChange=${(e) => setDocumentFilter(e.target.value)}>
            <option value="">all documents and corpora</option>
            ${targets.map(([key, name]) => html`<option key=${key} value=${key}>${name}</option>`)}
          </select></label>
        <button class="secondary" onClick=${list.reload}>Refresh</button>
      </div>
    </div>
    <${ErrorBox} error=${list.error} />
    ${list.loading && !list.data ? html`<${Spinner} label="Loading Experiments…" />` : null}
    ${list.data && !rows.length ? html`<div class="muted">No Experiment yet: run a benchmark.</div>` : null}
    ${warnings.map((w) => html`<div class="notice" role="note"><span class="badge warn">mismatch</span> ${w}</div>`)}
    ${rows.length ? html`<div class="scroll"><table class="data" aria-label="Experiments">
      <thead><tr><th>status</th><th>document</th><th>strategies</th>
        <th><${Term} name="corpus_model">models</${Term}></th>
        <th><${Term} name="neighbors">neighbors</${Term}></th><th class="num"><${Term} name="cells" /></th>
        <th>metric</th><th>best</th><th>created</th></tr></thead>
      <tbody>${page.map((row) => {
        const differs = differences(row, selected);
        return html`<tr key=${row.id} class=${`clickable${row.id === selectedId ? " selected" : ""}`}
          aria-selected=${row.id === selectedId} onClick=${() => onSelect(row.id)}>
          <td><${StatusBadge} status=${row.status} /></td>
          <td><button class="link" onClick=${(e) => { e.stopPropagation(); onSelect(row.id); }}
            aria-label=${`${row.name || targetName(row)}: open the Experiment of ${when(row.created_at)}`}>
            ${row.name || targetName(row)}</button>
            ${row.name && row.corpus_name ? html`<div class="muted">${targetName(row)}</div>` : null}
            ${differs.length ? html` <span class="badge warn" title="differs from the selected Experiment">≠ ${
              differs.join(", ")}</span>` : null}</td>
          <td>${row.strategies.join(", ")}</td>
          <td class="mono">${(row.corpus_models?.length ? row.corpus_models : [row.corpus_model_id || "—"]).join(", ")}</td>
          <td><${NeighborBadge} prev=${row.neighbor_prev} next=${row.neighbor_next} /></td>
          <td class="num">${fmtInt(row.cells_done)}/${fmtInt(row.cells_total)}</td>
          <td>${row.primary_metric ? html`<${Term} name=${row.primary_metric} />` : "—"}</td>
          <td>${row.best || html`<span class="muted">${(DECISION_LABELS[row.decision_status] || ["—"])[0]}</span>`}</td>
          <td>${when(row.created_at)}</td></tr>`;
      })}</tbody></table></div>${pager}` : null}
  </div>`;
}

// The verdict first, in the server's words (benchmarking/verdicts.py: the reports and the CLI say the same), and
// the reasons beneath it, collapsed.
function DecisionView({ decision }) {
  if (!decision) return null;
  const [text, tone] = DECISION_LABELS[decision.status] || [decision.status, ""];
  const reasons = decision.reasons || [];
  return html`<section class="stack" aria-label="Decision">
    <h3>Decision <span class=${`badge ${tone}`}>${text}</span></h3>
    <p class="verdict-text" data-testid="decision-verdict"><strong>${decision.verdict}</strong></p>
    ${reasons.length ? html`<details data-testid="decision-details"><summary>Why, configuration by configuration</summary>
      <ul>${reasons.map((r) => html`<li>${r}</li>`)}</ul></details>` : null}
  </section>`;
}

// The configurations pruning stopped (benchmarking/pruning.py): rung, questions, mean and the interval that did it.
function PrunedTable({ pruning }) {
  const rows = pruning?.pruned || [];
  if (!rows.length) return null;
  return html`<section class="stack" aria-label="Pruned">
    <h3>Pruned: ${fmtInt(rows.length)} configurations stopped early</h3>
    <div class="muted">${pruning.rule}</div>
    <div class="table-frame"><table class="data" aria-label="Pruned configurations" data-testid="pruned-table">
      <thead><tr><th>configuration</th><th class="num">rung</th><th class="num">questions</th>
        <th class="num">${pruning.metric} mean</th><th class="num">gap to the rung's leader [interval]</th>
        <th class="num">confidence</th></tr></thead>
      <tbody>${rows.map((row) => html`<tr key=${row.config_key}><td>${row.config_key}</td>
        <td class="num">${row.rung}</td><td class="num">${fmtInt(row.questions)}</td>
        <td class="num">${fmtMetric(pruning.metric, row.mean)}</td>
        <td class="num">${fmt(row.difference[0])} <span class="muted">[${fmt(row.difference[1])}, ${
          fmt(row.difference[2])}]</span> vs ${row.leader}</td>
        <td class="num">${(row.confidence * 100).toFixed(3)}%</td></tr>`)}</tbody>
    </table></div></section>`;
}

function AggregatesTable({ experiment }) {
  const decision = experiment.decision || {};
  const primary = decision.metric || experiment.config.primary_metric;
  const aggregates = experiment.aggregate || {};
  const measured = (metric) => Object.values(aggregates).some((a) => a.metrics?.[metric]?.n > 0);
  const others = KEY_METRICS.filter((m) => m !== primary && measured(m));
  const ruledOut = new Set(decision.ruled_out || []);
  const pruned = new Set((experiment.pruning?.pruned || []).map((p) => p.config_key));
  const anyFailed = Object.values(aggregates).some((a) => a.failed_cells > 0);
  // A frame that scrolls both ways under a sticky header and a fixed first column: no row or column is cut off.
  return html`<div class="table-frame"><table class="data" aria-label="Aggregates">
    <thead><tr><th><${Term} name="configuration" /></th><th class="num"><${Term} name=${primary} /> (<${Term}
        name="interval" />)</th>
      ${others.map((m) => html`<th class="num"><${Term} name=${m} /></th>`)}
      <th class="num"><${Term} name="tok_at_k" /></th><th class="num"><${Term} name="latency_p50" /></th>
      <th class="num"><${Term} name="p_best" /></th>
      ${anyFailed ? html`<th class="num">failed</th>` : null}
    </tr></thead>
    <tbody>${experiment.configurations.map((config) => {
      const aggregate = aggregates[config.key];
      const main = aggregate?.metrics?.[primary];
      return html`<tr key=${config.key} class=${config.key === decision.best ? "selected" : ""}>
        <td>${config.key}${config.key === decision.best ? html` <span class="badge good">${
          decision.status === "winner" ? "winner" : "chosen: cheapest of the tie"}</span>` : null}
          ${ruledOut.has(config.key)
            ? html` <${Term} name="ruled_out"><span class="badge bad">ruled out</span></${Term}>` : null}
          ${pruned.has(config.key) ? html` <span class="badge bad">pruned</span>` : null}</td>
        <td class="num">${main ? html`${fmtMetric(primary, main.mean)} <span class="muted">[${
          fmtMetric(primary, main.ci_low)}, ${fmtMetric(primary, main.ci_high)}]</span>` : "—"}</td>
        ${others.map((m) => html`<td class="num">${fmtMetric(m, aggregate?.metrics?.[m]?.mean)}</td>`)}
        <td class="num">${fmt(aggregate?.metrics?.tok_at_k?.mean, 0)}</td>
        <td class="num" style="white-space: nowrap">${ms(aggregate?.latency_ms_p50)}</td>
        <td class="num">${percent(decision.prob_best?.[config.key])}</td>
        ${anyFailed ? html`<td class="num">${fmtInt(aggregate?.failed_cells)}</td>` : null}</tr>`;
    })}</tbody></table></div>`;
}

const experimentTarget = (experiment) => (experiment.corpus ? `corpus ${experiment.corpus.name || "(deleted)"}`
  : experiment.document.filename);

function ExperimentView({ id, version, onInspect, onChanged }) {
  const [tick, setTick] = useState(0);
  // The lean cells (ids, status, metrics): a corpus Experiment's full cells are tens of MB; Inspect loads them.
  const loaded = useApi(() => api(`/benchmarks/${id}`, { query: { cells: "scores" } }), [id, version, tick]);
  const [live, setLive] = useState(null);
  const [resume, setResume] = useState({ busy: false, progress: 0, message: "", error: null });
  const [cancel, setCancel] = useState({ busy: false, error: null });
  const experiment = loaded.data;
  const running = experiment?.status === "running";
  // While a run goes on, poll its small summary (not the whole Experiment) and reload it once it has ended.
  useEffect(() => {
    if (!running) return undefined;
    const timer = setInterval(async () => {
      try {
        const rows = await api("/experiments", { query: experiment.corpus
          ? { corpus: experiment.corpus.id || undefined, limit: 1000 }
          : { document_id: experiment.document.id, limit: 1000 } });
        const row = rows.find((r) => r.id === id);
        setLive(row || null);
        if (row && row.status !== "running") { setTick((t) => t + 1); onChanged(); }
      } catch { /* the next tick retries; the page keeps what it has */ }
    }, LIVE_POLL_MS);
    return () => clearInterval(timer);
  }, [id, running]);
  useEffect(() => { if (!running) setCancel({ busy: false, error: null }); }, [running]);
  // The job running it stops after the cells in flight; the poll then sees it interrupted (resumable).
  const doCancel = async () => {
    setCancel({ busy: true, error: null });
    try {
      await api(`/benchmarks/${id}/cancel`, { method: "POST" });
    } catch (error) {
      setCancel({ busy: false, error });
    }
  };
  const doResume = async () => {
    setResume({ busy: true, progress: 0, message: "Resuming…", error: null });
    try {
      const accepted = await api(`/benchmarks/${id}/resume`, { method: "POST" });
      onChanged();
      await waitForJob(accepted.job_id, {
        onProgress: (progress, message) => setResume((s) => ({ ...s, progress, message })),
      });
      setResume({ busy: false, progress: 1, message: "", error: null });
    } catch (error) {
      setResume({ busy: false, progress: 0, message: "", error });
    }
    setTick((t) => t + 1);
    onChanged();
  };
  if (loaded.error) return html`<div class="panel"><${ErrorBox} error=${loaded.error} /></div>`;
  if (!experiment) return html`<div class="panel"><${Spinner} label="Loading the Experiment…" /></div>`;
  const config = experiment.config;
  // The polled summary only while this Experiment runs: once it has ended, the reloaded Experiment is the truth
  // (the run's own job can end it before the next poll, which would leave a mid-run count on a finished run).
  const polled = running && live?.id === id ? live : null;
  const done = polled?.cells_done ?? experiment.progress.cells_done;
  const total = polled?.cells_total ?? experiment.progress.cells_total;
  const report = (view) => `/benchmarks/${id}/report?view=${view}`;
  return html`<section class="panel stack" aria-label="Experiment">
    <div class="row" style="justify-content: space-between">
      <h2>Experiment: ${experiment.name || experimentTarget(experiment)} <${StatusBadge} status=${experiment.status} />
      </h2>
      <div class="row">
        <button class="primary" onClick=${() => onInspect(experiment)} disabled=${!experiment.cells.length}>
          Retrieval Inspect</button>
        ${["interrupted", "failed"].includes(experiment.status) ? html`<button class="secondary"
          disabled=${resume.busy} onClick=${doResume}>Resume</button>` : null}
        ${running ? html`<button class="secondary" disabled=${cancel.busy} onClick=${doCancel}>
          ${cancel.busy ? "Cancelling…" : "Cancel"}</button>` : null}
      </div>
    </div>
    <dl class="kv">
      ${experiment.corpus ? html`<dt>corpus</dt><dd>${experiment.corpus.name || "(deleted)"} · ${
        fmtInt(experiment.corpus.documents.length)} documents</dd>`
        : html`<dt>document</dt><dd>${experiment.document.filename}</dd>`}
      <dt>configurations</dt><dd>${[config.strategies.join(", "), config.retrievers.join(", "),
        `top_k ${config.top_k.join(", ")}`, `rerank ${config.rerank.join(", ")}`].join(" × ")}</dd>
      <dt>neighbors</dt><dd><${NeighborBadge} prev=${config.neighbor_prev} next=${config.neighbor_next} /></dd>
      <dt>models</dt><dd>${`Corpus ${config.corpus_models?.join(", ") || config.corpus_model_id || "—"} · Boundary ${experiment.provenance?.boundary_model
        || "—"} · answers ${config.answer_mode} · judge ${config.judge ? "on" : "off"}`}</dd>
      <dt>questions</dt><dd>${fmtInt(experiment.questions.length)} · cells ${fmtInt(done)}/${fmtInt(total)}</dd>
      <dt>cost</dt><dd>$${fmt(experiment.cost?.actual_usd, 4)}</dd>
      <dt>created</dt><dd>${when(experiment.created_at)}</dd>
    </dl>
    ${running ? html`<${ProgressBar} value=${total ? done / total : 0} label=${`${done}/${total} cells`} />` : null}
    ${experiment.error && !running ? html`<${ErrorBox} error=${{ message: experiment.error.message || experiment.error,
      cancelled: experiment.error.error === "cancelled" }} />` : null}
    ${resume.busy ? html`<${ProgressBar} value=${resume.progress} label=${resume.message} />` : null}
    <${ErrorBox} error=${resume.error || cancel.error} />
    ${(experiment.warnings || []).map((w) => html`<div class="notice" role="alert" data-testid="language-warning"
      dir="auto"><span class="badge bad">${w.language} not covered</span> ${w.message}${" "}
      ${w.questions_share != null ? `Its documents hold ${(w.questions_share * 100).toFixed(1)} % of the questions. ` : ""}
      Built on it:${" "}<span class="mono">${w.configurations.join(", ")}</span>.</div>`)}
    <${DecisionView} decision=${experiment.decision} />
    <${AggregatesTable} experiment=${experiment} />
    <${PrunedTable} pruning=${experiment.pruning} />
    ${experiment.status !== "running" ? html`<${ExperimentCharts} experimentId=${id}
      experimentName=${experiment.name || experimentTarget(experiment)} stamp=${experiment.finished_at} />` : null}
    <${Breakdowns} experiment=${experiment} />
    <div class="row" data-testid="experiment-links">
      ${experiment.status === "completed" ? html`
        <a href=${report("managerial")} target="_blank" rel="noopener" onClick=${withKey}>Managerial report</a>
        <a href=${report("technical")} target="_blank" rel="noopener" onClick=${withKey}>Technical report</a>`
        : html`<span class="muted">The reports exist once every cell has run${running ? ""
          : ": resume the run"}.</span>`}
      <a href=${report("json")} download=${`experiment-${id}.json`} onClick=${withKey}>JSON export${
        experiment.status === "completed" ? "" : " (so far)"}</a>
    </div>
  </section>`;
}

// ------------------------------------------------------------------------------------------ the tab

export function BenchmarksTab() {
  const capabilities = useCapabilities();
  // Deep links: #benchmarks/experiment/ID (the open Experiment), …/inspect/ID (Retrieval Inspect on it).
  const [selectedId] = useRouteParam("benchmarks", "experiment");
  const [inspecting, setInspecting] = useRouteParam("benchmarks", "inspect");
  // Inspect's own parameters (question, configuration, side by side, filter) belong to the Experiment inspected.
  const INSPECT_CLOSED = { inspect: null, question: null, config: null, compare: null, filter: null };
  const setSelectedId = (id) => setParams("benchmarks", { experiment: id, ...INSPECT_CLOSED });
  const [listVersion, setListVersion] = useState(0);
  const [experimentVersion, setExperimentVersion] = useState(0);
  const [preselect, setPreselect] = useState(null);
  // Inspect loads the full cells (retrieved chunks, answers, Expansion Trees) only when asked for.
  const inspected = useApi(
    () => (inspecting ? api(`/benchmarks/${inspecting}`) : Promise.resolve(null)),
    [inspecting],
  );
  const inspectedData = inspected.data;
  const inspect = (experiment) => setInspecting(experiment.id);
  useEffect(() => on("inspect-experiment", ({ id }) => go("benchmarks", { experiment: id, inspect: id })), []);
  useEffect(() => on("open-experiment", ({ id }) => go("benchmarks", { experiment: id })), []);
  useEffect(() => on("select-document", ({ id }) => setPreselect(id)), []);
  const refresh = () => {
    setListVersion((v) => v + 1);
    setExperimentVersion((v) => v + 1);
    emit(EXPERIMENTS_CHANGED, {}); // the step strip: a finished run may be the first Decision
  };
  return html`<div>
    <style>${CSS}</style>
    ${inspecting ? html`<div>
      <${ErrorBox} error=${inspected.error} />
      ${inspectedData ? html`<${RetrievalInspect} experiment=${inspectedData}
        onClose=${() => setParams("benchmarks", INSPECT_CLOSED)} fmtMetric=${fmtMetric}
        title=${experimentTarget(inspectedData)} />`
        : html`<${Spinner} label="Loading the Experiment…" />`}
    </div>` : null}
    <div class=${`bench-grid${selectedId ? " has-open" : ""}`} style=${inspecting ? "display: none" : ""}>
      <${BenchmarkForm} capabilities=${capabilities} preselect=${preselect}
        onStarted=${(id) => { setSelectedId(id); setListVersion((v) => v + 1); }} onFinished=${refresh} />
      <div class="stack bench-side">
        <${ExperimentList} selectedId=${selectedId} onSelect=${setSelectedId} version=${listVersion} />
        ${selectedId ? html`<div class="open-experiment"><${ExperimentView} id=${selectedId} version=${experimentVersion}
          onInspect=${inspect} onChanged=${() => setListVersion((v) => v + 1)} /></div>` : null}
      </div>
    </div>
  </div>`;
}
