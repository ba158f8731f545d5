// Query: ask one processed document a question with chosen retrieval knobs, and see how the answer was reached —
// the answer with its [Source n] citations, the sources, the Expansion Tree, latency per stage, tokens, history.
import { html, useEffect, useState, useRef, ErrorBox, Spinner, fmt, ms, useApi, usePager, LIMITS } from "../ui.js";
import { api, expandsNeighbours, strategyCatalog } from "../api.js";
import { on } from "../bus.js";
import { Unavailable, rerankers, useCapabilities } from "../capabilities.js";
import { Term } from "../glossary.js";
import { setParams, useRouteParam } from "../router.js";

const STRATEGY_ORDER = ["fixed_size", "recursive", "semantic", "contextual_retrieval", "semantic_parent_child"];
const RETRIEVERS = [["dense", "dense (MiniLM cosine)"], ["bm25", "bm25 (sparse)"], ["hybrid", "hybrid (RRF)"]];
const STAGES = ["embed", "search", "rerank", "expand", "generate"];
const SOURCES_PER_PAGE = 10;

// The document another tab asks about becomes this tab's (its URL's) document, even before this tab first mounts.
on("select-document", (detail) => { if (detail?.id) setParams("query", { doc: detail.id }); });

const processedStrategies = (doc) => {
  const counts = doc?.chunk_counts || {};
  const names = Object.keys(counts).filter((name) => counts[name] > 0);
  const rank = (name) => (STRATEGY_ORDER.includes(name) ? STRATEGY_ORDER.indexOf(name) : STRATEGY_ORDER.length);
  return names.sort((a, b) => rank(a) - rank(b));
};

const when = (iso) => (iso ? new Date(iso.endsWith("Z") || iso.includes("+") ? iso : `${iso}Z`).toLocaleString() : "");

export function QueryTab({ active, openTab }) {
  const documents = useApi(() => api("/documents", { query: { limit: 1000 } }), []);
  const [documentId, setDocumentId] = useRouteParam("query", "doc"); // #query/doc/ID
  const [strategy, setStrategy] = useState("");
  const [retriever, setRetriever] = useState("dense");
  const [topK, setTopK] = useState(5);
  const [prev, setPrev] = useState(0);
  const [next, setNext] = useState(0);
  const [rerank, setRerank] = useState("none");
  const [question, setQuestion] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [result, setResult] = useState(null);
  const [historyTick, setHistoryTick] = useState(0);

  // Coming back to the tab: documents may have been uploaded or processed meanwhile.
  // What can run (rerankers) may have changed too: an LLM started, a cross-encoder configured.
  const capabilities = useCapabilities();
  const wasActive = useRef(active);
  useEffect(() => {
    if (active && !wasActive.current) { documents.reload(); capabilities.reload(); }
    wasActive.current = active;
  }, [active]);
  useEffect(() => on("select-document", (detail) => { if (detail?.id) documents.reload(); }), []);
  const rerankOptions = rerankers(capabilities);
  // An option that cannot work is never the one asked with.
  useEffect(() => {
    if (capabilities.data && !rerankOptions.find(([value]) => value === rerank)?.[2]) setRerank("none");
  }, [capabilities.data]);

  const items = documents.data?.items || [];
  const processed = items.filter((doc) => processedStrategies(doc).length > 0);
  // The wanted document while it is known and processed; else (once the list is fresh) the first processed one.
  const wanted = processed.find((d) => d.id === documentId);
  const doc = wanted || (documents.loading ? null : processed[0] || null);
  const waiting = Boolean(documentId && !wanted && documents.loading);
  const unprocessed = documentId && !wanted && !documents.loading ? items.find((d) => d.id === documentId) : null;
  const strategies = processedStrategies(doc);
  // Keep the strategy valid for the document: its first processed one unless the current one is processed.
  useEffect(() => {
    if (strategies.length && !strategies.includes(strategy)) setStrategy(strategies[0]);
  }, [doc?.id, strategies.join(",")]);

  const catalog = useApi(() => strategyCatalog(), []);
  const neighbours = expandsNeighbours(catalog.data, strategy);
  const ask = async (event) => {
    event?.preventDefault();
    if (!doc || !strategy || !question.trim() || busy) return;
    setBusy(true);
    setError(null);
    try {
      const body = await api("/queries", {
        method: "POST",
        json: {
          document_id: doc.id, strategy, question: question.trim(), retriever, rerank, top_k: Number(topK),
          neighbor_prev: neighbours ? Number(prev) : 0, neighbor_next: neighbours ? Number(next) : 0,
        },
      });
      setResult(body);
      setHistoryTick((t) => t + 1);
    } catch (err) {
      setError(err);
      setResult(null); // the previous answer is not this question's: it must not stand beside the error
    } finally {
      setBusy(false);
    }
  };
  const onKeyDown = (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) ask(event);
  };

  return html`
    <div class="grid two">
      <div class="stack">
        <form class="panel stack" onSubmit=${ask} aria-label="Ask a question">
          <h2>Ask a document</h2>
          <${ErrorBox} error=${documents.error} />
          ${documents.loading && !documents.data ? html`<${Spinner} label="Loading documents…" />` : null}
          ${documents.data && !processed.length ? html`<div class="notice">No processed document yet: upload one and
            process it in <button type="button" class="link" onClick=${() => openTab("documents")}>Documents</button>.
            </div>` : null}
          ${waiting ? html`<${Spinner} label="Loading the selected document…" />` : null}
          ${unprocessed ? html`<div class="notice">${unprocessed.filename} is not processed yet (${unprocessed.status}):
            process it in <button type="button" class="link" onClick=${() => openTab("documents")}>Documents</button>
            to ask it questions.</div>` : null}
          <div class="row">
            <label>Document
              <select value=${doc?.id || ""} onChange=${(e) => setDocumentId(e.target.value)} disabled=${!processed.length}
                data-testid="query-document">
                ${processed.map((d) => html`<option value=${d.id}>${d.filename}</option>`)}
              </select>
            </label>
            <label>Strategy
              <select value=${strategy} onChange=${(e) => setStrategy(e.target.value)} disabled=${!strategies.length}>
                ${strategies.map((name) => html`<option value=${name}>${name} (${doc.chunk_counts[name]} chunks)</option>`)}
              </select>
            </label>
          </div>
          <div class="row">
            <label><${Term} name="retriever">Retriever</${Term}>
              <select value=${retriever} onChange=${(e) => setRetriever(e.target.value)}>
                ${RETRIEVERS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
              </select>
            </label>
            <label><${Term} name="top_k" />
              <input type="number" min="1" max=${LIMITS.max_top_k} value=${topK} onInput=${(e) => setTopK(e.target.value)} required />
            </label>
            <label><${Term} name="rerank">Rerank</${Term}>
              <select value=${rerank} onChange=${(e) => setRerank(e.target.value)}>
                ${rerankOptions.map(([value, label, ok, capability]) => html`<option value=${value} disabled=${!ok}
                  title=${capability?.detail || ""}>${label}${ok ? "" : " (not available)"}</option>`)}
              </select>
            </label>
          </div>
          <${Unavailable} items=${rerankOptions.filter(([value]) => value !== "none")
            .map(([, label, , capability]) => [`${label[0].toUpperCase()}${label.slice(1)} reranking`, capability])} />
          <fieldset disabled=${!neighbours}>
            <legend><${Term} name="neighbor_expansion" /></legend>
            <div class="row">
              <label>Neighbours before
                <input type="number" min="0" max=${LIMITS.max_neighbors} value=${neighbours ? prev : 0} onInput=${(e) => setPrev(e.target.value)} />
              </label>
              <label>Neighbours after
                <input type="number" min="0" max=${LIMITS.max_neighbors} value=${neighbours ? next : 0} onInput=${(e) => setNext(e.target.value)} />
              </label>
            </div>
            <p class="muted small">${neighbours
              ? "Each hit brings the chunks just before and after it (shown as neighbours in the Expansion Tree)."
              : "Neighbor Expansion applies to fixed_size only: choose that strategy to add neighbours."}</p>
          </fieldset>
          <label class="field">Question
            <textarea value=${question} onInput=${(e) => setQuestion(e.target.value)} onKeyDown=${onKeyDown}
              maxlength=${LIMITS.max_question_chars} placeholder="What would you like to know? (Ctrl+Enter asks)"></textarea>
          </label>
          <div class="row">
            <button class="primary" type="submit" disabled=${busy || !doc || !question.trim()}>
              ${busy ? "Asking…" : "Ask"}</button>
            ${busy ? html`<${Spinner} label="Retrieving and answering…" />` : html`<span class="muted">Ctrl+Enter</span>`}
          </div>
          <${ErrorBox} error=${error} />
        </form>
        <${History} documentId=${doc?.id} tick=${historyTick} selectedId=${result?.id} onPick=${setResult} />
      </div>
      <div class="stack">
        ${result ? html`<${Result} result=${result} />` : html`<div class="panel muted">The answer, its sources, the
          Expansion Tree and the latency per stage appear here.</div>`}
      </div>
    </div>`;
}

function History({ documentId, tick, selectedId, onPick }) {
  const history = useApi(
    () => (documentId ? api("/queries", { query: { document_id: documentId, limit: 200 } }) : Promise.resolve([])),
    [documentId, tick],
  );
  const [rows, pager] = usePager(history.data || [], 8);
  return html`
    <section class="panel" aria-label="Query history">
      <h2>History ${history.data ? html`<span class="muted">(${history.data.length})</span>` : null}</h2>
      <${ErrorBox} error=${history.error} />
      ${history.data && !history.data.length ? html`<p class="muted">No question asked about this document yet.</p>` : null}
      ${rows.length ? html`<table class="data" data-testid="query-history">
        <thead><tr><th>question</th><th>strategy</th><th>retriever</th><th>when</th></tr></thead>
        <tbody>${rows.map((q) => html`
          <tr class=${`clickable${q.id === selectedId ? " selected" : ""}`} onClick=${() => onPick(q)}>
            <td><button type="button" class="link" onClick=${(e) => { e.stopPropagation(); onPick(q); }}
              aria-label=${`Show the answer to: ${q.question}`}>${q.question}</button></td>
            <td>${q.strategy}${q.config?.neighbor_prev || q.config?.neighbor_next
              ? html` <span class="badge accent">±${q.config.neighbor_prev || 0}/${q.config.neighbor_next || 0}</span>` : null}</td>
            <td>${q.config?.retriever || "—"}</td>
            <td class="muted">${when(q.created_at)}</td>
          </tr>`)}</tbody></table>` : null}
      ${pager}
    </section>`;
}

function Result({ result }) {
  const sources = result.sources || [];
  const [page, setPage] = useState(0);
  const [focused, setFocused] = useState(null);
  useEffect(() => { setPage(0); setFocused(null); }, [result.id, result.question]);
  // A citation opens the page its source is on and brings it into view.
  const showSource = (number) => {
    const index = sources.findIndex((s) => s.number === number);
    if (index < 0) return;
    setPage(Math.floor(index / SOURCES_PER_PAGE));
    setFocused(number);
    requestAnimationFrame(() => {
      const node = document.getElementById(`query-source-${number}`);
      node?.scrollIntoView({ block: "nearest" });
      node?.focus();
    });
  };
  const byId = Object.fromEntries(sources.map((s) => [s.chunk_id, s]));
  const catalog = useApi(() => strategyCatalog(), []);
  const expands = expandsNeighbours(catalog.data, result.strategy);
  return html`
    <div class="panel" data-testid="query-answer">
      <h2>Answer <${Term} name="answer_mode"><span class="badge ${result.answer_mode === "none" ? "warn" : "accent"}">${
        result.answer_mode}</span></${Term}></h2>
      <p class="muted small">${result.question}</p>
      <p class="answer">${citedText(result.answer, sources, showSource)}</p>
      <p class="muted small">${[result.strategy, result.config?.retriever, `top_k ${result.config?.top_k}`,
        `rerank ${result.config?.rerank}`, result.config?.corpus_model_id, when(result.created_at)]
        .filter(Boolean).join(" · ")}</p>
    </div>
    <${Sources} sources=${sources} retriever=${result.config?.retriever} page=${page} setPage=${setPage} focused=${focused} />
    <${ExpansionTree} tree=${result.expansion_tree || []} byId=${byId} expands=${expands}
      showSource=${showSource} />
    <div class="grid cols-2">
      <${Latency} latency=${result.latency_breakdown || {}} />
      <${Tokens} usage=${result.token_usage || {}} />
    </div>`;
}

// The answer with each [Source n] turned into a button that shows that source.
function citedText(answer, sources, showSource) {
  const parts = [];
  let last = 0;
  for (const match of (answer || "").matchAll(/\[Source (\d+)\]/g)) {
    const number = Number(match[1]);
    parts.push(answer.slice(last, match.index));
    parts.push(sources.some((s) => s.number === number)
      ? html`<button type="button" class="link cite" onClick=${() => showSource(number)}
          aria-label=${`Show source ${number}`}>[Source ${number}]</button>`
      : match[0]);
    last = match.index + match[0].length;
  }
  parts.push((answer || "").slice(last));
  return parts;
}

function Sources({ sources, retriever, page, setPage, focused }) {
  const pages = Math.max(1, Math.ceil(sources.length / SOURCES_PER_PAGE));
  const current = Math.min(page, pages - 1);
  const rows = sources.slice(current * SOURCES_PER_PAGE, (current + 1) * SOURCES_PER_PAGE);
  return html`
    <div class="panel" data-testid="query-sources">
      <h2>Sources <span class="muted">(${sources.length})</span></h2>
      ${sources.length ? null : html`<p class="muted">Nothing was retrieved (a score floor may have removed every hit).</p>`}
      ${retriever === "hybrid" && sources.length ? html`<p class="muted small">Hybrid scores are Reciprocal Rank Fusion
        scores (from ranks), not cosines.</p>` : null}
      <ol class="sources">
        ${rows.map((s) => html`
          <li id=${`query-source-${s.number}`} tabindex="-1" class=${focused === s.number ? "focused" : ""}>
            <div class="source-head">
              <strong>[Source ${s.number}]</strong>
              <span class="badge ${s.role === "hit" ? "accent" : ""}">${s.role}</span>
              <span class="muted">chunk ${s.chunk_index} · score ${s.score === null || s.score === undefined ? "—" : fmt(s.score)}</span>
              ${s.heading_path?.length ? html`<span class="muted">${s.heading_path.join(" › ")}</span>` : null}
            </div>
            <div class="doc-text source-text">${s.text}</div>
            ${s.parent_text ? html`<details><summary class="muted">parent context</summary>
              <div class="doc-text source-text">${s.parent_text}</div></details>` : null}
          </li>`)}
      </ol>
      ${pages > 1 ? html`<div class="pager">
        <button class="secondary" type="button" disabled=${current === 0} onClick=${() => setPage(current - 1)}
          aria-label="Previous page of sources">‹</button>
        <span class="muted">${current + 1} / ${pages}</span>
        <button class="secondary" type="button" disabled=${current >= pages - 1} onClick=${() => setPage(current + 1)}
          aria-label="Next page of sources">›</button></div>` : null}
    </div>`;
}

const snippet = (text, size = 110) => (!text ? "" : text.length > size ? `${text.slice(0, size).trimEnd()}…` : text);

function TreeChunk({ node, byId, showSource, where }) {
  const source = byId[node.chunk_id];
  const neighbour = node.role === "neighbor";
  // A hit under another hit (``where`` set) lies in that hit's window; the server lists it there once, by its rank.
  const hit = `hit${node.rank ? ` #${node.rank}` : ""}`;
  return html`
    <div class=${`tree-chunk${neighbour ? " neighbour" : ""}`} data-role=${node.role}>
      <span class="badge ${neighbour ? "" : "accent"}">${neighbour ? `neighbour ${where}` : where ? `${where} · ${hit}`
        : hit}</span>
      <span class="mono">chunk ${node.chunk_index}</span>
      <span class="muted">score ${node.score === null || node.score === undefined ? "—" : fmt(node.score)}</span>
      ${source ? html`<button type="button" class="link" onClick=${() => showSource(source.number)}>[Source ${source.number}]</button>` : null}
      <div class="muted small">${snippet(source?.text)}</div>
    </div>`;
}

function ExpansionTree({ tree, byId, expands, showSource }) {
  const [nodes, pager] = usePager(tree, 10);
  const neighbourCount = tree.flatMap((node) => [...(node.neighbors_prev || []), ...(node.neighbors_next || [])])
    .filter((n) => n.role === "neighbor").length;
  return html`
    <div class="panel" data-testid="expansion-tree">
      <h2><${Term} name="expansion_tree" /> <span class="muted">(${tree.length} hit${tree.length === 1 ? "" : "s"},
        ${` ${neighbourCount} neighbour${neighbourCount === 1 ? "" : "s"}`})</span></h2>
      ${!expands ? html`<p class="muted small">Neighbor Expansion applies to strategies whose chunks are windows
        (fixed_size): each hit stands alone here.</p>` : null}
      <ul class="tree">
        ${nodes.map((node, i) => html`<li>
          <${TreeChunk} node=${node} byId=${byId} showSource=${showSource} where="" />
          ${(node.neighbors_prev?.length || node.neighbors_next?.length) ? html`<ul class="tree">
            ${(node.neighbors_prev || []).map((n) => html`<li><${TreeChunk} node=${n} byId=${byId} showSource=${showSource} where="before" /></li>`)}
            ${(node.neighbors_next || []).map((n) => html`<li><${TreeChunk} node=${n} byId=${byId} showSource=${showSource} where="after" /></li>`)}
          </ul>` : null}
        </li>`)}
      </ul>
      ${pager}
    </div>`;
}

function Latency({ latency }) {
  const stages = STAGES.filter((name) => latency[name] !== undefined);
  const total = latency.total ?? stages.reduce((sum, name) => sum + latency[name], 0);
  const widest = Math.max(total, ...stages.map((name) => latency[name]), 1);
  return html`
    <div class="panel" data-testid="query-latency">
      <h2><${Term} name="latency">Latency</${Term}> <span class="muted">${ms(total)}</span></h2>
      <div class="bars">
        ${stages.map((name) => html`
          <div class="bar-row">
            <span>${name}</span>
            <span class="bar" role="img" aria-label=${`${name}: ${ms(latency[name])}`}>
              <span style=${`width:${Math.max(0.5, (100 * latency[name]) / widest)}%`}></span></span>
            <span class="num">${ms(latency[name])}</span>
          </div>`)}
      </div>
    </div>`;
}

function Tokens({ usage }) {
  const rows = [[html`<${Term} name="tok_at_k">context</${Term}>`, usage.context_tokens],
    ["prompt", usage.prompt_tokens], ["completion", usage.completion_tokens],
    ["total (LLM)", usage.total_tokens]];
  return html`
    <div class="panel" data-testid="query-tokens">
      <h2>Tokens</h2>
      <dl class="kv">${rows.map(([label, value]) => html`<dt>${label}</dt><dd>${value ?? "—"}</dd>`)}</dl>
      ${!usage.prompt_tokens ? html`<p class="muted small">No LLM tokens: the answer was extracted locally.</p>` : null}
    </div>`;
}
