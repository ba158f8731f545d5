// Chunk Preview: a processed document's chunks drawn on its text, with the run's diagnostics, contextual
// retrieval's prefixes, a token-size histogram per strategy, and a second strategy side by side on the same text.
import { html, useRef, useState, ErrorBox, Spinner, fmt, fmtInt, pct, useApi, KV_WRAP } from "./ui.js";
import { api } from "./api.js";

const CHUNK_PAGE = 50;
// The most chunks of the second strategy drawn beside one page of the first (the API's own limit).
const COMPARE_LIMIT = 1000;

export function ChunkPreview({ doc, refresh }) {
  const runs = useApi(() => api(`/documents/${doc.id}/runs`), [doc.id, refresh]);
  const markdown = useApi(() => api(`/documents/${doc.id}/markdown`), [doc.id, refresh]);
  const sizes = useApi(() => api(`/admin/chunks/${doc.id}/sizes`), [doc.id, refresh]);
  const options = latestCompleted(runs.data || []);
  const [choice, setChoice] = useState("");
  const [other, setOther] = useState(""); // the strategy shown beside it ("": none)
  const [page, setPage] = useState(0);
  const current = options.find((o) => o.key === choice) || options[0];
  const beside = options.find((o) => o.key === other && o.key !== current?.key) || null;
  const chunks = useApi(
    () => (current ? api(`/admin/chunks/${doc.id}`, { query: { strategy: current.strategy_name,
      corpus_model_id: current.corpus_model_id, offset: page * CHUNK_PAGE, limit: CHUNK_PAGE } }) : Promise.resolve(null)),
    [doc.id, current?.key, page, refresh],
  );
  // While another strategy's chunks load, the previous one's are not drawn under the new one's name.
  const onPage = chunks.data && isOf(chunks.data, current) ? chunks.data : null;
  // The pager names the page drawn, not the one asked for: it changes when its chunks have arrived.
  const pages = onPage ? Math.max(1, Math.ceil(onPage.total / CHUNK_PAGE)) : 1;
  const pick = (key) => { setChoice(key); setPage(0); if (key === other) setOther(""); };
  const range = onPage ? textRange(onPage.chunks) : null;
  return html`<div class="panel" role="region" aria-label="Chunk Preview">
    <h2>Chunk Preview</h2>
    <${ErrorBox} error=${runs.error || markdown.error || chunks.error} />
    ${runs.data && options.length === 0 && html`<p class="muted">Process the document to see its chunks here.</p>`}
    ${options.length > 0 && html`<div class="stack">
      <div class="row">
        <label>Strategy
          <select aria-label="Chunk Preview strategy" value=${current.key} onChange=${(e) => pick(e.target.value)}>
            ${options.map((o) => html`<option value=${o.key}>${runLabel(o)}</option>`)}
          </select></label>
        ${options.length > 1 && html`<label>Side by side with
          <select aria-label="Chunk Preview second strategy" value=${beside?.key || ""} onChange=${(e) => setOther(e.target.value)}>
            <option value="">— none —</option>
            ${options.filter((o) => o.key !== current.key).map((o) => html`<option value=${o.key}>${runLabel(o)}</option>`)}
          </select></label>`}
        ${chunks.loading && html`<${Spinner} label="Loading chunks…" />`}
      </div>
      <${SizeHistograms} sizes=${sizes} options=${options} shown=${[current.key, beside?.key].filter(Boolean)}
        onPick=${pick} />
      ${beside
        ? html`<${SideBySide} doc=${doc} text=${markdown.data} left=${current} right=${beside} page=${onPage}
            range=${range} refresh=${refresh} />`
        : html`<${Diagnostics} run=${current} />
          ${onPage && html`<${LanguageNotices} result=${onPage} />`}
          ${onPage && markdown.data !== null && html`<${PrefixNote} preview=${onPage} />
            <${ChunkText} text=${markdown.data} preview=${onPage} label="Document text with chunk boundaries" />`}`}
      ${pages > 1 && onPage && html`<div class="pager" aria-label="Pages of chunks" role="group">
        <button class="secondary" disabled=${page === 0} onClick=${() => setPage(page - 1)}
          aria-label="Previous page of chunks">‹</button>
        <span class="muted" data-testid="chunk-page">page ${fmtInt(Math.floor(onPage.offset / CHUNK_PAGE) + 1)} of ${fmtInt(pages)}</span>
        <button class="secondary" disabled=${page >= pages - 1} onClick=${() => setPage(page + 1)}
          aria-label="Next page of chunks">›</button></div>`}
    </div>`}
  </div>`;
}

// Why a model replaced the untouched default (``notes``), and what the models could not read (``warnings``: results
// there are not meaningful): processing outcomes (one document, a corpus) and the Chunk Preview.
export function LanguageNotices({ result }) {
  return html`${(result.notes || []).map((note) => html`<div class="notice" role="status" data-testid="model-note"
      dir="auto">${note}</div>`)}
    ${(result.warnings || []).map((w) => html`<div class="notice" role="alert" data-testid="language-warning"
      dir="auto"><span class="badge bad">${w.language} not covered</span> ${w.message}</div>`)}`;
}

const runLabel = (run) => `${run.strategy_name} · ${run.corpus_model_id}`;
// Whether a Chunk Preview answer holds the chunks of ``run`` (over ``range``, when one is given).
const isOf = (preview, run, range) => preview.strategy === run.strategy_name
  && preview.corpus_model_id === run.corpus_model_id && (!range || (preview.start === range.from && preview.end === range.to));

// The newest completed run per (strategy, Corpus model): what is in the index now.
function latestCompleted(runs) {
  const seen = new Map();
  for (const run of [...runs].sort((a, b) => (a.created_at < b.created_at ? 1 : -1))) {
    const key = `${run.strategy_name}|${run.corpus_model_id}`;
    if (run.status === "completed" && !seen.has(key)) seen.set(key, { ...run, key });
  }
  return [...seen.values()];
}

// The searchable chunks of a page, in text order, and the stretch of the text they cover (null: none).
const drawable = (chunks) => chunks.filter((c) => !c.is_parent)
  .sort((a, b) => a.start_index - b.start_index || a.chunk_index - b.chunk_index);

function textRange(chunks) {
  const drawn = drawable(chunks);
  if (drawn.length === 0) return null;
  return { from: drawn[0].start_index, to: Math.max(...drawn.map((c) => c.end_index)) };
}

function Diagnostics({ run, compact = false }) {
  const d = run.diagnostics || {};
  const t = d.tokens || {};
  return html`<dl class="kv" style=${KV_WRAP} aria-label=${`Diagnostics of ${run.strategy_name}`}>
    <dt>chunks</dt><dd>${fmtInt(d.chunk_count ?? run.chunk_count)}${d.parent_count ? ` (+ ${fmtInt(d.parent_count)} parents)` : ""}</dd>
    <dt>tokens</dt><dd>min ${fmtInt(t.min)} · median ${fmt(t.median, 0)} · p95 ${fmt(t.p95, 0)} · max ${fmtInt(t.max)}</dd>
    <dt>tiny chunks</dt><dd>${pct(d.tiny_share)} under ${d.tiny_threshold_tokens ?? 32} tokens</dd>
    <dt>mid-sentence ends</dt><dd>${pct(d.mid_sentence_share)}</dd>
    <dt>coverage</dt><dd>${fmt(d.coverage_ratio, 2)} × the document${d.coverage_ratio > 1.001 ? " (overlap)" : ""}</dd>
    ${d.window ? html`<dt>model window</dt><dd data-testid="window-diagnostics">${pct(d.window.chunk_share)} of the chunks
      (${pct(d.window.token_share)} of their tokens) are longer than ${d.window.model_id}'s ${fmtInt(d.window.window_tokens)}-token
      window${d.window.chunks_beyond ? ": the model embeds them from their first window only" : ""}</dd>` : null}
    <dt>parameters</dt><dd class="mono">${JSON.stringify(run.params)}</dd>
    ${!compact && html`<dt>models</dt><dd>corpus ${run.corpus_model_id}${run.boundary_model_id ? ` · boundary ${run.boundary_model_id}` : ""}</dd>
      <dt>time</dt><dd>${run.duration_ms === null ? "—" : `${(run.duration_ms / 1000).toFixed(1)} s`}</dd>`}
  </dl>`;
}

// ------------------------------------------------------------------------------------------------ prefixes

const PREFIX_SOURCES = {
  deterministic: "the document's title and the chunk's heading path (no LLM is configured: set CHUNKBENCH_LLM_BASE_URL "
    + "and CHUNKBENCH_LLM_MODEL, then process again, for prefixes an LLM writes)",
  llm: "written by the LLM, which read the whole document for each chunk",
};

// How contextual retrieval prefixed its chunks: the run's prefix mode, and what the prefixes add on this page.
function PrefixNote({ preview }) {
  if (!preview.prefix_mode) return null;
  const added = preview.chunks.map((c) => c.prefix_tokens).filter((n) => n !== null && n !== undefined);
  return html`<p class="notice small" data-testid="prefix-mode">
    Context prefixes: <strong>${preview.prefix_mode}</strong>, ${PREFIX_SOURCES[preview.prefix_mode] || "as the run recorded"}.
    Each chunk is embedded, and indexed for BM25, as its prefix, a blank line, then its text; the prefix is drawn in a
    dashed box where the chunk starts, and is not part of the document.
    ${added.length > 0 && ` On this page the prefixes add ${fmtInt(Math.min(...added))}–${fmtInt(Math.max(...added))} tokens to a chunk.`}
  </p>`;
}

// ------------------------------------------------------------------------------------------------ drawing

// The document text with one strategy's chunks drawn: neighbouring chunks alternate two tones that differ in
// brightness (not only hue) and in the line under them (solid, dotted), overlaps are striped with both tones under a
// double line, ⟦n / ⟧ mark where chunk n starts and ends, and contextual retrieval's prefix sits in a dashed box
// after ⟦n. ``range`` draws exactly that stretch (the side-by-side view), cutting chunks at its edges; without it
// the stretch is the page's chunks. Every piece of text carries its offset (data-at) for synchronised scrolling.
function ChunkText({ text, preview, range: asked, label, paneRef, onScroll, totalInAll }) {
  const { chunks, total } = preview;
  const [showPrefixes, setShowPrefixes] = useState(true);
  const drawn = drawable(chunks);
  const parents = chunks.length - drawn.length;
  const range = asked || textRange(chunks);
  if (!range || drawn.length === 0) {
    return html`<p class="muted">No chunks ${asked ? "over this stretch of the text" : "on this page"}${parents
      ? ` (${parents} parent chunks: stored for context)` : ""}.</p>`;
  }
  const { from, to } = range;
  const tone = new Map(drawn.map((c, rank) => [c.chunk_id, rank % 2 ? "b" : "a"]));
  const inside = (at) => Math.min(Math.max(at, from), to);
  const points = [...new Set([from, to, ...drawn.flatMap((c) => [inside(c.start_index), inside(c.end_index)])])]
    .sort((a, b) => a - b);
  const parts = [];
  for (const c of drawn) if (c.start_index < from) {
    parts.push(html`<span class="chunk-mark" data-chunk=${c.chunk_index} data-continued="true"
      title=${`chunk ${c.chunk_index} began before this stretch and continues here`}>↳${c.chunk_index}</span>`);
  }
  for (let i = 0; i < points.length; i += 1) {
    const at = points[i];
    for (const c of drawn) if (c.end_index === at && c.end_index > c.start_index) {
      parts.push(html`<span class="chunk-mark" title=${`end of chunk ${c.chunk_index}`}>⟧</span>`);
    }
    for (const c of drawn) if (c.start_index === at) {
      const beyond = c.beyond_window ? ` · ${c.model_tokens} model tokens: beyond the window, embedded from its start only` : "";
      const prefix = c.context_prefix ? ` · context prefix of ${c.prefix_tokens} tokens` : "";
      parts.push(html`<span class=${c.beyond_window ? "chunk-mark beyond" : "chunk-mark"} data-chunk=${c.chunk_index}
        title=${`chunk ${c.chunk_index} · ${c.token_count} tokens${prefix}${beyond}${c.heading_path?.length ? ` · ${c.heading_path.join(" › ")}` : ""}`}
        >⟦${c.chunk_index}${c.beyond_window ? "⚠" : ""}</span>`);
      if (c.context_prefix && showPrefixes) {
        parts.push(html`<span class="chunk-prefix" data-prefix=${c.chunk_index}
          title=${`context prefix of chunk ${c.chunk_index}: embedded before its text, not part of the document`}
          >${c.context_prefix}</span>`);
      }
    }
    if (i === points.length - 1) break;
    const end = points[i + 1];
    const cover = drawn.filter((c) => c.start_index <= at && c.end_index >= end);
    const piece = text.slice(at, end);
    const where = { "data-at": at, "data-len": end - at };
    if (cover.length === 0) parts.push(html`<span class="muted" title="not in any chunk" ...${where}>${piece}</span>`);
    else if (cover.length === 1) {
      parts.push(html`<span class=${`chunk-${tone.get(cover[0].chunk_id)}`} ...${where}>${piece}</span>`);
    } else {
      parts.push(html`<span class="chunk-overlap" title=${`overlap of chunks ${cover.map((c) => c.chunk_index).join(" and ")}`}
        ...${where}>${piece}</span>`);
    }
  }
  for (const c of drawn) if (c.end_index > to) {
    parts.push(html`<span class="chunk-mark" title=${`chunk ${c.chunk_index} continues after this stretch`}>…</span>`);
  }
  const first = drawn[0].chunk_index;
  const last = drawn[drawn.length - 1].chunk_index;
  const prefixed = drawn.some((c) => c.context_prefix);
  // One numbering everywhere: chunk indices from 0, as in the chunk ids, the API and Retrieval Inspect.
  return html`<div>
    <p class="muted small" style="margin:0 0 0.5rem" data-testid="chunk-range">
      ${`Chunks ${first}–${last} · ${fmtInt(drawn.length)} ${asked ? "over the same text" : "on this page"}, of ${
        fmtInt(totalInAll ?? total)}${parents ? ` (${parents} parents not drawn)` : ""} · characters ${fmtInt(from)}–${
        fmtInt(to)} · ⟦n marks where chunk n starts (numbered from 0, as in the chunk ids), ⟧ where it ends; overlaps `
        + "are striped."}</p>
    ${prefixed && html`<label class="check small" style="display:flex;gap:0.35rem;margin-bottom:0.4rem">
      <input type="checkbox" checked=${showPrefixes} onChange=${(e) => setShowPrefixes(e.target.checked)} />
      Show the context prefixes</label>`}
    <div class="scroll doc-text chunk-pane" tabindex="0" aria-label=${label} ref=${paneRef} onScroll=${onScroll}>${parts}</div>
  </div>`;
}

// ------------------------------------------------------------------------------------------------ side by side

// Two strategies on the same stretch of text: the left one's page, and the right one's chunks over that stretch,
// fetched by character range; scrolling one pane scrolls the other to the same place in the text.
function SideBySide({ doc, text, left, right, page, range, refresh }) {
  const beside = useApi(
    () => (range ? api(`/admin/chunks/${doc.id}`, { query: { strategy: right.strategy_name,
      corpus_model_id: right.corpus_model_id, start: range.from, end: range.to, limit: COMPARE_LIMIT } })
      : Promise.resolve(null)),
    [doc.id, right.key, range?.from, range?.to, refresh],
  );
  const [together, setTogether] = useState(true);
  const panes = { left: useRef(null), right: useRef(null) };
  const echo = useRef(null); // the pane whose next scroll event is our own doing, not the reader's
  const follow = (from, to) => () => {
    if (echo.current === from) { echo.current = null; return; }
    if (!together || !panes[from].current || !panes[to].current) return;
    const at = offsetAtTop(panes[from].current);
    if (at === null) return;
    echo.current = to;
    if (!scrollToOffset(panes[to].current, at)) echo.current = null;
  };
  const rightTotal = right.diagnostics?.chunk_count ?? right.chunk_count;
  const drawn = beside.data && range && isOf(beside.data, right, range) ? beside.data : null;
  return html`<div class="stack">
    <label class="check small" style="display:flex;gap:0.35rem">
      <input type="checkbox" checked=${together} onChange=${(e) => setTogether(e.target.checked)} />
      Scroll both panes together</label>
    <div class="chunk-compare">
      <section aria-label=${`Chunks of ${left.strategy_name}`}>
        <h3>${runLabel(left)}</h3>
        <${Diagnostics} run=${left} compact=${true} />
        ${page && text !== null && html`<${PrefixNote} preview=${page} />
          <${ChunkText} text=${text} preview=${page} label=${`Text with the chunks of ${left.strategy_name}`}
            paneRef=${panes.left} onScroll=${follow("left", "right")} />`}
      </section>
      <section aria-label=${`Chunks of ${right.strategy_name}`}>
        <h3>${runLabel(right)}</h3>
        <${Diagnostics} run=${right} compact=${true} />
        <${ErrorBox} error=${beside.error} />
        ${beside.loading && html`<${Spinner} label="Loading chunks…" />`}
        ${drawn && text !== null && html`<${PrefixNote} preview=${drawn} />
          ${drawn.total > drawn.chunks.length && html`<p class="notice small">The first
            ${fmtInt(drawn.chunks.length)} of the ${fmtInt(drawn.total)} chunks over this text are drawn.</p>`}
          <${ChunkText} text=${text} preview=${drawn} range=${range} totalInAll=${rightTotal}
            label=${`Text with the chunks of ${right.strategy_name}`} paneRef=${panes.right}
            onScroll=${follow("right", "left")} />`}
      </section>
    </div>
  </div>`;
}

// The text offset at the top edge of a pane: the piece there, and how far down it the edge falls.
function offsetAtTop(pane) {
  const top = pane.getBoundingClientRect().top;
  for (const piece of pane.querySelectorAll("[data-at]")) {
    const box = piece.getBoundingClientRect();
    if (box.bottom > top) {
      const into = box.height > 0 ? Math.min(Math.max((top - box.top) / box.height, 0), 1) : 0;
      return Number(piece.dataset.at) + into * Number(piece.dataset.len);
    }
  }
  return null;
}

// Scroll a pane so that text offset ``at`` is at its top edge; false when that changed nothing.
function scrollToOffset(pane, at) {
  const pieces = [...pane.querySelectorAll("[data-at]")];
  const piece = pieces.find((p) => at < Number(p.dataset.at) + Number(p.dataset.len)) || pieces[pieces.length - 1];
  if (!piece) return false;
  const into = Math.min(Math.max((at - Number(piece.dataset.at)) / Number(piece.dataset.len || 1), 0), 1);
  const box = piece.getBoundingClientRect();
  const target = Math.round(pane.scrollTop + box.top - pane.getBoundingClientRect().top + into * box.height);
  const before = pane.scrollTop;
  pane.scrollTop = target;
  return pane.scrollTop !== before;
}

// ------------------------------------------------------------------------------------------------ histograms

// A token-size histogram per indexed strategy, all on the same bins (the server's), so their shapes compare; the
// strategies drawn below are outlined, and a strategy's name shows it.
function SizeHistograms({ sizes, options, shown, onPick }) {
  if (sizes.error) return html`<${ErrorBox} error=${sizes.error} />`;
  if (!sizes.data || sizes.data.runs.length === 0) return null;
  const { bin_tokens: width, bins, tiny_threshold_tokens: tiny, runs } = sizes.data;
  const byKey = new Map(options.map((o) => [o.key, o]));
  return html`<section aria-label="Chunk sizes">
    <h3>Chunk sizes <span class="muted small">· chunks per ${fmtInt(width)}-token bin (cl100k), the same bins for
      every strategy; the dashed line is the tiny-chunk threshold (${tiny} tokens)</span></h3>
    <div class="size-histograms">${runs.map((run) => {
      const key = `${run.strategy}|${run.corpus_model_id}`;
      return html`<${Histogram} key=${key} run=${run} option=${byKey.get(key)} width=${width} bins=${bins} tiny=${tiny}
        shown=${shown.includes(key)} onPick=${byKey.has(key) ? () => onPick(key) : null} />`;
    })}</div>
  </section>`;
}

const HIST_W = 240;
const HIST_H = 64;

function Histogram({ run, option, width, bins, tiny, shown, onPick }) {
  const most = Math.max(1, ...run.counts);
  const step = HIST_W / Math.max(bins, 1);
  const upper = bins * width;
  const peak = run.counts.indexOf(Math.max(...run.counts));
  const median = option?.diagnostics?.tokens?.median;
  const summary = run.chunk_count === 0 ? "nothing indexed (the collection was wiped or deleted)"
    : `${fmtInt(run.chunk_count)} chunks, most of ${fmtInt(peak * width)}–${fmtInt((peak + 1) * width - 1)} tokens`;
  return html`<figure class=${`size-histogram${shown ? " shown" : ""}`} data-strategy=${run.strategy}
      aria-label=${`Token sizes of ${run.strategy} · ${run.corpus_model_id}: ${summary}`}>
    <figcaption class="small">
      ${onPick ? html`<button class="link" onClick=${onPick} aria-pressed=${shown}>${run.strategy}</button>` : run.strategy}
      <span class="muted"> · ${summary}${median !== undefined && run.chunk_count ? ` · median ${fmt(median, 0)}` : ""}
        ${run.parent_count ? ` · ${fmtInt(run.parent_count)} parents not counted` : ""}</span></figcaption>
    <svg viewBox=${`0 0 ${HIST_W} ${HIST_H + 14}`} aria-hidden="true">
      ${run.counts.map((count, i) => {
        const h = (count / most) * HIST_H;
        return html`<rect class="hist-bar" x=${i * step + 0.5} y=${HIST_H - h} width=${Math.max(step - 1, 0.5)} height=${h}
          data-from=${i * width} data-to=${(i + 1) * width} data-count=${count}>
          <title>${fmtInt(i * width)}–${fmtInt((i + 1) * width - 1)} tokens: ${fmtInt(count)} chunks</title></rect>`;
      })}
      ${tiny < upper && html`<line class="tiny" x1=${(tiny / upper) * HIST_W} x2=${(tiny / upper) * HIST_W} y1="0" y2=${HIST_H} />`}
      <line class="axis" x1="0" x2=${HIST_W} y1=${HIST_H} y2=${HIST_H} />
      <text x="0" y=${HIST_H + 11}>0</text>
      <text x=${HIST_W} y=${HIST_H + 11} text-anchor="end">${fmtInt(upper)} tokens</text>
    </svg>
  </figure>`;
}
