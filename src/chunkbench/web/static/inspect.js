// Retrieval Inspect (issue 6, item 4; issue 16): a full-page view of one question under one configuration or several
// side by side: the retrieved chunks in rank order with the evidence marked (and contextual_retrieval's prefixes),
// where the evidence lies and at what rank it came (a miss explained), the Expansion Tree; the question list can be
// cut to the failures. Mounted by the Benchmarks tab.
import { html, useEffect, useRef, useState, ErrorBox, Spinner, fmt, fmtInt, ms } from "./ui.js";
import { useMemo } from "./vendor/htm-preact-standalone.module.js";
import { api } from "./api.js";
import { Term } from "./glossary.js";
import { useRouteParam } from "./router.js";

const clip = (text, size = 140) => (text && text.length > size ? `${text.slice(0, size)}…` : text || "");

// Pieces of text with the evidence ranges (document offsets) inside [start, start + text.length) marked.
function highlight(text, start, ranges) {
  const end = start + text.length;
  const spans = ranges.map(([s, e]) => [Math.max(s, start), Math.min(e, end)]).filter(([s, e]) => s < e)
    .sort((a, b) => a[0] - b[0]);
  const parts = [];
  let pos = start;
  for (let [s, e] of spans) {
    s = Math.max(s, pos);
    if (e <= s) continue;
    if (s > pos) parts.push(text.slice(pos - start, s - start));
    parts.push(html`<mark class="evidence">${text.slice(s - start, e - start)}</mark>`);
    pos = e;
  }
  if (pos < end) parts.push(text.slice(pos - start));
  return parts;
}

// The context in rank order: hits first (the Expansion Tree keeps the ranking; with Neighbor Expansion the
// cell's flat list is in document order), then the neighbours it added.
function rankOrder(cell) {
  const retrieved = cell.retrieved || [];
  const hits = retrieved.filter((chunk) => chunk.role === "hit");
  // Older cells' tree nodes name no document: in a corpus, chunk n of two documents is told apart by its score.
  const rankKey = (chunk) => `${chunk.chunk_index}\u0000${chunk.score}`;
  const ranked = (cell.expansion_tree || []).map(rankKey);
  if (ranked.length) hits.sort((a, b) => ranked.indexOf(rankKey(a)) - ranked.indexOf(rankKey(b)));
  return [...hits, ...retrieved.filter((chunk) => chunk.role !== "hit")];
}

const overlaps = (start, end, ranges) => ranges.some(([s, e]) => s < end && start < e);

// The Expansion Tree of a cell: one node per hit in rank order, each with the chunks of its window drawn under it
// (the server puts each chunk under one hit only). A hit in another hit's window is listed there as a reference to
// its own node (its rank, no text); cells stored before that say "hit" with the text and no rank: the rank is
// looked up among the nodes.
const treeKey = (node) => `${node.document_id || ""}\u0000${node.chunk_index}`;

function ExpansionTree({ tree, rangesOf }) {
  const rankOf = new Map(tree.map((node, i) => [treeKey(node), node.rank ?? i + 1]));
  return html`<ul class="tree inspect-tree" style="padding-left: 0">
    ${tree.map((node) => html`<${TreeHit} key=${treeKey(node)} node=${node} rankOf=${rankOf} rangesOf=${rangesOf} />`)}
  </ul>`;
}

const isEvidence = (node, rangesOf) => node.start_index !== null && node.start_index !== undefined
  && overlaps(node.start_index, node.end_index, rangesOf(node));

function TreeHit({ node, rankOf, rangesOf }) {
  const rank = rankOf.get(treeKey(node));
  return html`<li data-role="hit" aria-label=${`hit #${rank}, chunk #${node.chunk_index}`}>
    <span class="badge accent">hit #${rank}</span> chunk #${node.chunk_index}
    ${node.score !== null && node.score !== undefined ? html` · score ${fmt(node.score)}` : null}
    ${isEvidence(node, rangesOf) ? html` <span class="badge good">evidence</span>` : null}
    ${node.text ? html`<div class="mono muted">${clip(node.text, 160)}</div>` : null}
    ${node.neighbors_prev?.length || node.neighbors_next?.length ? html`<ul class="tree">
      ${(node.neighbors_prev || []).map((n) => html`<${TreeNeighbour} key=${treeKey(n)} node=${n} side="before"
        rankOf=${rankOf} rangesOf=${rangesOf} />`)}
      ${(node.neighbors_next || []).map((n) => html`<${TreeNeighbour} key=${treeKey(n)} node=${n} side="after"
        rankOf=${rankOf} rangesOf=${rangesOf} />`)}
    </ul>` : null}
  </li>`;
}

function TreeNeighbour({ node, side, rankOf, rangesOf }) {
  const hitRank = node.role === "hit" ? node.rank ?? rankOf.get(treeKey(node)) : null;
  return html`<li data-role=${node.role}
    aria-label=${`${side}: ${hitRank ? `hit #${hitRank}` : "neighbour"}, chunk #${node.chunk_index}`}>
    <span class="badge">${side}</span>${" "}
    ${hitRank ? html`<span class="badge accent">hit #${hitRank}</span>` : html`<span class="muted">neighbour</span>`}
    ${" "}chunk #${node.chunk_index}
    ${isEvidence(node, rangesOf) ? html` <span class="badge good">evidence</span>` : null}
    ${hitRank ? html` <span class="muted">· its own node is hit #${hitRank}</span>`
      : node.text ? html`<div class="mono muted">${clip(node.text, 160)}</div>` : null}
  </li>`;
}

// ``items``: the questions shown, as {question, index} (index in the Experiment's list); ``index``: the one open.
function QuestionRail({ items, index, onPick, valueOf }) {
  const list = useRef(null);
  useEffect(() => {
    list.current?.querySelector(`[data-index="${index}"]`)?.scrollIntoView({ block: "nearest" });
  }, [index]);
  const position = items.findIndex((item) => item.index === index);
  const onKey = (event) => {
    const target = { ArrowDown: position + 1, ArrowUp: position - 1, Home: 0, End: items.length - 1 }[event.key];
    if (target === undefined || !items.length) return;
    event.preventDefault();
    onPick(items[Math.max(0, Math.min(items.length - 1, target))].index);
  };
  return html`<div ref=${list} class="scroll" role="listbox" tabindex="0" aria-label="Questions (up and down keys)"
    aria-activedescendant=${position >= 0 ? `inspect-q-${index}` : undefined} onKeyDown=${onKey}
    style="max-height: 75vh">
    ${items.map(({ question: q, index: i }) => html`<div key=${q.id} id=${`inspect-q-${i}`} data-index=${i}
      role="option" aria-selected=${i === index} onClick=${() => onPick(i)}
      style=${`padding: 0.35rem 0.5rem; cursor: pointer; border-radius: 6px;${i === index
        ? " background: rgba(245, 165, 36, 0.16); outline: 1px solid var(--accent-dim);" : ""}`}>
      <div><span class="mono">${q.id}</span> <span class="muted" style="float: right">${valueOf(q)}</span></div>
      <div class="muted">${clip(q.question, 70)}</div>
    </div>`)}
  </div>`;
}

// The markdown of the documents ``ids`` (a corpus Experiment's chunks come from several), each fetched once:
// {texts: Map id → text, loading, error}.
function useMarkdowns(ids) {
  const [texts, setTexts] = useState(() => new Map());
  const [state, setState] = useState({ loading: false, error: null });
  const wanted = ids.filter(Boolean).join(",");
  useEffect(() => {
    const missing = wanted ? wanted.split(",").filter((id) => !texts.has(id)) : [];
    if (!missing.length) return undefined;
    let live = true;
    setState({ loading: true, error: null });
    Promise.all(missing.map((id) => api(`/documents/${encodeURIComponent(id)}/markdown`).then((text) => [id, text])))
      .then((entries) => {
        if (!live) return;
        setTexts((map) => new Map([...map, ...entries]));
        setState({ loading: false, error: null });
      }, (error) => live && setState({ loading: false, error }));
    return () => { live = false; };
  }, [wanted]);
  return { texts, ...state };
}

// Which questions the rail lists: a question is a failure when it failed, or missed, under any configuration shown.
const FILTERS = {
  all: ["all questions", () => true],
  recall: ["recall below 1", (cell) => cell.status !== "ok" || (typeof cell.metrics?.recall === "number"
    && cell.metrics.recall < 1)],
  hit: ["hit@k 0 (no evidence in the hits)", (cell) => cell.status !== "ok" || cell.metrics?.hit_at_k === 0],
};

const cellKey = (questionId, configKey) => `${questionId}\u0000${configKey}`;

// contextual_retrieval's prefix_mode for a configuration's chunks of one document, from the runs the Experiment
// recorded (one run: ``details``; several documents or Corpus models: each run's own).
function prefixMode(experiment, configuration, documentId) {
  const run = experiment.provenance?.strategy_runs?.[configuration.strategy];
  if (!run?.runs) return run?.details?.prefix_mode || null;
  const model = configuration.corpus_model || experiment.config.corpus_model_id;
  const mine = run.runs.find((r) => r.document_id === documentId && (!r.corpus_model || r.corpus_model === model));
  return mine?.details?.prefix_mode || null;
}

/** ``fmtMetric``: the tab's number format per metric; ``title``: what the Experiment searched. */
export function RetrievalInspect({ experiment, onClose, fmtMetric, title }) {
  // 100 questions × 5 strategies = 500 cells: index them once, render only the open question's cells.
  const cells = useMemo(() => {
    const index = new Map();
    for (const cell of experiment.cells) index.set(cellKey(cell.question_id, cell.config_key), cell);
    return index;
  }, [experiment]);
  const decision = experiment.decision || {};
  const metric = decision.metric || experiment.config.primary_metric;
  const configurations = new Map(experiment.configurations.map((c) => [c.key, c]));
  const keys = [...configurations.keys()];
  // The view's state lives in the URL (…/config/KEY/compare/K1,K2/filter/hit): a reload, or the link shared, opens
  // the same configuration, side by side with the same others, the rail cut the same way. A value the Experiment
  // does not have (a stale link) falls back to the default.
  const [configParam, setConfigParam] = useRouteParam("benchmarks", "config");
  const [compareParam, setCompareParam] = useRouteParam("benchmarks", "compare");
  const [filterParam, setFilterParam] = useRouteParam("benchmarks", "filter");
  const configKey = configurations.has(configParam) ? configParam : decision.best || decision.leader || keys[0];
  const setConfigKey = (key) => setConfigParam(key, { replace: true });
  const compared = new Set((compareParam || "").split(",").filter((key) => configurations.has(key)));
  const filter = Object.hasOwn(FILTERS, filterParam || "") ? filterParam : "all";
  const setFilter = (value) => setFilterParam(value === "all" ? null : value, { replace: true });
  const shown = [configKey, ...keys.filter((k) => k !== configKey && compared.has(k))];
  const questions = experiment.questions;
  // Deep link: #benchmarks/…/question/ID opens that question; stepping through questions replaces the entry.
  const [questionId, setQuestionId] = useRouteParam("benchmarks", "question");
  const index = Math.max(0, questions.findIndex((q) => q.id === questionId));
  const setIndex = (i) => setQuestionId(questions[i]?.id ?? null, { replace: true });
  const matches = FILTERS[filter][1];
  const items = questions.map((question, i) => ({ question, index: i })).filter(({ question }) => filter === "all"
    || shown.some((key) => { const c = cells.get(cellKey(question.id, key)); return c && matches(c); }));
  // A filter that leaves the open question out opens the first it lists.
  useEffect(() => {
    if (items.length && !items.some((item) => item.index === index)) setIndex(items[0].index);
  }, [filter, configKey, compareParam]);
  const question = questions[index];
  // A one-document Experiment's chunks and evidence carry no document id: they are all the Experiment's document's.
  const docOf = (item) => item.document_id || experiment.document.id;
  const open = question ? shown.map((key) => cells.get(cellKey(question.id, key))).filter(Boolean) : [];
  const markdown = useMarkdowns([...new Set(open.flatMap((cell) => [...(cell.retrieved || []),
    ...(cell.evidence?.chunks || [])].map(docOf)))]);
  const valueOf = (q) => {
    const c = cells.get(cellKey(q.id, configKey));
    if (!c) return "—";
    return c.status === "ok" ? fmtMetric(metric, c.metrics?.[metric]) : c.status;
  };
  const toggle = (key) => {
    const next = new Set(compared);
    next.has(key) ? next.delete(key) : next.add(key);
    // In the Experiment's order, so one view has one URL whatever order the boxes were ticked in.
    setCompareParam(keys.filter((k) => next.has(k)).join(",") || null, { replace: true });
  };
  const context = {
    experiment, question, markdown, docOf, fmtMetric, winner: decision.best,
    sourceKeys: new Map((experiment.corpus?.documents || []).map((d) => [d.id, d.source_key || d.filename])),
    rangesIn: (documentId) => (question?.references || [])
      .filter((r) => r.start_index !== null && r.start_index !== undefined && docOf(r) === documentId)
      .map((r) => [r.start_index, r.end_index]),
  };
  return html`<section class="stack" aria-label="Retrieval Inspect"
    onKeyDown=${(e) => e.key === "Escape" && onClose()}>
    <div class="panel stack">
      <div class="row" style="justify-content: space-between">
        <div class="row">
          <button class="secondary" onClick=${onClose}>← Back to the Experiment</button>
          <h2 style="margin: 0">Retrieval Inspect · ${title}</h2>
        </div>
        <div class="row">
          <label>Configuration
            <select value=${configKey} onChange=${(e) => setConfigKey(e.target.value)}>
              ${keys.map((k) => html`<option key=${k} value=${k}>${k}${k === decision.best ? " (winner)" : ""}</option>`)}
            </select></label>
          <label>Show
            <select value=${filter} onChange=${(e) => setFilter(e.target.value)}>
              ${Object.entries(FILTERS).map(([value, [text]]) => html`<option key=${value} value=${value}>${text}</option>`)}
            </select></label>
        </div>
      </div>
      ${keys.length > 1 ? html`<fieldset><legend>Side by side with</legend><div class="checks">
        ${keys.filter((k) => k !== configKey).map((k) => html`<label key=${k}>
          <input type="checkbox" checked=${compared.has(k)} onChange=${() => toggle(k)} />${k}</label>`)}
      </div></fieldset>` : null}
    </div>
    <${ErrorBox} error=${markdown.error} />
    <div class="bench-inspect">
      <div class="panel"><h3>Questions · <${Term} name=${metric} /></h3>
        <div class="muted" role="status">${filter === "all" ? `${fmtInt(questions.length)} questions`
          : `${fmtInt(items.length)} of ${fmtInt(questions.length)} questions: ${FILTERS[filter][0]}`}</div>
        <${QuestionRail} items=${items} index=${index} onPick=${setIndex} valueOf=${valueOf} /></div>
      <div class="stack">
        ${question ? html`<div class="panel stack">
          <h3>${question.id} · question ${index + 1} of ${questions.length}</h3>
          <p style="margin: 0; font-size: 15px">${question.question}</p>
          <section aria-label="Expected answer"><h3>Expected</h3>
            ${question.expected_answer ? html`<div>${question.expected_answer}</div>`
              : html`<div class="muted">no expected answer</div>`}
            <div class="muted">${(question.references || []).filter((r) => r.start_index !== null
              && r.start_index !== undefined).length} evidence span(s)</div></section>
        </div>` : html`<div class="panel muted">This Experiment has no questions.</div>`}
        ${question && !items.length ? html`<div class="notice">No question matches “${FILTERS[filter][0]}” under
          ${shown.join(", ")}.</div>` : null}
        ${question ? html`<div class=${shown.length > 1 ? "inspect-columns" : "stack"}>
          ${shown.map((key) => html`<${CellColumn} key=${key} configuration=${configurations.get(key)}
            cell=${cells.get(cellKey(question.id, key))} side=${shown.length > 1} ...${context} />`)}
        </div>` : null}
      </div>
    </div>
  </section>`;
}

// One question under one configuration: the answer and metrics, where the evidence lies, the retrieved chunks and
// the Expansion Tree. ``side``: drawn beside others (the configuration names its region).
function CellColumn({ configuration, cell, side, experiment, question, markdown, docOf, rangesIn, sourceKeys,
  fmtMetric, winner }) {
  const key = configuration.key;
  const metrics = Object.entries(cell?.metrics || {}).filter(([, v]) => v !== null && v !== undefined);
  const textOf = (chunk) => {
    const text = markdown.texts.get(docOf(chunk));
    return typeof text === "string" && chunk.start_index !== null ? text.slice(chunk.start_index, chunk.end_index)
      : null;
  };
  let rank = 0;
  return html`<div class="stack" role=${side ? "region" : undefined} aria-label=${side ? key : undefined}>
    <div class="panel stack">
      <h3 class="mono">${key}${key === winner ? html` <span class="badge good">winner</span>` : null}</h3>
      ${!cell ? html`<div class="notice">This question has not been run with ${key} yet.</div>` : null}
      ${cell ? html`<section aria-label="Generated answer"><h3>Generated</h3>
        ${cell.answer ? html`<div>${cell.answer}</div>` : html`<div class="muted">no answer</div>`}
        <div class="muted">${cell.answer_mode || ""}</div></section>` : null}
      ${cell?.error ? html`<div class="error">${cell.error}</div>` : null}
      ${metrics.length ? html`<dl class="kv" aria-label="Cell metrics">
        ${metrics.map(([k, v]) => html`<dt><${Term} name=${k} /></dt><dd>${fmtMetric(k, v)}</dd>`)}
        <dt>latency</dt><dd>${ms(cell.latency_ms?.total)}</dd>
      </dl>` : null}
      ${cell?.judge ? html`<details><summary>Judge's reasoning</summary>
        <div>${cell.judge.reasoning || cell.judge.error || "—"}</div></details>` : null}
    </div>
    ${cell?.status === "ok" ? html`<${EvidencePanel} cell=${cell} configuration=${configuration} question=${question}
      docOf=${docOf} rangesIn=${rangesIn} textOf=${textOf} sourceKeys=${sourceKeys} />` : null}
    ${cell ? html`<section class="panel stack" aria-label="Retrieved chunks">
      <h3>Retrieved chunks (rank order)</h3>
      ${markdown.loading ? html`<${Spinner} label="Loading the document…" />` : null}
      ${!cell.retrieved?.length ? html`<div class="muted">Nothing was retrieved.</div>` : null}
      ${rankOrder(cell).map((chunk) => {
        const isHit = chunk.role === "hit";
        if (isHit) rank += 1;
        const chunkRanges = rangesIn(docOf(chunk));
        const body = textOf(chunk);
        const evidence = chunk.start_index !== null && overlaps(chunk.start_index, chunk.end_index, chunkRanges);
        const mode = chunk.prefix ? prefixMode(experiment, configuration, docOf(chunk)) : null;
        return html`<article key=${`${chunk.role}-${docOf(chunk)}-${chunk.chunk_index}`}
          aria-label=${`${isHit ? `rank ${rank}` : chunk.role}, chunk #${chunk.chunk_index}`}
          style="border-top: 1px solid var(--line); padding-top: 0.5rem">
          <div class="row" style="align-items: center">
            <strong>${isHit ? `#${rank}` : chunk.role}</strong> <span class="muted">chunk #${chunk.chunk_index}</span>
            ${chunk.document_id ? html`<span class="mono">${sourceKeys.get(chunk.document_id) || chunk.document_id}</span>`
              : null}
            ${chunk.score !== null && chunk.score !== undefined ? html`<span>score ${fmt(chunk.score)}</span>` : null}
            <span class="muted">${fmtInt(chunk.tokens)} tokens · ${chunk.start_index}–${chunk.end_index}</span>
            ${evidence ? html`<span class="badge good">evidence</span>` : null}
          </div>
          ${chunk.prefix ? html`<div class="inspect-prefix" aria-label="Context prefix">
            <span class="badge accent" title="contextual_retrieval embeds this prefix in front of the chunk's text">
              prefix${mode ? ` · ${mode}` : ""}</span> <span dir="auto">${chunk.prefix}</span></div>` : null}
          ${body !== null ? html`<div class="doc-text">${highlight(body, chunk.start_index, chunkRanges)}</div>` : null}
        </article>`;
      })}
    </section>
    <section class="panel" aria-label="Expansion Tree"><h3>Expansion Tree</h3>
      ${cell.expansion_tree?.length ? html`<${ExpansionTree} tree=${cell.expansion_tree}
        rangesOf=${(node) => rangesIn(docOf(node))} />`
        : html`<div class="muted">No Neighbor Expansion in this configuration (it applies to fixed_size with
          neighbors before or after).</div>`}
    </section>` : null}
  </div>`;
}

// Where the evidence lies (the chunks of this configuration's chunking that overlap it) and what became of each:
// its rank in the cell's whole ranking, and whether it reached the context (a hit, or a Neighbor Expansion
// neighbour). A chunk that did not reach the context is shown with the evidence marked in it.
function EvidencePanel({ cell, configuration, question, docOf, rangesIn, textOf, sourceKeys }) {
  const evidence = cell.evidence;
  const spans = (question.references || []).filter((r) => r.start_index !== null && r.start_index !== undefined);
  const missed = cell.metrics?.hit_at_k === 0;
  const heading = html`<h3>Where the evidence is${missed ? html` <span class="badge bad">miss</span>` : null}</h3>`;
  if (!spans.length) {
    return html`<section class="panel" aria-label="Where the evidence is">${heading}
      <div class="muted">This question has no evidence span.</div></section>`;
  }
  if (!evidence) {
    return html`<section class="panel" aria-label="Where the evidence is">${heading}
      <div class="muted">This cell was recorded before chunkbench kept where the evidence lies: run the benchmark again
        to see it.</div></section>`;
  }
  const inContext = new Map((cell.retrieved || []).map((c) => [`${docOf(c)}\u0000${c.chunk_index}`, c.role]));
  const rankText = (chunk) => {
    if (chunk.rank !== null && chunk.rank !== undefined) {
      return chunk.rank <= configuration.top_k ? `#${chunk.rank} (a hit)`
        : `#${chunk.rank}, below the top ${configuration.top_k}`;
    }
    if (!evidence.ranked) return "not ranked: the retriever returned nothing for this question";
    return evidence.ranked < evidence.depth ? `not ranked: the retriever ranked only ${evidence.ranked} chunks`
      : `not in the top ${evidence.depth}`;
  };
  const reached = evidence.chunks.filter((c) => inContext.has(`${docOf(c)}\u0000${c.chunk_index}`)).length;
  return html`<section class="panel stack" aria-label="Where the evidence is">${heading}
    <div role="status">${`${evidence.chunks.length} chunk${evidence.chunks.length === 1 ? "" : "s"} of ${
      configuration.strategy} hold${evidence.chunks.length === 1 ? "s" : ""} the evidence; ${
      reached ? `${reached} reached the context` : "none reached the context"}.`}</div>
    <div class="scroll-x"><table class="data" aria-label="Evidence chunks">
      <thead><tr><th>chunk</th>${evidence.chunks.some((c) => c.document_id) ? html`<th>document</th>` : null}
        <th>characters</th><th>rank</th><th>in the context</th></tr></thead>
      <tbody>${evidence.chunks.map((chunk) => {
        const role = inContext.get(`${docOf(chunk)}\u0000${chunk.chunk_index}`);
        return html`<tr key=${`${docOf(chunk)}-${chunk.chunk_index}`}>
          <td>#${chunk.chunk_index}</td>
          ${evidence.chunks.some((c) => c.document_id) ? html`<td class="mono">${sourceKeys.get(chunk.document_id)
            || chunk.document_id}</td>` : null}
          <td class="num">${chunk.start_index}–${chunk.end_index}</td>
          <td>${rankText(chunk)}</td>
          <td>${role === "hit" ? "yes, a hit" : role ? "yes, a Neighbor Expansion neighbour"
            : html`<span class="badge bad">no</span>`}</td></tr>`;
      })}</tbody></table></div>
    ${evidence.chunks.filter((c) => !inContext.has(`${docOf(c)}\u0000${c.chunk_index}`)).map((chunk) => {
      const body = textOf(chunk);
      return body === null ? null : html`<article key=${`missed-${docOf(chunk)}-${chunk.chunk_index}`}
        aria-label=${`missed chunk #${chunk.chunk_index}`} class="inspect-missed">
        <div class="muted">chunk #${chunk.chunk_index}, not in the context:</div>
        <div class="doc-text">${highlight(body, chunk.start_index, rangesIn(docOf(chunk)))}</div></article>`;
    })}
  </section>`;
}
