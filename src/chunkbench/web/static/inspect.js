// Retrieval Inspect (issue 6, item 4; issue 16): a full-page view of one question × configuration at a time, with the
// retrieved chunks in rank order, the evidence marked in them, and the Expansion Tree. Mounted by the Benchmarks tab.
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
  // A tree node names no document: in a corpus, chunk n of two documents is told apart by its (rounded) score.
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

function QuestionRail({ questions, index, onPick, valueOf }) {
  const list = useRef(null);
  useEffect(() => {
    list.current?.querySelector(`[data-index="${index}"]`)?.scrollIntoView({ block: "nearest" });
  }, [index]);
  const onKey = (event) => {
    const target = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: questions.length - 1 }[event.key];
    if (target === undefined) return;
    event.preventDefault();
    onPick(Math.max(0, Math.min(questions.length - 1, target)));
  };
  return html`<div ref=${list} class="scroll" role="listbox" tabindex="0" aria-label="Questions (up and down keys)"
    aria-activedescendant=${`inspect-q-${index}`} onKeyDown=${onKey} style="max-height: 75vh">
    ${questions.map((q, i) => html`<div key=${q.id} id=${`inspect-q-${i}`} data-index=${i} role="option"
      aria-selected=${i === index} onClick=${() => onPick(i)}
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

/** ``fmtMetric``: the tab's number format per metric; ``title``: what the Experiment searched. */
export function RetrievalInspect({ experiment, onClose, fmtMetric, title }) {
  // 100 questions × 5 strategies = 500 cells: index them once, render only the selected question's cell.
  const cells = useMemo(() => {
    const index = new Map();
    for (const cell of experiment.cells) index.set(`${cell.question_id}\u0000${cell.config_key}`, cell);
    return index;
  }, [experiment]);
  const decision = experiment.decision || {};
  const metric = decision.metric || experiment.config.primary_metric;
  const keys = experiment.configurations.map((c) => c.key);
  const [configKey, setConfigKey] = useState(decision.best || decision.leader || keys[0]);
  const questions = experiment.questions;
  // Deep link: #benchmarks/…/question/ID opens that question; stepping through questions replaces the entry.
  const [questionId, setQuestionId] = useRouteParam("benchmarks", "question");
  const index = Math.max(0, questions.findIndex((q) => q.id === questionId));
  const setIndex = (i) => setQuestionId(questions[i]?.id ?? null, { replace: true });
  const question = questions[index];
  const cell = question && cells.get(`${question.id}\u0000${configKey}`);
  // A one-document Experiment's chunks and evidence carry no document id: they are all the Experiment's document's.
  const docOf = (item) => item.document_id || experiment.document.id;
  const markdown = useMarkdowns([...new Set((cell?.retrieved || []).map(docOf))]);
  const sourceKeys = new Map((experiment.corpus?.documents || []).map((d) => [d.id, d.source_key || d.filename]));
  const rangesIn = (documentId) => (question?.references || [])
    .filter((r) => r.start_index !== null && r.start_index !== undefined && docOf(r) === documentId)
    .map((r) => [r.start_index, r.end_index]);
  const valueOf = (q) => {
    const c = cells.get(`${q.id}\u0000${configKey}`);
    if (!c) return "—";
    return c.status === "ok" ? fmtMetric(metric, c.metrics?.[metric]) : c.status;
  };
  const metrics = Object.entries(cell?.metrics || {}).filter(([, v]) => v !== null && v !== undefined);
  let rank = 0;
  return html`<section class="stack" aria-label="Retrieval Inspect"
    onKeyDown=${(e) => e.key === "Escape" && onClose()}>
    <div class="panel row" style="justify-content: space-between">
      <div class="row">
        <button class="secondary" onClick=${onClose}>← Back to the Experiment</button>
        <h2 style="margin: 0">Retrieval Inspect · ${title}</h2>
      </div>
      <label class="row" style="align-items: center">Configuration
        <select value=${configKey} onChange=${(e) => setConfigKey(e.target.value)}>
          ${keys.map((k) => html`<option key=${k} value=${k}>${k}${k === decision.best ? " (winner)" : ""}</option>`)}
        </select></label>
    </div>
    <${ErrorBox} error=${markdown.error} />
    <div class="bench-inspect">
      <div class="panel"><h3>Questions · <${Term} name=${metric} /></h3>
        <${QuestionRail} questions=${questions} index=${index} onPick=${setIndex} valueOf=${valueOf} /></div>
      <div class="stack">
        ${question ? html`<div class="panel stack">
          <h3>${question.id} · question ${index + 1} of ${questions.length}</h3>
          <p style="margin: 0; font-size: 15px">${question.question}</p>
          <div class="bench-pair">
            <section aria-label="Generated answer"><h3>Generated</h3>
              ${cell?.answer ? html`<div>${cell.answer}</div>` : html`<div class="muted">no answer</div>`}
              ${cell ? html`<div class="muted">${cell.answer_mode || ""}</div>` : null}</section>
            <section aria-label="Expected answer"><h3>Expected</h3>
              ${question.expected_answer ? html`<div>${question.expected_answer}</div>`
                : html`<div class="muted">no expected answer</div>`}
              <div class="muted">${(question.references || []).filter((r) => r.start_index !== null
                && r.start_index !== undefined).length} evidence span(s)</div></section>
          </div>
          ${!cell ? html`<div class="notice">This question has not been run with ${configKey} yet.</div>` : null}
          ${cell?.error ? html`<div class="error">${cell.error}</div>` : null}
          ${metrics.length ? html`<dl class="kv" aria-label="Cell metrics">
            ${metrics.map(([k, v]) => html`<dt><${Term} name=${k} /></dt><dd>${fmtMetric(k, v)}</dd>`)}
            <dt>latency</dt><dd>${ms(cell.latency_ms?.total)}</dd>
          </dl>` : null}
          ${cell?.judge ? html`<details><summary>Judge's reasoning</summary>
            <div>${cell.judge.reasoning || cell.judge.error || "—"}</div></details>` : null}
        </div>` : html`<div class="panel muted">This Experiment has no questions.</div>`}
        ${cell ? html`<section class="panel stack" aria-label="Retrieved chunks">
          <h3>Retrieved chunks (rank order)</h3>
          ${markdown.loading ? html`<${Spinner} label="Loading the document…" />` : null}
          ${rankOrder(cell).map((chunk) => {
            const isHit = chunk.role === "hit";
            if (isHit) rank += 1;
            const text = markdown.texts.get(docOf(chunk));
            const chunkRanges = rangesIn(docOf(chunk));
            const body = typeof text === "string" && chunk.start_index !== null
              ? text.slice(chunk.start_index, chunk.end_index) : null;
            const evidence = chunk.start_index !== null && overlaps(chunk.start_index, chunk.end_index, chunkRanges);
            return html`<article key=${`${chunk.role}-${chunk.chunk_index}`}
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
      </div>
    </div>
  </section>`;
}
