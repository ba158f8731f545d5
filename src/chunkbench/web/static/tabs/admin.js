// Admin: health of the app, the database, Qdrant and the LLM; embedding model roles and thresholds; the chatbot's
// serving configuration; Qdrant collections (wipe, delete); question files (upload, delete); the embedding cache and
// the consistency of the two stores. Two roles (GET /admin/me): the operator acts on the whole deployment; a tenant
// admin on its own tenant, so the deployment-wide controls (model roles, thresholds, dropping a collection, the shared
// embedding cache, the consistency report) are not shown to it at all (the server refuses them with 403 anyway).
import { html, useEffect, useState, useRef, ErrorBox, Spinner, ProgressBar, fmt, fmtInt, useApi, usePager, LIMITS } from "../ui.js";
import { api, upload } from "../api.js";
import { Unavailable, rerankers, useCapabilities } from "../capabilities.js";
import { Term } from "../glossary.js";

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");

export function AdminTab({ active }) {
  // Health is re-checked whenever the tab is opened again: it is the first thing a person looks at here.
  const [tick, setTick] = useState(0);
  const wasActive = useRef(active);
  useEffect(() => {
    if (active && !wasActive.current) setTick((t) => t + 1);
    wasActive.current = active;
  }, [active]);
  const me = useApi(() => api("/admin/me"), [tick]);
  // Until the key's role is known (or when it cannot be), only what a tenant admin may do is offered.
  const operator = me.data?.role === "operator";
  return html`
    <div class="stack">
      <${Role} me=${me.data} />
      <div class="grid halves">
        <${Health} tick=${tick} />
        <${Serving} tick=${tick} />
      </div>
      <${EmbeddingModels} tick=${tick} operator=${operator} />
      <${Collections} tick=${tick} operator=${operator} />
      ${operator ? html`<div class="grid halves">
        <${EmbeddingCache} tick=${tick} />
        <${Consistency} tick=${tick} />
      </div>` : null}
      <${QuestionFiles} tick=${tick} />
    </div>`;
}

const OPERATOR_HINT = "An operator key (made on the server's machine: chunkbench admin key create --operator) changes it.";

// Whose Admin tab this is: the operator's (the whole deployment) or a tenant admin's (its own tenant).
function Role({ me }) {
  if (!me) return null;
  return html`<p class="muted small" data-testid="admin-role" data-role=${me.role}>
    ${me.role === "operator"
      ? html`<span class="badge accent">operator</span> This key acts on the whole deployment: every tenant's points,
          the models and the shared embedding cache.`
      : html`<span class="badge">tenant admin</span> This key administers the tenant <strong class="mono">${me.tenant_id}</strong>:
          its serving configuration, question files and its own points. Deployment-wide settings are the operator's.`}
  </p>`;
}

// A modal confirmation (native <dialog>: focus stays inside, Escape cancels) that names what will be destroyed.
function Confirm({ request, onClose }) {
  const ref = useRef(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (request && !dialog.open) { setError(null); dialog.showModal(); }
    if (!request && dialog.open) dialog.close();
  }, [request]);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await request.action();
      onClose(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`
    <dialog ref=${ref} class="confirm" aria-labelledby="confirm-title" onCancel=${(e) => { e.preventDefault(); onClose(false); }}>
      ${request ? html`
        <h2 id="confirm-title">${request.title}</h2>
        <p>${request.message}</p>
        <${ErrorBox} error=${error} />
        <div class="row end">
          <button type="button" class="secondary" onClick=${() => onClose(false)} autofocus>Cancel</button>
          <button type="button" class="danger" onClick=${confirm} disabled=${busy}>${busy ? "Working…" : request.confirm}</button>
        </div>` : null}
    </dialog>`;
}

// ---------------------------------------------------------------------------------------------------- health

const HEALTH_PARTS = [["app", "App"], ["database", "Database"], ["qdrant", "Qdrant"], ["llm", "LLM"]];
const HEALTH_LABELS = { ok: "ok", error: "error", not_configured: "not configured", reachable: "reachable",
  unreachable: "unreachable" };

function Health({ tick }) {
  const health = useApi(() => api("/admin/health"), [tick]);
  const data = health.data;
  return html`
    <section class="panel" aria-label="Health">
      <div class="row between">
        <h2>Health ${data ? html`<span class="badge ${data.status === "ok" ? "good" : "bad"}">${data.status}</span>` : null}</h2>
        <button type="button" class="secondary" onClick=${health.reload} disabled=${health.loading}>
          ${health.loading ? "Checking…" : "Check again"}</button>
      </div>
      <${ErrorBox} error=${health.error} />
      ${health.loading && !data ? html`<${Spinner} label="Checking the database, Qdrant and the LLM…" />` : null}
      ${data ? html`<table class="data" data-testid="admin-health">
        <thead><tr><th>part</th><th>state</th><th>detail</th></tr></thead>
        <tbody>${HEALTH_PARTS.map(([key, label]) => {
          const part = data[key];
          const kind = !part.ok ? "bad" : part.status === "not_configured" ? "" : "good";
          return html`<tr><td>${label}</td>
            <td><span class="badge ${kind}">${HEALTH_LABELS[part.status] || part.status}</span></td>
            <td class="wrap">${part.detail}</td></tr>`;
        })}</tbody></table>` : null}
    </section>`;
}

// ------------------------------------------------------------------------------------------ embedding models

function EmbeddingModels({ tick, operator }) {
  const registry = useApi(() => api("/admin/embedding-models"), [tick]);
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState("");
  useEffect(() => { if (registry.data) setData(registry.data); }, [registry.data]);
  const setRole = async (role, modelId) => {
    setError(null);
    setNotice("");
    try {
      setData(await api(`/admin/embedding-models/${role}`, { method: "PUT", json: { model_id: modelId } }));
      setNotice(`${role === "corpus" ? "Corpus" : "Boundary"} model set to ${modelId}. Running operations keep their model.`);
    } catch (err) {
      setError(err);
    }
  };
  const models = data?.models || [];
  const unavailable = models.filter((m) => (m.is_corpus_default || m.is_boundary_default) && m.available === false);
  const label = (m) => `${m.display_name || m.id}${m.available === false ? " — unavailable" : ""}`;
  const named = (id) => { const m = models.find((model) => model.id === id); return m ? label(m) : id; };
  return html`
    <section class="panel" aria-label="Embedding models">
      <h2>Embedding models</h2>
      <${ErrorBox} error=${registry.error} />
      ${!data && registry.loading ? html`<${Spinner} label="Loading models…" />` : null}
      ${data && !operator ? html`
        <div class="row" data-testid="model-roles">
          <div><span><${Term} name="corpus_model" /> (embeds chunks and questions):</span> <strong>${named(data.corpus_model_id)}</strong></div>
          <div><span><${Term} name="boundary_model" /> (semantic cuts):</span> <strong>${named(data.boundary_model_id)}</strong></div>
        </div>
        <p class="muted small">The models and their thresholds are the deployment's. ${OPERATOR_HINT}</p>` : null}
      ${data && operator ? html`
        <div class="row">
          <label><span><${Term} name="corpus_model" /> (embeds chunks and questions)</span>
            <select value=${data.corpus_model_id} onChange=${(e) => setRole("corpus", e.target.value)} data-testid="corpus-role">
              ${models.map((m) => html`<option value=${m.id}>${label(m)}</option>`)}
            </select>
          </label>
          <label><span><${Term} name="boundary_model" /> (semantic cuts)</span>
            <select value=${data.boundary_model_id} onChange=${(e) => setRole("boundary", e.target.value)} data-testid="boundary-role">
              ${models.map((m) => html`<option value=${m.id}>${label(m)}</option>`)}
            </select>
          </label>
        </div>` : null}
      ${data ? html`
        ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
        ${unavailable.map((m) => html`<p class="error">${`${m.id} is a default role but is not available `
          + `(${m.availability_note}): processing with it fails until that is fixed.`}</p>`)}
        <${ErrorBox} error=${error} />
        <div class="scroll">
        <table class="data" data-testid="admin-models">
          <thead><tr><th>model</th><th>role</th><th class="num hide-narrow">dim</th><th>available</th>
            <th><${Term} name="semantic_threshold" /></th></tr></thead>
          <tbody>${models.map((m) => html`<tr>
            <td><div>${m.display_name || m.id}</div><div class="muted small mono">${m.id}</div></td>
            <td>${m.is_corpus_default ? html`<span class="badge accent">Corpus</span> ` : null}
              ${m.is_boundary_default ? html`<span class="badge accent">Boundary</span>` : null}</td>
            <td class="num hide-narrow">${m.dimension}</td>
            <td>${m.available === true ? html`<span class="badge good">yes</span>`
              : m.available === false ? html`<span class="badge bad" title=${m.availability_note}>no</span>`
              : html`<span class="badge" title=${m.availability_note}>remote</span>`}
              ${m.available !== true && m.availability_note ? html`<div class="muted small wrap hide-narrow">${m.availability_note}</div>` : null}</td>
            <td>${operator ? html`<${Threshold} model=${m} onSaved=${setData} />`
              : html`<span class="mono">${m.semantic_threshold}</span>${m.threshold_overridden
                ? html` <span class="badge warn">overridden (default ${m.default_semantic_threshold})</span>` : null}`}</td>
          </tr>`)}</tbody>
        </table></div>` : null}
    </section>`;
}

function thresholdProblem(text) {
  if (String(text).trim() === "") return "Enter a number.";
  const value = Number(text);
  if (!Number.isFinite(value)) return "Enter a number such as 0.3.";
  if (value <= 0 || value > 1) return "The threshold must be above 0 and at most 1.";
  return null;
}

function Threshold({ model, onSaved }) {
  const [text, setText] = useState(String(model.semantic_threshold));
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => setText(String(model.semantic_threshold)), [model.semantic_threshold]);
  const problem = thresholdProblem(text);
  const dirty = !problem && Number(text) !== model.semantic_threshold;
  const save = async (event) => {
    event.preventDefault();
    if (problem || !dirty) return;
    setError(null);
    try {
      onSaved(await api(`/admin/embedding-models/${encodeURIComponent(model.id)}/semantic-threshold`,
        { method: "PUT", json: { threshold: Number(text) } }));
      setSaved(true);
    } catch (err) {
      setError(err);
    }
  };
  const errorId = `threshold-error-${model.id}`;
  return html`
    <form class="inline" onSubmit=${save}>
      <input type="number" step="0.01" min="0" max="1" value=${text} aria-label=${`Semantic threshold of ${model.id}`}
        aria-invalid=${problem ? "true" : "false"} aria-describedby=${problem ? errorId : undefined}
        onInput=${(e) => { setText(e.target.value); setSaved(false); }} />
      <button type="submit" class="secondary" disabled=${!dirty} aria-label=${`Save the threshold of ${model.id}`}>Save</button>
      ${model.threshold_overridden ? html`<span class="badge warn" title=${`default ${model.default_semantic_threshold}`}>
        overridden (default ${model.default_semantic_threshold})</span>` : null}
      ${saved && !dirty ? html`<span class="muted small" role="status">saved</span>` : null}
      ${problem ? html`<div class="field-error" id=${errorId} role="alert">${problem}</div>` : null}
      <${ErrorBox} error=${error} />
    </form>`;
}

// ------------------------------------------------------------------------------------------------ serving

const SERVING_RETRIEVERS = ["dense", "bm25", "hybrid"];
const NUMBER_FIELDS = ["top_k", "candidate_k", "neighbor_prev", "neighbor_next"];

// The form's text inputs as the API's numbers (an empty candidate count means the server's default).
function servingBody(form) {
  const body = { ...form };
  for (const key of NUMBER_FIELDS) body[key] = body[key] === "" || body[key] === null ? null : Number(body[key]);
  if (body.neighbor_prev === null) body.neighbor_prev = 0;
  if (body.neighbor_next === null) body.neighbor_next = 0;
  return body;
}

function Serving({ tick }) {
  const loaded = useApi(() => Promise.all([api("/admin/serving"), api("/strategies"), api("/admin/embedding-models")]), [tick]);
  // A reranker that cannot run here is not offered (the saved one stays listed, marked, until it is changed).
  const capabilities = useCapabilities([tick]);
  const rerankOptions = rerankers(capabilities);
  const [form, setForm] = useState(null);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  useEffect(() => { if (loaded.data) setForm({ ...loaded.data[0] }); }, [loaded.data]);
  const set = (key) => (event) => { setForm({ ...form, [key]: event.target.value }); setSaved(false); };
  const toggle = (key) => (event) => { setForm({ ...form, [key]: event.target.checked }); setSaved(false); };
  const save = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setForm(await api("/admin/serving", { method: "PUT", json: servingBody(form) }));
      setSaved(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const [, strategies, registry] = loaded.data || [];
  // What the chosen strategy can do decides which knobs mean anything (its capabilities, from /strategies).
  const chosen = form && strategies ? strategies.find((s) => s.name === form.strategy) : null;
  const expands = Boolean(chosen && chosen.expands_neighbours);
  const parents = Boolean(chosen && chosen.has_parents);
  return html`
    <form class="panel stack" onSubmit=${save} aria-label="Serving configuration">
      <h2>Serving configuration</h2>
      <p class="muted small">What the chatbot and RAG APIs (<span class="mono">/api/query</span>, <span class="mono">/v1/query</span>,
        <span class="mono">/api/index</span>) answer and index with — through the same query pipeline a benchmark measures.</p>
      <${ErrorBox} error=${loaded.error} />
      ${!form && loaded.loading ? html`<${Spinner} label="Loading…" />` : null}
      ${form ? html`
        <div class="row">
          <label>Strategy
            <select value=${form.strategy} onChange=${set("strategy")}>
              ${strategies.map((s) => html`<option value=${s.name}>${s.name}</option>`)}
            </select>
          </label>
          <label>Corpus model
            <select value=${form.corpus_model_id} onChange=${set("corpus_model_id")}>
              ${registry.models.map((m) => html`<option value=${m.id}>${m.display_name || m.id}</option>`)}
            </select>
          </label>
          <label><${Term} name="retriever">Retriever</${Term}>
            <select value=${form.retriever} onChange=${set("retriever")}>
              ${SERVING_RETRIEVERS.map((r) => html`<option value=${r}>${r}</option>`)}
            </select>
          </label>
          <label>top_k
            <input type="number" min="1" max=${LIMITS.max_top_k} required value=${form.top_k} onInput=${set("top_k")} />
          </label>
        </div>
        <div class="row">
          <label><${Term} name="rerank">Rerank</${Term}>
            <select value=${form.rerank} onChange=${set("rerank")}>
              ${rerankOptions.map(([r, , ok, capability]) => html`<option value=${r}
                disabled=${!ok && r !== form.rerank} title=${capability?.detail || ""}>${r}${ok ? ""
                : " (not available)"}</option>`)}
            </select>
          </label>
          <label><${Term} name="candidate_k">Candidate pool</${Term}>
            <input type="number" min="1" max=${LIMITS.max_candidate_k} placeholder="server default" disabled=${form.rerank === "none"}
              value=${form.candidate_k ?? ""} onInput=${set("candidate_k")} />
          </label>
          <label>Neighbours before
            <input type="number" min="0" max=${LIMITS.max_neighbors} disabled=${!expands} value=${form.neighbor_prev} onInput=${set("neighbor_prev")} />
          </label>
          <label>Neighbours after
            <input type="number" min="0" max=${LIMITS.max_neighbors} disabled=${!expands} value=${form.neighbor_next} onInput=${set("neighbor_next")} />
          </label>
          <label class="check">
            <input type="checkbox" disabled=${!parents} checked=${form.parent_context} onChange=${toggle("parent_context")} />
            Parent context
          </label>
        </div>
        ${!expands ? html`<p class="muted small">Neighbor Expansion applies to strategies whose chunks are windows (fixed_size).</p>` : null}
        <${Unavailable} items=${rerankOptions.filter(([r]) => r !== "none").map(([r, text, , capability]) =>
          [`${text[0].toUpperCase()}${text.slice(1)} reranking`, capability])} />
        <div class="row">
          <button type="submit" class="primary" disabled=${busy}>${busy ? "Saving…" : "Save"}</button>
          ${saved ? html`<span class="muted" role="status">Saved: new chatbot questions use it.</span>` : null}
        </div>
        <${ErrorBox} error=${error} />` : null}
    </form>`;
}

// -------------------------------------------------------------------------------------------- collections

function Collections({ tick, operator }) {
  const [refresh, setRefresh] = useState(0);
  const collections = useApi(() => api("/admin/qdrant/collections"), [tick, refresh]);
  const [rows, pager] = usePager(collections.data || [], 15);
  const [request, setRequest] = useState(null);
  const [notice, setNotice] = useState("");
  const reload = () => setRefresh((r) => r + 1);
  const path = (name) => `/admin/qdrant/collections/${encodeURIComponent(name)}`;
  const ask = (kind, c) => setRequest(kind === "wipe"
    ? { title: `Wipe ${c.name}?`, confirm: "Wipe", done: `${c.name} wiped.`,
        message: operator
          ? html`Every one of the ${fmtInt(c.points)} points in <strong class="mono">${c.name}</strong>, every tenant's,
              will be deleted; the collection stays. Documents processed into it must be processed again to be queried.`
          : html`Your tenant's ${fmtInt(c.points)} points in <strong class="mono">${c.name}</strong> will be deleted; other
              tenants' points and the collection stay. Your documents processed into it must be processed again to be
              queried.`,
        action: () => api(`${path(c.name)}/wipe`, { method: "POST" }) }
    : { title: `Delete ${c.name}?`, confirm: "Delete", done: `${c.name} deleted.`,
        message: html`The collection <strong class="mono">${c.name}</strong> and its ${fmtInt(c.points)} points will be
          deleted.`,
        action: () => api(path(c.name), { method: "DELETE" }) });
  const close = (done) => {
    if (done) { setNotice(request.done); reload(); }
    setRequest(null);
  };
  return html`
    <section class="panel" aria-label="Qdrant collections">
      <div class="row between">
        <h2>Qdrant collections ${collections.data ? html`<span class="muted">(${collections.data.length})</span>` : null}</h2>
        <button type="button" class="secondary" onClick=${reload}>Refresh</button>
      </div>
      ${!operator ? html`<p class="muted small">The collections holding your tenant's points, with its own counts; a
        wipe deletes only those. Dropping a collection is the operator's.</p>` : null}
      <${ErrorBox} error=${collections.error} />
      ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
      ${collections.loading && !collections.data ? html`<${Spinner} label="Loading collections…" />` : null}
      ${collections.data && !collections.data.length ? html`<p class="muted">No collection yet: processing a document
        creates one per strategy and Corpus model.</p>` : null}
      ${rows.length ? html`<div class="scroll"><table class="data" data-testid="admin-collections">
        <thead><tr><th>collection</th><th class="hide-narrow">strategy</th><th class="hide-narrow">model</th>
          <th class="num hide-narrow">dim</th><th class="num">points</th>
          <th><span class="sr-only">actions</span></th></tr></thead>
        <tbody>${rows.map((c) => html`<tr data-collection=${c.name}>
          <td class="mono wrap">${c.name}</td><td class="hide-narrow">${c.strategy || "—"}</td>
          <td class="hide-narrow">${c.model || "—"}</td><td class="num hide-narrow">${c.dimension ?? "—"}</td><td class="num">${fmtInt(c.points)}</td>
          <td class="actions">
            <button type="button" class="secondary" onClick=${() => ask("wipe", c)} aria-label=${`Wipe ${c.name}`}>Wipe</button>
            ${operator ? html`<button type="button" class="danger" onClick=${() => ask("delete", c)}
              aria-label=${`Delete ${c.name}`}>Delete</button>` : null}
          </td></tr>`)}</tbody></table></div>` : null}
      ${pager}
      <${Confirm} request=${request} onClose=${close} />
    </section>`;
}

// ------------------------------------------------------------------------------- embedding cache (operator)

// The one embedding cache is every tenant's (keyed by model and text): only the operator reads or clears it.
function EmbeddingCache({ tick }) {
  const [refresh, setRefresh] = useState(0);
  const cache = useApi(() => api("/admin/embedding-cache"), [tick, refresh]);
  const [request, setRequest] = useState(null);
  const [notice, setNotice] = useState("");
  const data = cache.data;
  const ask = () => setRequest({
    title: "Clear the embedding cache?", confirm: "Clear", done: "",
    message: html`All ${fmtInt(data.entries)} cached embeddings, every tenant's, will be forgotten; they are computed
      again when next needed.`,
    action: async () => {
      const cleared = await api("/admin/embedding-cache", { method: "DELETE" });
      setNotice(`${fmtInt(cleared.removed)} cached embeddings removed.`);
    },
  });
  const close = (done) => {
    if (done) setRefresh((r) => r + 1);
    setRequest(null);
  };
  return html`
    <section class="panel" aria-label="Embedding cache">
      <div class="row between">
        <h2>Embedding cache</h2>
        <button type="button" class="danger" onClick=${ask} disabled=${!data || !data.entries}>Clear</button>
      </div>
      <${ErrorBox} error=${cache.error} />
      ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
      ${cache.loading && !data ? html`<${Spinner} label="Reading the cache…" />` : null}
      ${data ? html`<p data-testid="embedding-cache">${data.enabled
        ? `${fmtInt(data.entries)} embeddings, ${fmt(data.bytes / 1048576, 1)} of ${fmt(data.max_bytes / 1048576, 0)} MB`
        : "The disk cache is off."}</p>
        ${Object.keys(data.models).length ? html`<ul class="muted small">${Object.entries(data.models).map(([model, n]) =>
          html`<li><span class="mono">${model}</span>: ${fmtInt(n)}</li>`)}</ul>` : null}` : null}
      <${Confirm} request=${request} onClose=${close} />
    </section>`;
}

// --------------------------------------------------------------------------------- consistency (operator)

// The metadata store compared with the vector store, every tenant (GET /admin/consistency); `chunkbench doctor
// --repair` on the server's machine fixes what it finds.
function Consistency({ tick }) {
  const report = useApi(() => api("/admin/consistency"), [tick]);
  const data = report.data;
  return html`
    <section class="panel" aria-label="Consistency">
      <div class="row between">
        <h2>Consistency ${data ? html`<span class="badge ${data.consistent ? "good" : "bad"}">
          ${data.consistent ? "consistent" : `${data.findings.length} difference(s)`}</span>` : null}</h2>
        <button type="button" class="secondary" onClick=${report.reload} disabled=${report.loading}>
          ${report.loading ? "Comparing…" : "Compare again"}</button>
      </div>
      <${ErrorBox} error=${report.error} />
      ${report.loading && !data ? html`<${Spinner} label="Comparing the metadata store with the vector store…" />` : null}
      ${data ? html`<p class="muted small" data-testid="consistency">${`${fmtInt(data.tenants)} tenant(s), `
        + `${fmtInt(data.documents)} document(s), ${fmtInt(data.runs)} indexed run(s), ${fmtInt(data.points)} point(s) `
        + "compared."}${data.consistent ? " The two stores agree." : html` <span class="mono">chunkbench doctor --repair</span>
        fixes the differences.`}</p>` : null}
      ${data && data.findings.length ? html`<div class="scroll"><table class="data" data-testid="consistency-findings">
        <thead><tr><th>tenant</th><th>document</th><th>strategy</th><th>finding</th></tr></thead>
        <tbody>${data.findings.map((f) => html`<tr><td class="mono">${f.tenant_id}</td>
          <td class="mono wrap">${f.document_id}</td><td>${f.strategy || "—"}</td>
          <td class="wrap"><span class="badge bad">${f.kind}</span> ${f.message}</td></tr>`)}</tbody></table></div>` : null}
    </section>`;
}

// ------------------------------------------------------------------------------------------ question files

function QuestionFiles({ tick }) {
  const [refresh, setRefresh] = useState(0);
  const files = useApi(() => api("/admin/questions"), [tick, refresh]);
  const [rows, pager] = usePager(files.data || [], 15);
  const [file, setFile] = useState(null);
  const [overwrite, setOverwrite] = useState(false);
  const [progress, setProgress] = useState(null);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState("");
  const [request, setRequest] = useState(null);
  const input = useRef(null);
  const reload = () => setRefresh((r) => r + 1);
  const send = async (event) => {
    event.preventDefault();
    if (!file) return;
    setError(null);
    setNotice("");
    setProgress(0);
    try {
      const body = await upload("/admin/questions", file, { onProgress: setProgress, query: overwrite ? { overwrite: "true" } : {} });
      setNotice(`${body.file.name} ${body.replaced ? "replaced" : "uploaded"}: ${body.file.question_count} questions.`);
      setFile(null);
      if (input.current) input.current.value = "";
      reload();
    } catch (err) {
      setError(err);
    } finally {
      setProgress(null);
    }
  };
  const remove = (f) => setRequest({
    title: `Delete ${f.name}?`, confirm: "Delete", done: `${f.name} deleted.`,
    message: html`The question file <strong class="mono">${f.name}</strong> will be deleted. Experiments that used it
      keep their results.`,
    action: () => api(`/admin/questions/${encodeURIComponent(f.name)}`, { method: "DELETE" }),
  });
  const close = (done) => {
    if (done) { setNotice(request.done); reload(); }
    setRequest(null);
  };
  return html`
    <section class="panel" aria-label="Question files">
      <h2>Question files ${files.data ? html`<span class="muted">(${files.data.length})</span>` : null}</h2>
      <form class="row" onSubmit=${send}>
        <label>Question file (.json, .jsonl, .csv)
          <input type="file" ref=${input} accept=".json,.jsonl,.csv" onChange=${(e) => setFile(e.target.files[0] || null)} />
        </label>
        <label class="check"><input type="checkbox" checked=${overwrite} onChange=${(e) => setOverwrite(e.target.checked)} />
          replace a file of the same name</label>
        <button type="submit" class="primary" disabled=${!file || progress !== null}>Upload</button>
      </form>
      ${progress !== null ? html`<${ProgressBar} value=${progress} label="Uploading and validating…" />` : null}
      <${ErrorBox} error=${error} />
      ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
      <${ErrorBox} error=${files.error} />
      ${files.data && !files.data.length ? html`<p class="muted">No question file yet.</p>` : null}
      ${rows.length ? html`<div class="scroll"><table class="data" data-testid="admin-questions">
        <thead><tr><th>file</th><th>format</th><th class="num">questions</th><th class="num hide-narrow">references</th>
          <th class="num hide-narrow">size</th><th class="hide-narrow">modified</th><th><span class="sr-only">actions</span></th></tr></thead>
        <tbody>${rows.map((f) => html`<tr data-file=${f.name}>
          <td class="mono wrap">${f.name}${f.error ? html`<div class="field-error">${f.error}</div>` : null}</td>
          <td>${f.format || html`<span class="badge bad">unreadable</span>`}</td>
          <td class="num">${fmtInt(f.question_count)}</td><td class="num hide-narrow">${fmtInt(f.reference_count)}</td>
          <td class="num hide-narrow">${fmt(f.size_bytes / 1024, 1)} KB</td>
          <td class="muted hide-narrow">${when(f.modified_at)}</td>
          <td class="actions"><button type="button" class="danger" onClick=${() => remove(f)}
            aria-label=${`Delete ${f.name}`}>Delete</button></td></tr>`)}</tbody></table></div>` : null}
      ${pager}
      <${Confirm} request=${request} onClose=${close} />
    </section>`;
}
