// Small shared pieces of the dashboard's UI (Preact + htm, vendored).
import { html, useEffect, useState, useCallback, useRef } from "./vendor/htm-preact-standalone.module.js";

export { html, useEffect, useState, useCallback, useRef };

export function ErrorBox({ error }) {
  if (!error) return null;
  // A job a person cancelled is not an error: its message says what was kept and how to finish.
  if (error.cancelled) return html`<div class="notice" role="status">${error.message}</div>`;
  return html`<div class="error" role="alert">${error.message || String(error)}</div>`;
}

export function Spinner({ label = "Working…" }) {
  return html`<span class="muted" role="status">${label}</span>`;
}

export function ProgressBar({ value, label }) {
  return html`<div><progress max="1" value=${value ?? 0} aria-label=${label || "progress"}></progress>
    ${label ? html`<div class="muted">${label}</div>` : null}</div>`;
}

// The API's bounds (chunkbench.limits), written into the page by the server.
export const LIMITS = JSON.parse(document.getElementById("chunkbench-limits")?.textContent || "{}");

export const fmt = (value, digits = 3) =>
  value === null || value === undefined || Number.isNaN(value) ? "—" : Number(value).toFixed(digits);
export const fmtInt = (value) => (value === null || value === undefined ? "—" : Number(value).toLocaleString());
export const ms = (value) => (value === null || value === undefined ? "—" : `${Number(value).toFixed(1)} ms`);
export const pct = (share) => (share === null || share === undefined ? "—" : `${Math.round(share * 100)}%`);
// A key/value list whose long values (ids, parameter JSON) wrap instead of widening the page on a narrow window.
export const KV_WRAP = { gridTemplateColumns: "max-content minmax(0, 1fr)", overflowWrap: "anywhere" };

// What an Experiment summary (GET /experiments) searched: its corpus (name, document count) or its one document.
export const targetName = (row) => (row.corpus_name || row.corpus_id
  ? `corpus ${row.corpus_name || "(deleted)"} · ${fmtInt(row.documents)} documents`
  : row.document_name || row.document_id || "(deleted document)");

// A loader hook: {data, error, loading, reload}; the request re-runs when a dependency changes.
export function useApi(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true, deps: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false, deps }),
      (error) => live && setState({ data: null, error, loading: false, deps }),
    );
    return () => { live = false; };
  }, [...deps, tick]);
  // The render in which a dependency changes comes before the effect above: it is already loading, so that what
  // was loaded for the old dependencies (another document's text) is never offered as the new one's.
  const stale = !state.deps || state.deps.length !== deps.length || deps.some((d, i) => !Object.is(d, state.deps[i]));
  const { deps: _, ...shown } = state;
  return { ...shown, loading: shown.loading || stale, reload: () => setTick((t) => t + 1) };
}

// Pagination for long lists: render only one page of rows.
export function usePager(items, size = 25) {
  const [page, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil((items?.length || 0) / size));
  const current = Math.min(page, pages - 1);
  const slice = (items || []).slice(current * size, current * size + size);
  const pager = pages > 1
    ? html`<div class="pager"><button class="secondary" disabled=${current === 0}
          onClick=${() => setPage(current - 1)} aria-label="Previous page">‹</button>
        <span class="muted">${current + 1} / ${pages}</span>
        <button class="secondary" disabled=${current >= pages - 1} onClick=${() => setPage(current + 1)}
          aria-label="Next page">›</button></div>`
    : null;
  return [slice, pager];
}
