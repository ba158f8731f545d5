// Chunk Preview: a processed document's chunks drawn on its text, with the run's diagnostics.
import { html, useState, ErrorBox, Spinner, fmt, fmtInt, pct, useApi, KV_WRAP } from "./ui.js";
import { api } from "./api.js";

const CHUNK_PAGE = 50;

export function ChunkPreview({ doc, refresh }) {
  const runs = useApi(() => api(`/documents/${doc.id}/runs`), [doc.id, refresh]);
  const markdown = useApi(() => api(`/documents/${doc.id}/markdown`), [doc.id, refresh]);
  const options = latestCompleted(runs.data || []);
  const [choice, setChoice] = useState("");
  const [page, setPage] = useState(0);
  const current = options.find((o) => o.key === choice) || options[0];
  const chunks = useApi(
    () => (current ? api(`/admin/chunks/${doc.id}`, { query: { strategy: current.strategy_name,
      corpus_model_id: current.corpus_model_id, offset: page * CHUNK_PAGE, limit: CHUNK_PAGE } }) : Promise.resolve(null)),
    [doc.id, current?.key, page, refresh],
  );
  const pages = chunks.data ? Math.max(1, Math.ceil(chunks.data.total / CHUNK_PAGE)) : 1;
  const pick = (key) => { setChoice(key); setPage(0); };
  // The pager's range names the chunks drawn, not the page asked for: it changes when they have arrived.
  return html`<div class="panel">
    <h2>Chunk Preview</h2>
    <${ErrorBox} error=${runs.error || markdown.error || chunks.error} />
    ${runs.data && options.length === 0 && html`<p class="muted">Process the document to see its chunks here.</p>`}
    ${options.length > 0 && html`<div class="stack">
      <div class="row">
        <label>Strategy
          <select aria-label="Chunk Preview strategy" value=${current.key} onChange=${(e) => pick(e.target.value)}>
            ${options.map((o) => html`<option value=${o.key}>${o.strategy_name} · ${o.corpus_model_id}</option>`)}
          </select></label>
        ${chunks.loading && html`<${Spinner} label="Loading chunks…" />`}
      </div>
      <${Diagnostics} run=${current} />
      ${chunks.data && markdown.data !== null && html`<${ChunkText} text=${markdown.data} chunks=${chunks.data.chunks}
        total=${chunks.data.total} offset=${chunks.data.offset} />`}
      ${pages > 1 && html`<div class="pager"><button class="secondary" disabled=${page === 0}
          onClick=${() => setPage(page - 1)} aria-label="Previous page of chunks">‹</button>
        <span class="muted">chunks ${chunks.data.offset + 1}–${chunks.data.offset + chunks.data.chunks.length}${" "}
          of ${fmtInt(chunks.data.total)}</span>
        <button class="secondary" disabled=${page >= pages - 1} onClick=${() => setPage(page + 1)}
          aria-label="Next page of chunks">›</button></div>`}
    </div>`}
  </div>`;
}

// The newest completed run per (strategy, Corpus model): what is in the index now.
function latestCompleted(runs) {
  const seen = new Map();
  for (const run of [...runs].sort((a, b) => (a.created_at < b.created_at ? 1 : -1))) {
    const key = `${run.strategy_name}|${run.corpus_model_id}`;
    if (run.status === "completed" && !seen.has(key)) seen.set(key, { ...run, key });
  }
  return [...seen.values()];
}

function Diagnostics({ run }) {
  const d = run.diagnostics || {};
  const t = d.tokens || {};
  return html`<dl class="kv" style=${KV_WRAP} aria-label="Diagnostics">
    <dt>chunks</dt><dd>${fmtInt(d.chunk_count ?? run.chunk_count)}${d.parent_count ? ` (+ ${fmtInt(d.parent_count)} parents)` : ""}</dd>
    <dt>tokens</dt><dd>min ${fmtInt(t.min)} · median ${fmt(t.median, 0)} · p95 ${fmt(t.p95, 0)} · max ${fmtInt(t.max)}</dd>
    <dt>tiny chunks</dt><dd>${pct(d.tiny_share)} under ${d.tiny_threshold_tokens ?? 32} tokens</dd>
    <dt>mid-sentence ends</dt><dd>${pct(d.mid_sentence_share)}</dd>
    <dt>coverage</dt><dd>${fmt(d.coverage_ratio, 2)} × the document${d.coverage_ratio > 1.001 ? " (overlap)" : ""}</dd>
    ${d.window ? html`<dt>model window</dt><dd data-testid="window-diagnostics">${pct(d.window.chunk_share)} of the chunks
      (${pct(d.window.token_share)} of their tokens) are longer than ${d.window.model_id}'s ${fmtInt(d.window.window_tokens)}-token
      window${d.window.chunks_beyond ? ": the model embeds them from their first window only" : ""}</dd>` : null}
    <dt>parameters</dt><dd class="mono">${JSON.stringify(run.params)}</dd>
    <dt>models</dt><dd>corpus ${run.corpus_model_id}${run.boundary_model_id ? ` · boundary ${run.boundary_model_id}` : ""}</dd>
    <dt>time</dt><dd>${run.duration_ms === null ? "—" : `${(run.duration_ms / 1000).toFixed(1)} s`}</dd>
  </dl>`;
}

// The document text of one page of chunks with the boundaries drawn: each chunk alternates chunk-a/chunk-b,
// text shared by two chunks (overlap) carries both backgrounds, and ⟦n / ⟧ mark where chunk n starts and ends.
function ChunkText({ text, chunks, total, offset }) {
  const drawn = chunks.filter((c) => !c.is_parent).sort((a, b) => a.start_index - b.start_index || a.chunk_index - b.chunk_index);
  const parents = chunks.length - drawn.length;
  if (drawn.length === 0) return html`<p class="muted">No chunks on this page${parents ? ` (${parents} parent chunks: stored for context)` : ""}.</p>`;
  const from = drawn[0].start_index;
  const to = Math.max(...drawn.map((c) => c.end_index));
  const points = [...new Set([from, to, ...drawn.flatMap((c) => [c.start_index, c.end_index])])].sort((a, b) => a - b);
  const parts = [];
  for (let i = 0; i < points.length; i += 1) {
    const at = points[i];
    for (const c of drawn) if (c.end_index === at && c.end_index > c.start_index) {
      parts.push(html`<span class="chunk-mark" title=${`end of chunk ${c.chunk_index}`}>⟧</span>`);
    }
    for (const c of drawn) if (c.start_index === at) {
      const beyond = c.beyond_window ? ` · ${c.model_tokens} model tokens: beyond the window, embedded from its start only` : "";
      parts.push(html`<span class=${c.beyond_window ? "chunk-mark beyond" : "chunk-mark"} data-chunk=${c.chunk_index}
        title=${`chunk ${c.chunk_index} · ${c.token_count} tokens${beyond}${c.heading_path?.length ? ` · ${c.heading_path.join(" › ")}` : ""}`}
        >⟦${c.chunk_index}${c.beyond_window ? "⚠" : ""}</span>`);
    }
    if (i === points.length - 1) break;
    const end = points[i + 1];
    const cover = drawn.filter((c) => c.start_index <= at && c.end_index >= end);
    const piece = text.slice(at, end);
    if (cover.length === 0) parts.push(html`<span class="muted" title="not in any chunk">${piece}</span>`);
    else if (cover.length === 1) parts.push(html`<span class=${cover[0].chunk_index % 2 ? "chunk-b" : "chunk-a"}>${piece}</span>`);
    else {
      parts.push(html`<span class="chunk-a" title=${`overlap of chunks ${cover.map((c) => c.chunk_index).join(" and ")}`}>
        <span class="chunk-b">${piece}</span></span>`);
    }
  }
  return html`<div>
    <p class="muted" style="margin:0 0 0.5rem">Chunks ${drawn[0].chunk_index}–${drawn[drawn.length - 1].chunk_index}${" "}
      (${fmtInt(drawn.length)} on this page, ${fmtInt(total)} in all${parents ? `, ${parents} parents not drawn` : ""})
      · characters ${fmtInt(from)}–${fmtInt(to)} · ⟦n marks where chunk n starts, ⟧ where it ends; overlaps carry both colours.</p>
    <div class="scroll doc-text" tabindex="0" aria-label="Document text with chunk boundaries" data-offset=${offset}>${parts}</div>
  </div>`;
}
