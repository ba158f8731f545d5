// Documents (every type but PDF) and PDF tabs: one component with a format filter. Upload, the list with
// lifecycle state and chunk counts, the section tree and markdown, processing with live progress, Chunk Preview.
import { html, useEffect, useRef, useState, ErrorBox, Spinner, ProgressBar, fmt, fmtInt, pct, useApi, KV_WRAP } from "../ui.js";
import { ChunkPreview, LanguageNotices } from "../chunk_preview.js";
import { api, cancelJob, upload, waitForJob } from "../api.js";
import { emit, on } from "../bus.js";
import { Term } from "../glossary.js";
import { go, useRouteParam } from "../router.js";

// What each tab holds: the PDF tab PDFs, the Documents tab every other type the server ingests. Which types those are
// comes from GET /documents/formats (the parser registry, plugins included), so a new parser needs no edit here.
const PDF_TYPE = "application/pdf";
const FORMATS = {
  word: { title: "Documents", noun: "documents", other: "PDF", tab: "documents", otherTab: "pdf", pdf: false },
  pdf: { title: "PDF", noun: "PDF documents", other: "Documents", tab: "pdf", otherTab: "documents", pdf: true },
};
let formatsLoad = null; // one request per page load, shared by both tabs

// The tab's spec with what the server ingests filled in: mimeTypes (the list's filter), accept (the file chooser)
// and hint (the drop zone's words); null until the formats are known.
function useFormats(base) {
  const [formats, setFormats] = useState(null);
  useEffect(() => {
    formatsLoad = formatsLoad || api("/documents/formats");
    formatsLoad.then(setFormats, () => { formatsLoad = null; });
  }, []);
  if (!formats) return null;
  const mine = formats.filter((f) => (f.mime_type === PDF_TYPE) === base.pdf);
  const text = [...new Set(mine.filter((f) => f.kind !== "code").map((f) => f.suffix.slice(1).toUpperCase()))];
  const code = mine.some((f) => f.kind === "code");
  return {
    ...base,
    mimeTypes: [...new Set(mine.map((f) => f.mime_type))],
    accept: mine.map((f) => f.suffix).join(","),
    hint: code ? `${text.join(", ")} or source code` : text.join(", "),
  };
}
const LIST_PAGE = 20;
const CHANGED = "documents-changed"; // emitted after an upload, a deletion or a run: every list reloads

export function DocumentsTab(props) {
  return html`<${DocumentsView} format="word" ...${props} />`;
}

export function PdfTab(props) {
  return html`<${DocumentsView} format="pdf" ...${props} />`;
}

function DocumentsView({ format, openTab }) {
  const base = FORMATS[format];
  const spec = useFormats(base);
  // Deep links: #documents/doc/ID (the open document), #documents/corpus/NAME (the corpus the list shows).
  const [selected, setSelected] = useRouteParam(base.tab, "doc");
  const [shownCorpus, setCorpus] = useRouteParam(base.tab, "corpus");
  const corpus = shownCorpus || ""; // "": every document
  const [picked, setPicked] = useState(() => new Set()); // documents ticked for a corpus action
  return html`<div class="stack">
    ${spec ? html`<${Uploader} spec=${spec} onSelect=${setSelected} onCorpus=${setCorpus} />` : html`<${Spinner} label="Loading formats…" />`}
    <${CorpusPanel} corpus=${corpus} onCorpus=${setCorpus} picked=${picked} onPicked=${setPicked} />
    ${spec && html`<${DocumentList} spec=${spec} selected=${selected} onSelect=${setSelected} corpus=${corpus}
      picked=${picked} onPicked=${setPicked} />`}
    ${selected && html`<${DocumentDetail} key=${selected} id=${selected} openTab=${openTab}
      onDeleted=${() => setSelected(null)} />`}
  </div>`;
}

// ------------------------------------------------------------------------------------------------ upload

const OUTCOME_TEXT = {
  created: "added",
  replaced: "replaced the earlier upload of the same name",
  unchanged: "unchanged: the same file was already uploaded",
};
// Green only when this list gained or renewed a document; "unchanged" added nothing.
const OUTCOME_TONE = { created: "good", replaced: "good", unchanged: "" };

function Uploader({ spec, onSelect, onCorpus }) {
  const [items, setItems] = useState([]);
  const [over, setOver] = useState(false);
  const input = useRef(null);
  const queue = useRef(Promise.resolve());
  const patch = (key, change) => setItems((list) => list.map((item) => (item.key === key ? { ...item, ...change } : item)));

  const add = (files) => {
    const fresh = [...files].map((file, i) => ({ key: `${Date.now()}-${i}-${file.name}`, file, state: "queued", progress: 0 }));
    setItems((list) => [...fresh, ...list]);
    // One upload at a time: parsing is CPU work on the server, and the rows then finish in order.
    for (const item of fresh) queue.current = queue.current.then(() => send(item));
  };
  const send = async ({ key, file }) => {
    patch(key, { state: "uploading" });
    try {
      const body = await upload("/documents", file, { onProgress: (progress) => patch(key, { progress }) });
      patch(key, { state: "done", progress: 1, body });
      emit(CHANGED, { id: body.document?.id });
    } catch (error) {
      patch(key, { state: "failed", error });
    }
  };
  const onKey = (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); input.current?.click(); }
  };
  const finished = items.some((item) => item.state === "done" || item.state === "failed");
  const summary = uploadSummary(items);
  return html`<div class="panel">
    <h2>Upload ${spec.noun}</h2>
    <div class=${`dropzone${over ? " over" : ""}`} role="button" tabindex="0"
      aria-label=${`Upload files: drop them here or press Enter to choose (${spec.hint})`}
      onClick=${() => input.current?.click()} onKeyDown=${onKey}
      onDragOver=${(e) => { e.preventDefault(); setOver(true); }} onDragLeave=${() => setOver(false)}
      onDrop=${(e) => { e.preventDefault(); setOver(false); add(e.dataTransfer.files); }}>
      Drop ${spec.hint} files here, or click to choose several.
    </div>
    <input ref=${input} type="file" multiple accept=${spec.accept} hidden aria-label="Choose files to upload"
      onChange=${(e) => { add(e.target.files); e.target.value = ""; }} />
    ${items.length > 0 && html`<div style="overflow-x:auto"><table class="data" aria-label="Uploads">
      <thead><tr><th>file</th><th class="num">size</th><th>result</th></tr></thead>
      <tbody>${items.map((item) => html`<${UploadRow} key=${item.key} item=${item} spec=${spec} onSelect=${onSelect} />`)}</tbody>
    </table></div>
    ${summary && html`<p role="status" aria-label="Upload summary" style="margin:0.5rem 0 0">${summary}</p>`}
    ${finished && html`<div class="row" style="margin-top:0.5rem"><button class="secondary"
      onClick=${() => setItems((list) => list.filter((i) => i.state === "queued" || i.state === "uploading"))}>
      Clear finished uploads</button></div>`}`}
    <${FolderIngest} onSelect=${onSelect} onCorpus=${onCorpus} />
  </div>`;
}

// An upload the server refused for what the file is (its type, size, emptiness) is counted as a folder ingest
// counts a skipped file of that kind; any other refusal is "refused" (the same words as the server's summary).
const REFUSAL_KIND = { unsupported_file_type: "unsupported", file_too_large: "too large", empty_document: "empty" };

// "3 files: 1 ingested, 1 refused, 1 unsupported" over the finished uploads; null before any has finished.
function uploadSummary(items) {
  const done = items.filter((item) => item.state === "done").length;
  const failed = items.filter((item) => item.state === "failed");
  if (done + failed.length === 0) return null;
  const kinds = {};
  for (const { error } of failed) {
    const kind = REFUSAL_KIND[error?.body?.error] || "refused";
    kinds[kind] = (kinds[kind] || 0) + 1;
  }
  const parts = [`${fmtInt(done)} ingested`, `${fmtInt(kinds.refused || 0)} refused`,
    ...["unsupported", "too large", "empty"].filter((k) => kinds[k]).map((k) => `${fmtInt(kinds[k])} ${k}`)];
  const files = done + failed.length;
  const pending = items.length - files;
  return `${fmtInt(files)} file${files === 1 ? "" : "s"}: ${parts.join(", ")}${pending ? ` (${fmtInt(pending)} still to go)` : ""}`;
}

// Ingest a folder of the server's data directory (POST /documents/index-directory): every file under it comes
// back, ingested, refused with the error, or skipped with the reason, under the server's summary line.
function FolderIngest({ onSelect, onCorpus }) {
  const [path, setPath] = useState("");
  const [corpus, setCorpus] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [result, setResult] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = await api("/documents/index-directory", { method: "POST",
        json: { path: path.trim(), corpus: corpus.trim() || null } });
      setResult(body);
      // The folder's corpus, as one made from ticked rows, is the one shown next (its Process action at hand).
      if (corpus.trim()) onCorpus?.(corpus.trim());
      emit(CHANGED, {});
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  return html`<details style="margin-top:0.75rem" open=${result !== null}>
    <summary>Ingest a folder of the server's data directory</summary>
    <form class="row" style="margin-top:0.5rem" aria-label="Folder ingest" onSubmit=${submit}>
      <label style="flex:1">Folder<input type="text" required value=${path} aria-label="Folder path"
        placeholder="a path relative to the data directory, e.g. inbox" onInput=${(e) => setPath(e.target.value)} /></label>
      <label>Corpus<input type="text" value=${corpus} aria-label="Folder corpus" placeholder="optional"
        onInput=${(e) => setCorpus(e.target.value)} /></label>
      <button type="submit" class="primary" disabled=${busy}>${busy ? "Ingesting…" : "Ingest folder"}</button>
    </form>
    <${ErrorBox} error=${error} />
    ${result && html`<${FolderOutcome} result=${result} onSelect=${onSelect} />`}
  </details>`;
}

const FOLDER_OUTCOME = { created: ["added", "good"], replaced: ["replaced", "good"], unchanged: ["unchanged", ""],
  failed: ["refused", "bad"], skipped: ["skipped", "warn"] };

function FolderOutcome({ result, onSelect }) {
  return html`<div class="stack" style="margin-top:0.5rem">
    <p role="status" aria-label="Folder ingest summary" style="margin:0"><strong>${result.summary.line}</strong></p>
    <div class="scroll" style="max-height:50vh"><table class="data" aria-label="Folder ingest results">
      <thead><tr><th>file</th><th>outcome</th><th>reason</th></tr></thead>
      <tbody>${result.results.map((r) => {
        const [label, tone] = FOLDER_OUTCOME[r.outcome] || [r.outcome, ""];
        const reason = r.skip_reason || r.error;
        const folder = r.skip_reason?.details?.folder;
        return html`<tr key=${r.source_key}>
          <td style="overflow-wrap:anywhere; min-width:10rem">${folder ? `${r.source_key}/ (${fmtInt(r.skip_reason.files)} files)` : r.source_key}</td>
          <td><span class=${`badge ${tone}`}>${label}${r.skip_reason ? ` · ${r.skip_reason.code}` : ""}</span></td>
          <td style="overflow-wrap:anywhere">${reason ? reason.message
            : r.document && html`<button class="link" onClick=${() => onSelect(r.document.id)}>open</button>`}</td></tr>`;
      })}</tbody>
    </table></div>
  </div>`;
}

function UploadRow({ item, spec, onSelect }) {
  const { file, state, progress, body, error } = item;
  let result;
  if (state === "queued") result = html`<span class="muted">waiting</span>`;
  else if (state === "uploading") {
    result = progress < 1 ? html`<${ProgressBar} value=${progress} label=${`uploading ${Math.round(progress * 100)}%`} />`
      : html`<${Spinner} label="reading the document…" />`;
  } else if (state === "failed") result = html`<${ErrorBox} error=${error} />`;
  else {
    const doc = body.document;
    // A file of the other tab's format (a PDF dropped here) joins that tab's list, not this one: said so.
    const elsewhere = doc && !spec.mimeTypes.includes(doc.mime_type);
    const outcome = OUTCOME_TEXT[body.outcome] || body.outcome;
    result = html`<span class=${`badge ${elsewhere ? "" : OUTCOME_TONE[body.outcome] ?? ""}`}>${elsewhere
        ? `${body.outcome === "unchanged" ? "already" : body.outcome === "replaced" ? "replaced" : "added"} in the ${
          spec.other} tab, not here` : outcome}</span>
      ${body.duplicate_of && html` <span class="badge warn">same content as document ${body.duplicate_of}</span>`}
      ${(body.warnings || []).map((w) => html` <span class="badge warn">${w}</span>`)}
      ${elsewhere ? html` <button class="link" onClick=${() => go(spec.otherTab, { doc: doc.id })}>open it in the ${
          spec.other} tab</button>`
        : doc && html` <button class="link" onClick=${() => onSelect(doc.id)}>open</button>`}`;
  }
  return html`<tr><td>${file.name}</td><td class="num">${bytes(file.size)}</td><td>${result}</td></tr>`;
}

// ------------------------------------------------------------------------------------------------ corpora

// The corpus picker (which documents the list shows), corpus membership of the ticked documents, and a corpus's
// own actions: delete (its documents stay) and processing every document of it as one job.
function CorpusPanel({ corpus, onCorpus, picked, onPicked }) {
  const [tick, setTick] = useState(0);
  useEffect(() => on(CHANGED, () => setTick((t) => t + 1)), []);
  const corpora = useApi(() => api("/corpora"), [tick]);
  const [target, setTarget] = useState(""); // the corpus the ticked documents join or leave
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [processing, setProcessing] = useState(false);
  const [language, setLanguage] = useState(null); // the code typed while setting the corpus's language, or null
  const [warnings, setWarnings] = useState([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const list = corpora.data || [];
  const shown = list.find((c) => c.name === corpus);
  // A corpus deleted (here or elsewhere) is no longer a place to show or to add to.
  useEffect(() => {
    if (!corpora.data) return;
    if (corpus && !shown) onCorpus("", { replace: true });
    if (!list.some((c) => c.name === target)) setTarget(corpus || list[0]?.name || "");
  }, [corpora.data]);
  useEffect(() => {
    if (corpus) setTarget(corpus);
    setConfirming(false); setProcessing(false); setLanguage(null); setWarnings([]);
  }, [corpus]);

  const act = async (work, done) => {
    setBusy(true);
    setError(null);
    setNote(null);
    try {
      setNote(await work());
      done?.();
      emit(CHANGED, {});
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  const ids = [...picked];
  const path = (n) => `/corpora/${encodeURIComponent(n)}`;
  const create = (event) => {
    event.preventDefault();
    let made = null;
    act(async () => {
      made = await api("/corpora", { method: "POST",
        json: { name: name.trim(), description: description.trim() || null, document_ids: ids } });
      return `Created ${made.name} with ${fmtInt(made.document_count)} document${made.document_count === 1 ? "" : "s"}.`;
    }, () => {
      setCreating(false); setName(""); setDescription(""); onPicked(new Set());
      // The corpus just made is the one to work on next (process it, write its questions): it is shown, with its
      // actions, rather than left for the person to find in the picker.
      onCorpus(made.name);
    });
  };
  const add = () => act(async () => {
    const body = await api(`${path(target)}/documents`, { method: "POST", json: { document_ids: ids } });
    return `Added ${fmtInt(body.added)} to ${body.corpus} (${fmtInt(ids.length - body.added)} already there); it has ${
      fmtInt(body.document_count)} documents.`;
  }, () => onPicked(new Set()));
  const remove = () => act(async () => {
    // Only the members: removing a document that is not in the corpus would be a 404 for nothing.
    const members = new Set((await api(path(target))).documents.map((d) => d.id));
    const leaving = ids.filter((id) => members.has(id));
    for (const id of leaving) await api(`${path(target)}/documents/${encodeURIComponent(id)}`, { method: "DELETE" });
    return `Removed ${fmtInt(leaving.length)} from ${target}${leaving.length < ids.length
      ? ` (${fmtInt(ids.length - leaving.length)} were not in it)` : ""}; the documents stay.`;
  }, () => onPicked(new Set()));
  // Every member's language at once (PUT /corpora/{name}/language): the server names models that already processed
  // a member and do not read the new language.
  const setCorpusLanguage = (event) => {
    event.preventDefault();
    act(async () => {
      const body = await api(`${path(corpus)}/language`, { method: "PUT", json: { language: language.trim() } });
      setWarnings(body.warnings);
      return `Set the language of ${fmtInt(body.documents.length)} document${body.documents.length === 1 ? "" : "s"} of ${
        corpus} to ${body.language}.`;
    }, () => setLanguage(null));
  };
  const drop = () => act(async () => {
    await api(path(corpus), { method: "DELETE" });
    return `Deleted the corpus ${corpus}; its documents stay.`;
  }, () => { setConfirming(false); onCorpus(""); });

  return html`<div class="panel" aria-label="Corpora" role="region">
    <h2>Corpora ${corpora.data && html`<span class="muted">(${fmtInt(list.length)})</span>`}</h2>
    <${ErrorBox} error=${corpora.error} />
    <div class="row">
      <label>Show
        <select aria-label="Show corpus" value=${corpus} onChange=${(e) => onCorpus(e.target.value)}>
          <option value="">all documents</option>
          ${list.map((c) => html`<option key=${c.id} value=${c.name}>${c.name} (${fmtInt(c.document_count)})</option>`)}
        </select></label>
      ${shown && html`<button class="secondary" onClick=${() => setProcessing(!processing)} aria-expanded=${processing}>
          Process corpus…</button>
        <button class="secondary" onClick=${() => setLanguage(language === null ? "" : null)}
          aria-expanded=${language !== null}>Set language…</button>
        <button class="danger" onClick=${() => setConfirming(true)} disabled=${confirming || busy}>Delete corpus…</button>`}
    </div>
    ${shown && language !== null && html`<form class="row" style="margin-top:0.75rem" onSubmit=${setCorpusLanguage}
      aria-label="Set the corpus's language">
      <label>Language of every document in ${corpus}
        <input value=${language} onInput=${(e) => setLanguage(e.target.value)} size="6" required placeholder="de"
          title="An ISO 639-1 code (en, de, fr, fa, …) or und (undetermined)" /></label>
      <button class="primary" type="submit" disabled=${busy}>${busy ? "Saving…" : "Set for every document"}</button>
      <button class="secondary" type="button" onClick=${() => setLanguage(null)}>Cancel</button>
    </form>`}
    ${warnings.map((w) => html`<div class="notice" role="alert" data-testid="corpus-language-warning">${w}</div>`)}
    ${shown?.description && html`<p class="muted" style="margin:0.5rem 0 0">${shown.description}</p>`}
    ${confirming && html`<div class="notice" role="alertdialog" aria-label="Confirm corpus deletion" style="margin-top:0.75rem">
      Delete the corpus <strong>${corpus}</strong>? Its ${fmtInt(shown?.document_count)} documents stay, with their
      chunks and experiments; only the grouping goes.
      <div class="row" style="margin-top:0.5rem">
        <button class="danger" onClick=${drop} disabled=${busy}>${busy ? "Deleting…" : "Delete the corpus"}</button>
        <button class="secondary" onClick=${() => setConfirming(false)} disabled=${busy}>Cancel</button>
      </div></div>`}
    <div class="row" style="margin-top:0.75rem">
      <span class="muted" data-testid="picked-count">${ids.length ? `${fmtInt(ids.length)} selected:`
        : "Tick documents in the list to put them in a corpus."}</span>
      ${ids.length > 0 && html`
        ${list.length > 0 && html`<label>Corpus
          <select aria-label="Corpus for the selected documents" value=${target} onChange=${(e) => setTarget(e.target.value)}>
            ${list.map((c) => html`<option key=${c.id} value=${c.name}>${c.name}</option>`)}</select></label>
          <button class="secondary" onClick=${add} disabled=${busy || !target}>Add to corpus</button>
          <button class="secondary" onClick=${remove} disabled=${busy || !target}>Remove from corpus</button>`}
        <button class="secondary" onClick=${() => setCreating(true)} disabled=${creating}>New corpus…</button>
        <button class="link" onClick=${() => onPicked(new Set())}>clear selection</button>`}
    </div>
    ${creating && html`<form class="row" style="margin-top:0.75rem" aria-label="New corpus" onSubmit=${create}>
      <label>Name<input type="text" required maxlength="200" value=${name} onInput=${(e) => setName(e.target.value)}
        placeholder="letters, digits, space . _ -" /></label>
      <label style="flex:1">Description<input type="text" value=${description} placeholder="optional"
        onInput=${(e) => setDescription(e.target.value)} /></label>
      <button type="submit" class="primary" disabled=${busy}>Create with ${fmtInt(ids.length)} document${ids.length === 1 ? "" : "s"}</button>
      <button type="button" class="secondary" onClick=${() => setCreating(false)}>Cancel</button>
    </form>`}
    ${note && html`<div class="muted" role="status" style="margin-top:0.5rem">${note}</div>`}
    <${ErrorBox} error=${error} />
    ${shown && processing && html`<div style="margin-top:1rem"><${ProcessPanel} key=${shown.id}
      title=${`Process the corpus ${shown.name}`} path=${`${path(shown.name)}/process`} Result=${CorpusOutcome}
      onDone=${() => emit(CHANGED, {})} /></div>`}
  </div>`;
}

// The corpus job's result: per strategy, documents processed / skipped / failed, then the failed ones and why.
function CorpusOutcome({ result }) {
  const failures = result.strategies.flatMap((s) => s.documents.filter((d) => d.status === "failed")
    .map((d) => ({ ...d, strategy: s.strategy })));
  return html`<div class="stack">
    <h3>${`Outcome · ${fmtInt(result.documents)} documents · ${fmtInt(result.processed)} processed, ${
      fmtInt(result.skipped)} skipped, ${fmtInt(result.failed)} failed`}</h3>
    <${LanguageNotices} result=${result} /><${SizeNotices} result=${result} />
    <div style="overflow-x:auto"><table class="data" aria-label="Corpus outcome per strategy">
      <thead><tr><th>strategy</th><th class="num">processed</th><th class="num">skipped</th><th class="num">failed</th>
        <th class="num">chunks indexed</th><th class="num">chunk / embed / index</th><th class="num">time</th></tr></thead>
      <tbody>${result.strategies.map((s) => html`<tr key=${s.strategy}>
        <td>${s.strategy}</td><td class="num">${fmtInt(s.processed)}</td><td class="num">${fmtInt(s.skipped)}</td>
        <td class="num">${s.failed ? html`<span class="badge bad">${fmtInt(s.failed)}</span>` : "0"}</td>
        <td class="num">${fmtInt(s.chunks)}</td>
        <td class="num">${["chunk", "embed", "index"].map((stage) => `${fmt(s.timings?.[stage], 1)} s`).join(" / ")}</td>
        <td class="num">${(s.duration_ms / 1000).toFixed(1)} s</td></tr>`)}</tbody>
    </table></div>
    ${failures.length > 0 && html`<div class="scroll" style="max-height:40vh"><table class="data" aria-label="Failed documents">
      <thead><tr><th>document</th><th>strategy</th><th>reason</th></tr></thead>
      <tbody>${failures.map((d) => html`<tr key=${`${d.strategy}-${d.document_id}`}>
        <td>${d.filename || d.document_id}</td><td>${d.strategy}</td>
        <td style="overflow-wrap:anywhere">${d.message || d.error}</td></tr>`)}</tbody>
    </table></div>`}
  </div>`;
}

// ------------------------------------------------------------------------------------------------ list

function DocumentList({ spec, selected, onSelect, corpus, picked, onPicked }) {
  const [page, setPage] = useState(0);
  const [tick, setTick] = useState(0);
  useEffect(() => on(CHANGED, () => setTick((t) => t + 1)), []);
  useEffect(() => setPage(0), [corpus]);
  const { data, error, loading } = useApi(
    () => api("/documents", { query: { mime_type: spec.mimeTypes, corpus, limit: LIST_PAGE, offset: page * LIST_PAGE } }),
    [page, tick, corpus],
  );
  const pages = data ? Math.max(1, Math.ceil(data.total / LIST_PAGE)) : 1;
  // A deletion can empty the last page: step back to one that exists.
  useEffect(() => { if (data && page > 0 && page >= pages) setPage(pages - 1); }, [data, pages]);
  const toggle = (ids, on) => onPicked((set) => {
    const next = new Set(set);
    for (const id of ids) on ? next.add(id) : next.delete(id);
    return next;
  });
  const pageIds = (data?.items || []).map((doc) => doc.id);
  const allPicked = pageIds.length > 0 && pageIds.every((id) => picked.has(id));
  return html`<div class="panel">
    <h2>${spec.title}${corpus ? ` in ${corpus}` : ""} ${data && html`<span class="muted">(${fmtInt(data.total)})</span>`}</h2>
    <${ErrorBox} error=${error} />
    ${loading && !data && html`<${Spinner} label="Loading documents…" />`}
    ${data && data.total === 0 && html`<p class="muted">${corpus ? `No ${spec.noun} in this corpus.`
      : `No ${spec.noun} yet: upload one above.`}</p>`}
    ${data && data.total > 0 && html`<div style="overflow-x:auto"><table class="data" aria-label=${`${spec.title} list`}>
      <thead><tr><th><input type="checkbox" checked=${allPicked} aria-label="Select every document on this page"
          onChange=${(e) => toggle(pageIds, e.target.checked)} /></th>
        <th>file</th><th>state</th><th class="num">pages</th><th class="num">headings</th>
        <th>chunks per strategy</th><th class="num">size</th></tr></thead>
      <tbody>${data.items.map((doc) => html`<tr key=${doc.id} class=${`clickable${doc.id === selected ? " selected" : ""}`}
          onClick=${() => onSelect(doc.id)}>
        <td onClick=${(e) => e.stopPropagation()}><input type="checkbox" checked=${picked.has(doc.id)}
          aria-label=${`Select ${doc.source_key}`} onChange=${(e) => toggle([doc.id], e.target.checked)} /></td>
        <td><button class="link" aria-pressed=${doc.id === selected} onClick=${(e) => { e.stopPropagation(); onSelect(doc.id); }}>
          ${doc.filename}</button>
          ${doc.source_key !== doc.filename && html`<div class="muted mono" title="source key">${doc.source_key}</div>`}</td>
        <td><${StateBadge} doc=${doc} /></td>
        <td class="num">${doc.page_count ?? "—"}</td>
        <td class="num">${doc.heading_count}</td>
        <td>${Object.keys(doc.chunk_counts).length === 0 ? html`<span class="muted">not processed</span>`
          : Object.entries(doc.chunk_counts).map(([name, count]) => html`<span class="badge" style="margin:0 0.25rem 0.15rem 0;white-space:nowrap">
              ${name} ${fmtInt(count)}</span>`)}</td>
        <td class="num">${bytes(doc.file_size)}</td>
      </tr>`)}</tbody>
    </table></div>`}
    ${pages > 1 && html`<div class="pager"><button class="secondary" disabled=${page === 0}
        onClick=${() => setPage(page - 1)} aria-label="Previous page of documents">‹</button>
      <span class="muted">${page + 1} / ${pages}</span>
      <button class="secondary" disabled=${page >= pages - 1} onClick=${() => setPage(page + 1)}
        aria-label="Next page of documents">›</button></div>`}
  </div>`;
}

const STATE_TONE = { indexed: "good", failed: "bad", parsing: "warn", chunking: "warn", embedding: "warn" };

function StateBadge({ doc }) {
  return html`<span class=${`badge ${STATE_TONE[doc.status] || ""}`} title=${doc.error_message || ""}>${doc.status}</span>`;
}

// ------------------------------------------------------------------------------------------------ one document

function DocumentDetail({ id, openTab, onDeleted }) {
  const [tick, setTick] = useState(0);
  const [runTick, setRunTick] = useState(0);
  const { data: doc, error, loading } = useApi(() => api(`/documents/${id}`), [id, tick]);
  if (error) return html`<div class="panel"><${ErrorBox} error=${error} /></div>`;
  if (!doc) return html`<div class="panel">${loading && html`<${Spinner} label="Loading the document…" />`}</div>`;
  const processed = () => { setTick((t) => t + 1); setRunTick((t) => t + 1); emit(CHANGED, { id }); };
  return html`<div class="stack">
    <${Summary} doc=${doc} openTab=${openTab} onDeleted=${onDeleted}
      onChanged=${() => { setTick((t) => t + 1); emit(CHANGED, { id }); }} />
    <div class="grid two">
      <div class="panel"><h2>${doc.kind === "code" ? "Definitions" : "Sections"}</h2>
        <${SectionTree} tree=${doc.tree} code=${doc.kind === "code"} /></div>
      <${MarkdownPreview} doc=${doc} />
    </div>
    <div class="panel"><${ProcessPanel} title="Process" path=${`/documents/${doc.id}/process`} Result=${Outcome}
      onDone=${processed} /></div>
    <${ChunkPreview} doc=${doc} refresh=${runTick} />
  </div>`;
}

function Summary({ doc, openTab, onDeleted, onChanged }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const ask = () => {
    // First the Query tab's document (remembered even before that tab mounts), then the tab: one history entry.
    emit("select-document", { id: doc.id });
    openTab("query");
  };
  const remove = async () => {
    setBusy(true);
    setError(null);
    try {
      await api(`/documents/${doc.id}`, { method: "DELETE" });
      emit(CHANGED, { id: doc.id, deleted: true });
      onDeleted();
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  const counts = Object.entries(doc.chunk_counts);
  return html`<div class="panel">
    <div class="row" style="justify-content:space-between;align-items:center">
      <h2 style="margin:0;overflow-wrap:anywhere">${doc.filename} <${StateBadge} doc=${doc} /></h2>
      <div class="row">
        <button class="primary" onClick=${ask}>Ask a question</button>
        <button class="danger" onClick=${() => setConfirming(true)} disabled=${confirming}>Delete…</button>
      </div>
    </div>
    ${confirming && html`<div class="notice" role="alertdialog" aria-label="Confirm deletion" style="margin-top:0.75rem">
      Delete <strong>${doc.filename}</strong> with its chunks, vectors, queries and experiments? This cannot be undone.
      <div class="row" style="margin-top:0.5rem">
        <button class="danger" onClick=${remove} disabled=${busy}>${busy ? "Deleting…" : "Delete for good"}</button>
        <button class="secondary" onClick=${() => setConfirming(false)} disabled=${busy}>Cancel</button>
      </div></div>`}
    <${ErrorBox} error=${error} />
    ${doc.status === "failed" && doc.error_message && html`<div class="error" role="alert" style="margin-top:0.75rem">
      ${doc.error_message}</div>`}
    <dl class="kv" style=${{ ...KV_WRAP, marginTop: "0.75rem" }}>
      <dt>source key</dt><dd class="mono">${doc.source_key}</dd>
      <dt>corpora</dt><dd>${doc.corpora?.length ? doc.corpora.join(", ") : "none"}</dd>
      <dt>type</dt><dd>${doc.mime_type}</dd>
      <dt>size</dt><dd>${bytes(doc.file_size)}</dd>
      <dt>pages</dt><dd>${doc.page_count ?? "—"}</dd>
      <dt>language</dt><dd><${LanguageField} doc=${doc} onChanged=${onChanged} /></dd>
      <dt>kind</dt><dd>${doc.kind === "code" ? `source code (${doc.code_language || "unknown language"})` : "text"}</dd>
      <dt>paragraphs</dt><dd>${fmtInt(doc.paragraph_count)}</dd>
      <dt>headings</dt><dd>${fmtInt(doc.heading_count)}${doc.heading_source ? ` (from ${doc.heading_source})` : ""}</dd>
      <dt>markdown</dt><dd>${fmtInt(doc.markdown_chars)} characters</dd>
      <dt>chunks</dt><dd>${counts.length ? counts.map(([n, c]) => `${n} ${fmtInt(c)}`).join(" · ") : "not processed yet"}</dd>
      <dt>id</dt><dd class="mono">${doc.id}</dd>
    </dl>
  </div>`;
}

// How a document's language was found, in words: what documents.language_detection records.
const LANGUAGE_SOURCES = { detected: "detected", declared: "declared by the file", user: "set by you" };

// The document's language, its source and confidence, and a form to set it (PATCH /documents/{id}): the server
// says which models that already processed the document do not read the new language.
function LanguageField({ doc, onChanged }) {
  const [editing, setEditing] = useState(false);
  const [code, setCode] = useState(doc.language || "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [warnings, setWarnings] = useState([]);
  const save = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = await api(`/documents/${doc.id}`, { method: "PATCH", json: { language: code.trim() } });
      setWarnings(body.warnings);
      setEditing(false);
      onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const source = LANGUAGE_SOURCES[doc.language_source] || doc.language_source || "detected";
  const confidence = doc.language_confidence === null || doc.language_confidence === undefined
    ? "" : ` · confidence ${pct(doc.language_confidence)}`;
  return html`<span data-testid="document-language">
    <span class="mono">${doc.language || "—"}</span>${doc.language === "und" ? " (undetermined)" : ""}
    <span class="muted"> · ${source}${confidence}</span>
    ${!editing && html` <button class="secondary small" onClick=${() => { setCode(doc.language || ""); setEditing(true); }}>
      Change language…</button>`}
    ${editing && html`<form class="row" style="margin-top:0.4rem" onSubmit=${save} aria-label="Set the language">
      <label>Language code <input value=${code} onInput=${(e) => setCode(e.target.value)} size="6" required
        placeholder="de" title="An ISO 639-1 code (en, de, fr, fa, …) or und (undetermined)" /></label>
      <button class="primary" type="submit" disabled=${busy}>${busy ? "Saving…" : "Save"}</button>
      <button class="secondary" type="button" onClick=${() => { setEditing(false); setError(null); }}>Cancel</button>
    </form>`}
    <${ErrorBox} error=${error} />
    ${warnings.map((w) => html`<div class="notice" role="alert" data-testid="language-change-warning">${w}</div>`)}
  </span>`;
}

function SectionTree({ tree, code }) {
  const sections = (tree?.root?.children || []).filter(isSection);
  if (sections.length === 0) {
    return html`<p class="muted">${code ? "No definitions (classes, functions) were found: the file is one section."
      : "No headings were found: the document is one section."}</p>`;
  }
  return html`<div class="scroll"><ul class="tree" style="padding-left:0" aria-label="Section tree">${sections.map((node, i) =>
    html`<${TreeNode} key=${i} node=${node} depth=${0} code=${code} />`)}</ul></div>`;
}

const isSection = (node) => node.node_type === "section" || node.node_type === "article";

function TreeNode({ node, depth, code }) {
  const children = (node.children || []).filter(isSection);
  const paragraphs = (node.children || []).length - children.length;
  // A code heading is a signature: shown as code.
  const label = html`<span class=${code ? "mono" : ""}>${node.heading || "(untitled)"}</span>
    ${node.node_type === "article" && html` <span class="badge accent">article</span>`}
    ${paragraphs > 0 && html` <span class="muted">· ${paragraphs} ¶</span>`}`;
  if (children.length === 0) return html`<li>${label}</li>`;
  return html`<li><details open=${depth < 1}><summary>${label}</summary>
    <ul class="tree">${children.map((child, i) =>
      html`<${TreeNode} key=${i} node=${child} depth=${depth + 1} code=${code} />`)}</ul>
  </details></li>`;
}

function MarkdownPreview({ doc }) {
  const [whole, setWhole] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const loadAll = async () => {
    setBusy(true);
    try { setWhole(await api(`/documents/${doc.id}/markdown`)); } catch (e) { setError(e); }
    setBusy(false);
  };
  return html`<div class="panel">
    <h2>${doc.kind === "code" ? "Source" : "Markdown"} ${doc.markdown_truncated && !whole ? html`<span class="muted">(first ${fmtInt(doc.markdown_preview.length)}${" "}
      of ${fmtInt(doc.markdown_chars)} characters)</span>` : null}</h2>
    <div class="scroll doc-text" tabindex="0" aria-label="Markdown preview">${whole ?? doc.markdown_preview}</div>
    <${ErrorBox} error=${error} />
    ${doc.markdown_truncated && !whole && html`<div class="row" style="margin-top:0.5rem">
      <button class="secondary" onClick=${loadAll} disabled=${busy}>${busy ? "Loading…" : "Show the whole markdown"}</button></div>`}
  </div>`;
}

// ------------------------------------------------------------------------------------------------ process

// The processing form (strategies, models, parameters) for one document or a whole corpus: ``path`` is where it
// posts, ``Result`` renders the finished job's result.
function ProcessPanel({ title, path, Result, onDone }) {
  // "": the role's default, left to the server, which picks a model covering the documents' language when the Admin
  // role is untouched; a model picked here is sent, and refused for a language it does not cover.
  const [corpus, setCorpus] = useState("");
  // The strategies with the size defaults of the chosen Corpus model (the Admin role's for ""): fetched again when
  // the model changes, the previous answer shown meanwhile.
  const strategies = useApi(() => api(corpus ? `/strategies?corpus_model=${encodeURIComponent(corpus)}` : "/strategies"),
    [corpus]);
  const models = useApi(() => api("/admin/embedding-models"), []);
  // null until /strategies answers: then chunkbench's own (what "all strategies" runs); variants and library
  // chunkers are offered unchecked.
  const [checked, setChecked] = useState(null);
  const [boundary, setBoundary] = useState("");
  const [mismatch, setMismatch] = useState(false); // allow_language_mismatch: processed, with a warning on the run
  const [params, setParams] = useState({}); // {strategy: {field: raw input}}: only what the person changed
  const [job, setJob] = useState(null);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);

  useEffect(() => {
    if (strategies.data && !checked) setChecked(new Set(strategies.data.filter((s) => s.in_default_set).map((s) => s.name)));
  }, [strategies.data]);

  if (strategies.error || models.error) return html`<div><h2>${title}</h2>
    <${ErrorBox} error=${strategies.error || models.error} /></div>`;
  if (!strategies.data || !models.data || !checked) return html`<div><h2>${title}</h2>
    <${Spinner} label="Loading strategies and models…" /></div>`;

  const chosen = strategies.data.filter((s) => checked.has(s.name));
  const needsBoundary = chosen.some((s) => s.needs_boundary_model);
  const toggle = (name) => setChecked((set) => { const next = new Set(set); next.has(name) ? next.delete(name) : next.add(name); return next; });
  const setParam = (strategy, field, value) =>
    setParams((all) => ({ ...all, [strategy]: { ...(all[strategy] || {}), [field]: value } }));

  const run = async () => {
    setError(null);
    setResult(null);
    let body;
    try {
      body = {
        strategies: chosen.map((s) => s.name),
        ...(corpus ? { corpus_model_id: corpus } : {}),
        ...(mismatch ? { allow_language_mismatch: true } : {}),
        params: Object.fromEntries(chosen.map((s) => [s.name, paramValues(s, params[s.name])])
          .filter(([, values]) => Object.keys(values).length > 0)),
      };
      if (needsBoundary && boundary) body.boundary_model_id = boundary;
    } catch (e) {
      setError(e);
      return;
    }
    setJob({ progress: 0, message: "starting" });
    try {
      const started = await api(path, { method: "POST", json: body });
      setJob((j) => ({ ...j, id: started.job_id }));
      const done = await waitForJob(started.job_id, {
        onProgress: (progress, message, polled) => setJob((j) => ({ ...j, progress, message, status: polled.status })),
      });
      setResult(done.result);
      onDone();
    } catch (e) {
      setError(e);
      if (e.cancelled) onDone(); // what it finished before stopping is in the lists now
    }
    setJob(null);
  };
  const cancel = async () => {
    setJob((j) => ({ ...j, status: "cancelling" }));
    try { await cancelJob(job.id); } catch (e) { setError(e); }
  };

  return html`<section aria-label=${title}>
    <h2>${title}</h2>
    <div class="stack">
      <fieldset><legend>Strategies</legend><div class="checks">
        ${strategies.data.filter((s) => s.in_default_set).map((s) => html`<${StrategyCheck} key=${s.name} strategy=${s}
          checked=${checked.has(s.name)} onToggle=${toggle} disabled=${!!job} />`)}
      </div></fieldset>
      ${strategies.data.some((s) => !s.in_default_set) ? html`<fieldset><legend>More strategies, named explicitly</legend>
        <div class="checks">${strategies.data.filter((s) => !s.in_default_set).map((s) => html`<${StrategyCheck}
          key=${s.name} strategy=${s} checked=${checked.has(s.name)} onToggle=${toggle} disabled=${!!job} />`)}
        </div></fieldset>` : null}
      <div class="row">
        <label><span><${Term} name="corpus_model" /> (embeds the chunks)</span>
          <${ModelSelect} label="Corpus model" models=${models.data.models} value=${corpus} onChange=${setCorpus}
            fallback=${models.data.corpus_model_id} disabled=${!!job} /></label>
        <label><span><${Term} name="boundary_model" /> (semantic cuts)</span>
          <${ModelSelect} label="Boundary model" models=${models.data.models} value=${boundary} onChange=${setBoundary}
            fallback=${models.data.boundary_model_id} disabled=${!!job || !needsBoundary} /></label>
        <label title="A document in a language the chosen model does not cover is refused; this processes it anyway and
          records the warning on the run"><input type="checkbox" checked=${mismatch} disabled=${!!job}
          onChange=${(e) => setMismatch(e.target.checked)} />Allow a model that does not read the language</label>
      </div>
      ${chosen.map((s) => html`<${StrategyParams} key=${s.name} strategy=${s} values=${params[s.name] || {}}
        onChange=${(field, value) => setParam(s.name, field, value)} disabled=${!!job} />`)}
      ${sizeWarnings(chosen, params).map((w) => html`<div class="notice" role="alert" data-testid="size-warning">
        <span class="badge warn">beyond window</span> ${w}</div>`)}
      <div class="row">
        <button class="primary" onClick=${run} disabled=${!!job || chosen.length === 0}>
          ${job ? "Processing…" : `Run ${chosen.length} ${chosen.length === 1 ? "strategy" : "strategies"}`}</button>
        ${chosen.length === 0 && html`<span class="muted">Choose at least one strategy.</span>`}
      </div>
      ${job && html`<${ProgressBar} value=${job.progress}
          label=${`${Math.round(job.progress * 100)}% · ${job.message}`} />
        <div class="row"><button class="secondary" onClick=${cancel} disabled=${!job.id || job.status === "cancelling"}>
          ${job.status === "cancelling" ? "Cancelling…" : "Cancel"}</button>
          <span class="muted">stops after the current ${path.startsWith("/corpora/") ? "document" : "strategy"};
            what is done is kept</span></div>`}
      <${ErrorBox} error=${error} />
      ${result && html`<${Result} result=${result} />`}
    </div>
  </section>`;
}

function ModelSelect({ label, models, value, onChange, fallback, disabled }) {
  // Unavailable models are listed (so a person learns they exist) but cannot be picked; the note says why.
  return html`<select aria-label=${label} value=${value} onChange=${(e) => onChange(e.target.value)} disabled=${disabled}
      style="max-width:min(26rem, 80vw)">
    <option value="" title="The Admin role's model; left as it is, a document it cannot read gets multilingual-e5-small">
      Default: ${fallback} (or one that reads the language)</option>
    ${models.map((m) => html`<option value=${m.id} disabled=${!m.available} title=${m.availability_note || ""}>
      ${m.display_name || m.id}${m.available ? "" : " (not available)"}</option>`)}
  </select>`;
}

// A JSON Schema property as the form sees it: its type, bounds, enum, default, and whether null is allowed.
function fieldSpec(property) {
  const options = property.anyOf || [property];
  const base = options.find((o) => o.type !== "null") || {};
  return { ...base, nullable: options.some((o) => o.type === "null"), default: property.default,
    title: property.title, description: property.description };
}

// A size parameter's default is the chosen Corpus model's (``size_defaults``), told in the field's hint.
function modelSpec(spec, strategy, name) {
  const sized = (strategy.size_defaults || {})[name];
  if (sized === undefined) return spec;
  return { ...spec, default: sized, description: `${spec.description || ""} Default for ${strategy.corpus_model_id}: ${
    sized} (what it reads whole: up to ${strategy.readable_sizes[name]}).`.trim() };
}

function StrategyParams({ strategy, values, onChange, disabled }) {
  const properties = Object.entries(strategy.params_schema?.properties || {});
  if (properties.length === 0) return null;
  return html`<fieldset><legend>${strategy.name} parameters</legend><div class="row">
    ${properties.map(([name, property]) => html`<${ParamField} key=${name} name=${name}
      spec=${modelSpec(fieldSpec(property), strategy, name)}
      value=${values[name]} onChange=${(v) => onChange(name, v)} disabled=${disabled} strategy=${strategy.name} />`)}
  </div></fieldset>`;
}

// The sizes of the chosen strategies (typed, or the Corpus model's default) that the model would not read whole:
// said before processing, as the server's plan says it (``size_warnings``) once the job is sent.
function sizeWarnings(chosen, params) {
  const warnings = [];
  for (const s of chosen) {
    for (const [name, readable] of Object.entries(s.readable_sizes || {})) {
      const typed = params[s.name]?.[name];
      const value = typed !== undefined && typed !== "" ? Number(typed)
        : (s.size_defaults || {})[name] ?? s.params_schema?.properties?.[name]?.default;
      if (value > readable) {
        warnings.push(`${s.name}: ${name}=${value} is beyond what ${s.corpus_model_id} reads whole (${name} up to ${
          readable} cl100k tokens of English prose); most of these chunks would be embedded from their beginning only.`);
      }
    }
  }
  return warnings;
}

function ParamField({ name, spec, value, onChange, disabled, strategy }) {
  const label = `${spec.title || name}`;
  const aria = `${strategy} ${label}`;
  const defaultText = spec.default === null || spec.default === undefined ? "default" : JSON.stringify(spec.default);
  let control;
  if (spec.enum) {
    control = html`<select aria-label=${aria} value=${value ?? ""} onChange=${(e) => onChange(e.target.value)} disabled=${disabled}>
      <option value="">default (${defaultText})</option>
      ${spec.enum.map((option) => html`<option value=${option}>${option}</option>`)}</select>`;
  } else if (spec.type === "boolean") {
    control = html`<select aria-label=${aria} value=${value ?? ""} onChange=${(e) => onChange(e.target.value)} disabled=${disabled}>
      <option value="">default (${defaultText})</option><option value="true">true</option><option value="false">false</option></select>`;
  } else if (spec.type === "integer" || spec.type === "number") {
    const min = spec.minimum ?? (spec.exclusiveMinimum !== undefined ? spec.exclusiveMinimum : undefined);
    control = html`<input type="number" aria-label=${aria} value=${value ?? ""} placeholder=${defaultText}
      min=${min} max=${spec.maximum} step=${spec.type === "integer" ? 1 : "any"} disabled=${disabled}
      onInput=${(e) => onChange(e.target.value)} />`;
  } else {
    control = html`<input type="text" aria-label=${aria} value=${value ?? ""} disabled=${disabled}
      placeholder=${spec.type === "array" ? `JSON list, ${defaultText}` : defaultText} onInput=${(e) => onChange(e.target.value)} />`;
  }
  return html`<label title=${spec.description || ""}>${label}${rangeText(spec)}${control}</label>`;
}

function rangeText(spec) {
  const low = spec.minimum ?? spec.exclusiveMinimum;
  if (low === undefined && spec.maximum === undefined) return "";
  const open = spec.exclusiveMinimum !== undefined ? "(" : "[";
  return ` ${open}${low ?? "…"}, ${spec.maximum ?? "…"}]`;
}

// The parameters to send: typed values of the fields the person filled in; empty fields keep the server's default.
function paramValues(strategy, raw = {}) {
  const out = {};
  for (const [name, property] of Object.entries(strategy.params_schema?.properties || {})) {
    const text = raw[name];
    if (text === undefined || text === "") continue;
    const spec = fieldSpec(property);
    if (spec.type === "integer" || spec.type === "number") out[name] = Number(text);
    else if (spec.type === "boolean") out[name] = text === "true";
    else if (spec.type === "array") {
      try { out[name] = JSON.parse(text); } catch {
        throw new Error(`${strategy.name} ${spec.title || name}: write a JSON list, e.g. ["\\n\\n", "\\n", " "].`);
      }
    } else out[name] = text;
  }
  return out;
}

// The sizes the plan found beyond what the Corpus model reads whole (processed as asked): the server's words.
function SizeNotices({ result }) {
  return (result.size_warnings || []).map((w) => html`<div class="notice" role="note" data-testid="size-warning-result">
    <span class="badge warn">beyond window</span> ${w.message}</div>`);
}

function Outcome({ result }) {
  const rows = [...(result.completed || []), ...(result.failed || [])];
  return html`<div><h3>Outcome · document ${result.status}</h3><${LanguageNotices} result=${result} />
    <${SizeNotices} result=${result} />
    <${RunTable} runs=${rows.map((r) => ({
    strategy: r.strategy, status: r.status, chunks: r.chunk_count, diagnostics: r.diagnostics, ms: r.duration_ms,
    error: r.error?.message || r.error || r.message,
  }))} /></div>`;
}

function RunTable({ runs }) {
  return html`<div style="overflow-x:auto"><table class="data" aria-label="Strategy outcomes">
    <thead><tr><th>strategy</th><th>status</th><th class="num">chunks</th>
      <th class="num"><${Term} name="median_tokens" /></th>
      <th class="num"><${Term} name="p95_tokens" /></th><th class="num"><${Term} name="tiny">tiny</${Term}></th>
      <th class="num"><${Term} name="mid_sentence">mid-sentence</${Term}></th>
      <th class="num"><${Term} name="coverage" /></th>
      <th class="num"><${Term} name="beyond_window" /></th>
      <th class="num">time</th></tr></thead>
    <tbody>${runs.map((r) => {
      const d = r.diagnostics || {};
      return html`<tr key=${r.strategy}>
        <td>${r.strategy}</td>
        <td><span class=${`badge ${r.status === "completed" ? "good" : "bad"}`}>${r.status}</span>
          ${r.error && html`<div class="muted">${typeof r.error === "string" ? r.error : JSON.stringify(r.error)}</div>`}</td>
        <td class="num">${fmtInt(r.chunks)}</td>
        <td class="num">${fmt(d.tokens?.median, 0)}</td>
        <td class="num">${fmt(d.tokens?.p95, 0)}</td>
        <td class="num">${pct(d.tiny_share)}</td>
        <td class="num">${pct(d.mid_sentence_share)}</td>
        <td class="num">${fmt(d.coverage_ratio, 2)}</td>
        <td class="num">${d.window ? html`<span class=${d.window.chunks_beyond ? "badge warn" : ""}>${pct(d.window.chunk_share)}</span>` : "—"}</td>
        <td class="num">${r.ms === null || r.ms === undefined ? "—" : `${(r.ms / 1000).toFixed(1)} s`}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

// ------------------------------------------------------------------------------------------------ formatting

function bytes(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}


// One strategy to run: a library's names its library and version, or, not installed, how to install it (and cannot be
// chosen: processing would answer 400 with that command).
function StrategyCheck({ strategy: s, checked, onToggle, disabled }) {
  const missing = s.library && !s.available;
  const title = missing ? `${s.description} Not installed: ${s.install}` : s.description;
  return html`<label title=${title} class=${missing ? "muted" : ""}><input type="checkbox" checked=${checked && !missing}
    onChange=${() => onToggle(s.name)} disabled=${disabled || missing} />${s.name}${s.library ? html` <span
    class="muted small">${missing ? `${s.library} · not installed` : `${s.library} ${s.library_version}`}</span>` : null}</label>`;
}
