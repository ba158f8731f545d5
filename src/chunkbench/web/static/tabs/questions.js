// The Questions tab: author a question set in the dashboard, with no LLM and no file edited by hand. Select text in
// a document's markdown (or find it), make it the evidence of a new question or add it to one already in the set,
// type the question and, if known, the expected answer, and keep going. Every change is saved at once through
// /admin/questions/{name}/questions…, which validates it as an uploaded file and places its evidence (the offsets
// must select it exactly) before writing; the set downloads as the question JSON file a benchmark reads.
import { html, useEffect, useRef, useState, ErrorBox, Spinner, fmtInt, useApi } from "../ui.js";
import { useLayoutEffect, useMemo } from "../vendor/htm-preact-standalone.module.js";
import { api, withKey } from "../api.js";
import { emit, handOff, on } from "../bus.js";

// Emitted after every change to a question file: lists of question files (Benchmarks) read theirs again.
export const QUESTION_SETS_CHANGED = "question-sets-changed";
// "Benchmark it…": the set and the scope it was written on (a corpus, or one document), for the Benchmarks form.
export const BENCHMARK_SET = "benchmark-question-set";
const NEW_SET = ""; // the set picker's "new set" entry
// Documents whose markdown exists (states before parsing, and failures, have none).
const UNREAD = new Set(["discovered", "parsing", "failed"]);
const SNIPPET = 90;
const TEXT_ID = "questions-evidence-text";

const setPath = (name) => `/admin/questions/${encodeURIComponent(name)}`;
const clip = (text, size = SNIPPET) => {
  const flat = (text || "").replace(/\s+/g, " ").trim();
  return flat.length > size ? `${flat.slice(0, size - 1)}…` : flat;
};
const plural = (n, word) => `${fmtInt(n)} ${word}${n === 1 ? "" : "s"}`;
// A name for a new set from what is being read: "handbook_questions.json".
const suggestedName = (base) => `${(base || "questions").replace(/\.[^./]+$/, "").replace(/[^\w .-]+/g, "_")
  .replace(/^[^\w]+/, "").slice(0, 150) || "questions"}_questions.json`;

// Offsets in the API count characters (code points) of the markdown, as Python does; the browser counts UTF-16
// units, which differ after any character outside the BMP (an emoji). One index per text converts both ways.
function textIndex(text) {
  if (!/[\uD800-\uDFFF]/.test(text)) return { toPoint: (unit) => unit, toUnit: (point) => point };
  const units = [0]; // units[p]: the UTF-16 offset of code point p
  for (const char of text) units.push(units[units.length - 1] + char.length);
  return {
    toPoint: (unit) => {
      let low = 0;
      let high = units.length - 1;
      while (low < high) { // the first code point starting at or after ``unit``
        const mid = (low + high) >> 1;
        if (units[mid] < unit) low = mid + 1; else high = mid;
      }
      return low;
    },
    toUnit: (point) => units[Math.min(point, units.length - 1)],
  };
}

export function QuestionsTab({ active, openTab }) {
  const [scope, setScope] = useState("document"); // what the text comes from: one document, or a corpus's documents
  const [documentId, setDocumentId] = useState("");
  const [corpusName, setCorpusName] = useState("");
  const [setName, setSetName] = useState(null); // null until the set list arrives; NEW_SET: a set not yet written
  const [typedName, setTypedName] = useState(null); // the new set's name as typed; null: named after the text
  const [set, setSet] = useState(null); // the set as the API last answered (QuestionSetOut, with its validation)
  const [filesTick, setFilesTick] = useState(0);
  // Reopening the tab reads the lists again: documents may have been uploaded, sets uploaded or deleted.
  const wasActive = useRef(active);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (active && !wasActive.current) setTick((t) => t + 1);
    wasActive.current = active;
  }, [active]);
  useEffect(() => on("documents-changed", () => setTick((t) => t + 1)), []);

  const files = useApi(() => api("/admin/questions"), [filesTick, tick]);
  const documents = useApi(() => api("/documents", { query: { limit: 1000 } }), [tick]);
  const corpora = useApi(() => api("/corpora"), [tick]);
  const corpus = useApi(
    () => (scope === "corpus" && corpusName ? api(`/corpora/${encodeURIComponent(corpusName)}`) : Promise.resolve(null)),
    [scope, corpusName, tick],
  );
  // Authored sets are question JSON: the other formats are listed in Benchmarks and Admin, not edited here.
  const sets = (files.data || []).filter((f) => f.format === "json" && /\.json$/i.test(f.name));
  const readable = scope === "corpus"
    ? (corpus.data?.documents || []).filter((d) => !UNREAD.has(d.status))
    : (documents.data?.items || []).filter((d) => !UNREAD.has(d.status));
  const doc = readable.find((d) => d.id === documentId) || null;

  useEffect(() => { if (!doc && readable[0]) setDocumentId(readable[0].id); }, [documents.data, corpus.data, scope]);
  useEffect(() => {
    const names = (corpora.data || []).map((c) => c.name);
    if (!names.includes(corpusName)) setCorpusName(names[0] || "");
  }, [corpora.data]);
  useEffect(() => {
    if (!files.data) return;
    if (setName === null || (setName !== NEW_SET && !sets.some((f) => f.name === setName))) {
      setSetName(sets[0]?.name ?? NEW_SET);
    }
  }, [files.data]);

  // The chosen set, every reference placed in the documents it names.
  const loaded = useApi(
    () => (setName ? api(setPath(setName), { query: { validate: true } }) : Promise.resolve(null)),
    [setName, tick],
  );
  useEffect(() => { if (!loaded.loading) setSet(loaded.data); }, [loaded.data, loaded.loading]);

  const saved = (body) => {
    setSet(body);
    if (body.file.name !== setName) {
      setSetName(body.file.name);
      setTypedName(null);
    }
    setFilesTick((t) => t + 1);
    emit(QUESTION_SETS_CHANGED, { name: body.file.name });
  };
  const deleted = () => {
    setTypedName(setName);
    setSetName(NEW_SET);
    setSet(null);
    setFilesTick((t) => t + 1);
    emit(QUESTION_SETS_CHANGED, { name: setName });
  };
  const newName = typedName ?? suggestedName(scope === "corpus" ? corpusName : doc?.filename);
  const target = setName || newName.trim();

  const noDocuments = scope === "document" ? documents.data && !readable.length
    : corpus.data && !readable.length;
  // The row starts with where the text comes from: the set picker and the new set's name arrive with the set list,
  // and whatever stood after them moved while the tab loaded (a click aimed at "a corpus" landed beside it).
  return html`<div class="stack">
    <section class="panel stack" aria-label="Set and document">
      <h2>Write questions</h2>
      <p class="muted" style="margin:0">Select the evidence in a document's text, then type its question. Each
        question is saved as you add it, with the exact place of its evidence; the set is a question file for the
        Benchmarks tab, and downloads as JSON.</p>
      <${ErrorBox} error=${files.error || documents.error || corpora.error || corpus.error || loaded.error} />
      <div class="row">
        <fieldset><legend>Read from</legend><div class="checks">
          <label><input type="radio" name="questions-scope" checked=${scope === "document"}
            onChange=${() => setScope("document")} />one document</label>
          <label><input type="radio" name="questions-scope" checked=${scope === "corpus"}
            onChange=${() => setScope("corpus")} />a corpus</label>
        </div></fieldset>
        ${scope === "corpus" ? html`<label>Corpus
          <select aria-label="Corpus" value=${corpusName} onChange=${(e) => setCorpusName(e.target.value)}>
            ${(corpora.data || []).map((c) => html`<option key=${c.id} value=${c.name}>${c.name} (${plural(c.document_count, "document")})</option>`)}
          </select></label>` : null}
        <label>Document
          <select aria-label="Document" value=${doc?.id || ""} onChange=${(e) => setDocumentId(e.target.value)}>
            ${readable.map((d) => html`<option key=${d.id} value=${d.id}>${d.source_key}</option>`)}
          </select></label>
        <label>Question set
          <select aria-label="Question set" value=${setName ?? NEW_SET} onChange=${(e) => { setSetName(e.target.value); setTypedName(null); }}>
            ${sets.map((f) => html`<option key=${f.name} value=${f.name}>${f.name} (${plural(f.question_count, "question")})</option>`)}
            <option value=${NEW_SET}>new set…</option>
          </select></label>
        ${setName === NEW_SET ? html`<label>Name of the new set
          <input type="text" aria-label="Name of the new set" value=${newName} maxlength="200"
            onInput=${(e) => setTypedName(e.target.value)} placeholder="handbook_questions.json" /></label>` : null}
      </div>
      ${scope === "corpus" && corpora.data && !corpora.data.length ? html`<div class="notice">No corpus yet: make one in
        the Documents tab (tick documents, then New corpus…).</div>` : null}
      ${noDocuments ? html`<div class="notice">${scope === "corpus" ? "This corpus has no document with text yet."
        : "No document yet: upload one in the Documents tab, then come back to select its evidence."}</div>` : null}
      <${SetStatus} set=${set} name=${setName} onBenchmark=${() => {
        handOff(BENCHMARK_SET, scope === "corpus" ? { name: setName, corpus: corpusName }
          : { name: setName, documentId: doc?.id || null });
        openTab?.("benchmarks");
      }} />
    </section>
    ${doc ? html`<${Workbench} doc=${doc} set=${set} target=${target} onSaved=${saved} scope=${scope} />` : null}
    ${set ? html`<${QuestionList} set=${set} onSaved=${saved} onDeleted=${deleted} />` : null}
    ${loaded.loading && setName ? html`<${Spinner} label="Loading the question set…" />` : null}
  </div>`;
}

// The set's standing: how many questions, whether every piece of evidence still lands where it was taken from.
function SetStatus({ set, name, onBenchmark }) {
  if (!name) return html`<div class="muted" data-testid="set-status">A new set is written when its first question is
    added.</div>`;
  if (!set) return null;
  const counts = set.validation?.counts || {};
  const problems = counts.problems || 0;
  // Evidence written here sits at its own offsets; a set uploaded with plain snippets was placed by searching.
  const where = counts.offsets === counts.references ? ", each at its exact place in its document"
    : ", all placed in their documents";
  return html`<div class="row" style="align-items:center" data-testid="set-status" role="status">
    <span class=${`badge ${problems ? "bad" : "good"}`}>${problems ? `${plural(problems, "problem")}` : "valid"}</span>
    <span>${plural(set.file.question_count, "question")}, ${plural(set.file.reference_count, "piece")} of evidence${
      problems || !counts.references ? "" : where}</span>
    <a href=${`${setPath(name)}/download`} download=${name} onClick=${withKey}>Download ${name}</a>
    <button class="link" onClick=${onBenchmark}>Benchmark it…</button>
  </div>`;
}

// ------------------------------------------------------------------------------------------------ text + composer

// One document's text with the set's evidence marked, the current selection's actions, and the question being
// written. A new question collects one or more pieces of evidence; in a corpus, from several documents (the draft
// stays while another document is opened, each piece naming its own).
function Workbench({ doc, set, target, onSaved, scope }) {
  const markdown = useApi(() => api(`/documents/${doc.id}/markdown`), [doc.id]);
  // While another document's text loads, the last one's must not be shown (a passage selected in it would be
  // saved under the wrong document).
  const text = !markdown.loading && typeof markdown.data === "string" ? markdown.data : null;
  const index = useMemo(() => (text === null ? null : textIndex(text)), [text]);
  const [selection, setSelection] = useState(null); // {start, end, content}: code points, trimmed of spaces
  const [draft, setDraft] = useState([]); // the new question's evidence
  // The draft before its last removal or Discard ({list, what}): nothing is saved yet, so Undo only puts it back.
  const [dropped, setDropped] = useState(null);
  const drop = (list, what) => { setDropped({ list: draft, what }); setDraft(list); };
  const [question, setQuestion] = useState("");
  const [answer, setAnswer] = useState("");
  const [existing, setExisting] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const questionBox = useRef(null);
  const questions = set?.questions || [];
  const ids = questions.map((q) => q.id);
  useEffect(() => { if (!ids.includes(existing)) setExisting(ids[ids.length - 1] || ""); }, [set]);
  useEffect(() => setSelection(null), [doc.id]); // a selection belongs to the text it was made in

  // The set's evidence in this document, where validation placed it, and the draft's.
  const marks = useMemo(() => {
    const placed = (set?.validation?.results || []).filter((r) => r.status === "placed" && r.document === doc.id)
      .map((r) => ({ start: r.start_index, end: r.end_index, label: r.question_id, kind: "saved" }));
    const drafted = draft.filter((r) => r.document === doc.source_key)
      .map((r) => ({ start: r.start_index, end: r.end_index, label: "the new question", kind: "draft" }));
    return [...placed, ...drafted];
  }, [set, draft, doc.id]);

  const act = async (work) => {
    setBusy(true);
    setError(null);
    setNote(null);
    try {
      await work();
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  const reference = () => ({ document: doc.source_key, content: selection.content, start_index: selection.start,
    end_index: selection.end });
  const forget = () => { setSelection(null); window.getSelection()?.removeAllRanges(); };
  const startDraft = () => {
    setDraft((list) => [...list, reference()]);
    setDropped(null);
    forget();
    questionBox.current?.focus();
  };
  const addToExisting = () => act(async () => {
    const body = await api(`${setPath(target)}/questions/${encodeURIComponent(existing)}/references`,
      { method: "POST", json: reference() });
    onSaved(body);
    setNote(`Added the evidence to ${existing}.`);
    forget();
  });
  const addQuestion = (event) => {
    event?.preventDefault();
    if (busy) return;
    act(async () => {
      // Ctrl+Enter arrives whatever the button's state: say what is missing.
      if (!draft.length) throw new Error("Select the question's evidence in the text first, then choose Evidence for a new question.");
      if (!question.trim()) throw new Error("Type the question first.");
      if (!target) throw new Error("Name the new set first (a name ending in .json).");
      const body = await api(`${setPath(target)}/questions`, { method: "POST", json: {
        question: question.trim(), expected_answer: answer.trim() || null, document_id: draft[0].document,
        references: draft,
      } });
      const added = body.questions[body.questions.length - 1];
      onSaved(body);
      setNote(`Added ${added.id} to ${body.file.name} with ${plural(added.references.length, "piece")} of evidence.`);
      setDraft([]);
      setDropped(null);
      setQuestion("");
      setAnswer("");
    });
  };

  return html`<div class="questions-layout">
    <section class="panel stack" aria-label="Document text">
      <h2>${doc.source_key} <span class="muted">· select the evidence</span></h2>
      <${ErrorBox} error=${markdown.error} />
      ${text === null ? html`<${Spinner} label="Loading the text…" />` : html`
        <${FindInText} text=${text} />
        <${SelectionBar} selection=${selection} drafting=${draft.length > 0} questions=${questions} existing=${existing}
          onExisting=${setExisting} onNew=${startDraft} onAdd=${addToExisting} onClear=${forget} busy=${busy} />
        <${EvidenceText} text=${text} index=${index} marks=${marks} onSelect=${setSelection} />`}
    </section>
    <section class="panel stack" aria-label="New question">
      <h2>New question</h2>
      ${draft.length === 0 ? html`<p class="muted">Select a passage in the text (or find it), then
        choose <strong>Evidence for a new question</strong>. Select more passages to add them too${scope === "corpus"
          ? ", from any document of the corpus" : ""}.</p>` : html`
        <ol class="evidence-list" aria-label="Evidence of the new question">${draft.map((r, i) => html`<li key=${i}>
          <span class="mono small">${r.document} · ${fmtInt(r.start_index)}–${fmtInt(r.end_index)}</span>
          <div>“${clip(r.content, 240)}”</div>
          <button class="link" aria-label=${`Remove evidence ${i + 1} of the new question`}
            onClick=${() => drop(draft.filter((_, j) => j !== i), `“${clip(r.content, 60)}”`)}>remove</button></li>`)}</ol>`}
      ${dropped ? html`<div class="notice row" role="status" data-testid="undo-draft" style="align-items:center">
        <span>Removed ${dropped.what} from the new question.</span>
        <button type="button" class="secondary" onClick=${() => { setDraft(dropped.list); setDropped(null); }}>Undo</button>
        <button type="button" class="link" onClick=${() => setDropped(null)} aria-label="Dismiss">dismiss</button></div>`
        : null}
      <form class="stack" onSubmit=${addQuestion} aria-label="Question">
        <label class="field">Question
          <textarea ref=${questionBox} value=${question} required aria-label="Question text"
            placeholder="What does the evidence answer?" onInput=${(e) => setQuestion(e.target.value)}
            onKeyDown=${(e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) addQuestion(e); }} /></label>
        <label class="field">Expected answer (optional)
          <input type="text" value=${answer} aria-label="Expected answer" onInput=${(e) => setAnswer(e.target.value)} /></label>
        <div class="row">
          <button type="submit" class="primary" disabled=${busy || !draft.length || !question.trim() || !target}>
            ${busy ? "Saving…" : "Add question"}</button>
          ${draft.length ? html`<button type="button" class="secondary" onClick=${() => drop([], plural(draft.length, "piece") + " of evidence")}>Discard</button>`
            : null}
          <span class="muted small">Ctrl+Enter adds it${target ? ` to ${target}` : ""}.</span>
        </div>
      </form>
      <${ErrorBox} error=${error} />
      ${note ? html`<div class="muted" role="status" data-testid="authoring-note">${note}</div>` : null}
    </section>
  </div>`;
}

// What can be done with the current selection.
function SelectionBar({ selection, drafting, questions, existing, onExisting, onNew, onAdd, onClear, busy }) {
  // Both states are one box of one fixed height (styles.css): the text below must not move while a drag selects in
  // it (a bar that grew on the first selected character pushed it down mid-drag, under the pointer).
  if (!selection) return html`<div class="muted small selection-bar" data-testid="selection">
    <div class="selection-line">No selection: drag across the text, or find a phrase.</div></div>`;
  return html`<div class="selection-bar" data-testid="selection" role="group" aria-label="Selection">
    <div class="selection-line" title=${selection.content}><span class="mono small">characters ${fmtInt(selection.start)}–${fmtInt(selection.end)}</span>
      “${clip(selection.content)}”</div>
    <div class="row selection-actions">
      <button class="primary" onClick=${onNew} disabled=${busy}>${drafting ? "Add to the new question"
        : "Evidence for a new question"}</button>
      ${questions.length ? html`<select aria-label="Existing question" value=${existing}
          onChange=${(e) => onExisting(e.target.value)} style="max-width:22rem">
          ${questions.map((q) => html`<option key=${q.id} value=${q.id}>${q.id} · ${clip(q.question, 50)}</option>`)}</select>
        <button class="secondary" onClick=${onAdd} disabled=${busy || !existing}>Add to question</button>` : null}
      <button class="link" onClick=${onClear}>clear</button>
    </div>
  </div>`;
}

// A phrase typed here is found in the text (exactly, else ignoring case) and selected there, as a drag would: the
// way to select from the keyboard, and to find a passage in a long document. Enter finds the next occurrence.
function FindInText({ text }) {
  const [phrase, setPhrase] = useState("");
  const [from, setFrom] = useState(0);
  const [missing, setMissing] = useState(false);
  const find = (event) => {
    event.preventDefault();
    const wanted = phrase.trim();
    if (!wanted) return;
    const search = (haystack, needle) => {
      const at = haystack.indexOf(needle, from);
      return at >= 0 ? at : haystack.indexOf(needle);
    };
    let at = search(text, wanted);
    // Ignoring case only where lower-casing keeps every character's position (it can lengthen a few letters).
    const lower = text.toLowerCase();
    if (at < 0 && lower.length === text.length) at = search(lower, wanted.toLowerCase());
    setMissing(at < 0);
    if (at < 0) return;
    setFrom(at + 1);
    selectInText(document.getElementById(TEXT_ID), at, at + wanted.length);
  };
  return html`<form class="row" onSubmit=${find} role="search" aria-label="Find in the text">
    <label style="flex:1">Find in the text
      <input type="search" value=${phrase} aria-label="Find in the text"
        onInput=${(e) => { setPhrase(e.target.value); setFrom(0); setMissing(false); }} /></label>
    <button type="submit" class="secondary">Find</button>
    ${missing ? html`<span class="muted" role="status">not in this document</span>` : null}
  </form>`;
}

// The markdown exactly as stored (the container holds only its characters, so a selection's position in it is the
// offset into the markdown), with evidence marked: the set's filled, the new question's outlined.
function EvidenceText({ text, index, marks, onSelect }) {
  const box = useRef(null);
  // Listening from the moment the text is drawn (a layout effect): a selection made at once is not missed.
  useLayoutEffect(() => {
    const changed = () => {
      const selection = window.getSelection();
      const container = box.current;
      if (!selection || !container || selection.rangeCount === 0) return;
      const range = selection.getRangeAt(0);
      if (!container.contains(range.startContainer) || !container.contains(range.endContainer)) return;
      const before = document.createRange();
      before.setStart(container, 0);
      before.setEnd(range.startContainer, range.startOffset);
      let start = before.toString().length;
      let end = start + range.toString().length;
      // Spaces and line breaks picked up at either end are not evidence.
      while (start < end && /\s/.test(text[start])) start += 1;
      while (end > start && /\s/.test(text[end - 1])) end -= 1;
      onSelect(start < end ? { start: index.toPoint(start), end: index.toPoint(end), content: text.slice(start, end) }
        : null);
    };
    document.addEventListener("selectionchange", changed);
    return () => document.removeEventListener("selectionchange", changed);
  }, [text, index]);
  const parts = useMemo(() => markedParts(text, index, marks), [text, index, marks]);
  return html`<div ref=${box} id=${TEXT_ID} class="scroll doc-text evidence-text" tabindex="0"
    aria-label="Text to select evidence in">${parts}</div>`;
}

// Select the characters [from, to) (UTF-16 units) of the container's text, and scroll them into view.
function selectInText(container, from, to) {
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let seen = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const length = node.data.length;
    if (seen <= from && from <= seen + length) range.setStart(node, from - seen);
    if (seen <= to && to <= seen + length) { range.setEnd(node, to - seen); break; }
    seen += length;
  }
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  // The passage to the middle of the text's own scroll box (a whole unmarked text is one element: scrolling that
  // element into view would not find the passage).
  const offset = range.getBoundingClientRect().top - container.getBoundingClientRect().top;
  container.scrollTop += offset - container.clientHeight / 2;
  // And the page, when the text box itself reaches below the window (the strip and bars above it take room).
  const { top, bottom } = range.getBoundingClientRect();
  if (top < 0 || bottom > window.innerHeight) window.scrollBy(0, top - window.innerHeight / 2);
}

// The text cut where marks start and end; each piece is plain, or a <mark> naming whose evidence it is.
function markedParts(text, index, marks) {
  const spans = marks.map((m) => ({ ...m, from: index.toUnit(m.start), to: index.toUnit(m.end) }))
    .filter((m) => m.to > m.from);
  const points = [...new Set([0, text.length, ...spans.flatMap((m) => [m.from, m.to])])].sort((a, b) => a - b);
  const parts = [];
  for (let i = 0; i + 1 < points.length; i += 1) {
    const [from, to] = [points[i], points[i + 1]];
    const piece = text.slice(from, to);
    const over = spans.filter((m) => m.from <= from && m.to >= to);
    if (!over.length) {
      parts.push(html`<span data-at=${from}>${piece}</span>`);
      continue;
    }
    const kinds = new Set(over.map((m) => m.kind));
    const names = [...new Set(over.map((m) => m.label))];
    parts.push(html`<mark data-at=${from} class=${`authored${kinds.has("draft") ? " draft" : ""}${kinds.has("saved")
      ? " saved" : ""}`} title=${`evidence of ${names.join(", ")}`}>${piece}</mark>`);
  }
  return parts;
}

// ------------------------------------------------------------------------------------------------ the set

function QuestionList({ set, onSaved, onDeleted }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [confirming, setConfirming] = useState(null); // the id of the question whose deletion awaits a yes
  const name = set.file.name;
  const results = new Map((set.validation?.results || []).map((r) => [`${r.question_id}/${r.reference_index}`, r]));
  const act = async (work) => {
    setBusy(true);
    setError(null);
    try { await work(); } catch (e) { setError(e); }
    setBusy(false);
  };
  const only = set.questions.length === 1;
  const remove = (id) => act(async () => {
    if (only) {
      await api(setPath(name), { method: "DELETE" });
      onDeleted();
    } else {
      onSaved(await api(`${setPath(name)}/questions/${encodeURIComponent(id)}`, { method: "DELETE" }));
    }
    setConfirming(null);
    setRemoved(null); // its question may be gone: nothing to put back
  });
  // A removal acts at once (one click, one keystroke), so it can be taken back: the passage is kept until the next
  // change, and Undo (or Ctrl+Z outside a text field) adds it to its question again, at the same offsets.
  const [removed, setRemoved] = useState(null); // {id, reference}: the last piece of evidence removed
  useEffect(() => setRemoved(null), [name]);
  const removeReference = (id, i) => act(async () => {
    const q = set.questions.find((x) => x.id === id);
    const r = q.references[i];
    const reference = { document: r.document || q.document_id || null, content: r.content,
      start_index: r.start_index ?? null, end_index: r.end_index ?? null };
    onSaved(await api(`${setPath(name)}/questions/${encodeURIComponent(id)}/references/${i}`, { method: "DELETE" }));
    setRemoved({ id, reference });
  });
  const undo = () => act(async () => {
    if (!removed) return;
    const json = Object.fromEntries(Object.entries(removed.reference).filter(([, v]) => v !== null));
    onSaved(await api(`${setPath(name)}/questions/${encodeURIComponent(removed.id)}/references`, { method: "POST", json }));
    setRemoved(null);
  });
  useEffect(() => {
    if (!removed) return undefined;
    const onKey = (event) => {
      const typing = event.target.closest?.("input, textarea, select, [contenteditable]");
      if ((event.ctrlKey || event.metaKey) && !event.shiftKey && event.key.toLowerCase() === "z" && !typing) {
        event.preventDefault();
        undo();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [removed, name]);
  return html`<section class="panel stack" aria-label="Questions of the set">
    <h2>${name} <span class="muted">(${plural(set.questions.length, "question")})</span></h2>
    <${ErrorBox} error=${error} />
    ${removed ? html`<div class="notice row" role="status" data-testid="undo-removal" style="align-items:center">
      <span>Removed “${clip(removed.reference.content, 60)}” from ${removed.id}.</span>
      <button class="secondary" disabled=${busy} onClick=${undo}>Undo</button>
      <button class="link" onClick=${() => setRemoved(null)} aria-label="Dismiss">dismiss</button></div>` : null}
    <div class="scroll"><table class="data" aria-label="Questions">
      <thead><tr><th>id</th><th>question</th><th>expected answer</th><th>evidence</th><th></th></tr></thead>
      <tbody>${set.questions.map((q) => html`<tr key=${q.id} data-testid="question-row">
        <td class="mono">${q.id}</td>
        <td>${q.question}</td>
        <td>${q.expected_answer || html`<span class="muted">—</span>`}</td>
        <td><ul class="evidence-list">${q.references.map((r, i) => {
          const placed = results.get(`${q.id}/${i}`);
          return html`<li key=${i}>
            <span class="mono small">${r.document || q.document_id || ""}${r.start_index !== null && r.start_index !== undefined
              ? ` · ${fmtInt(r.start_index)}–${fmtInt(r.end_index)}` : ""}</span>
            ${placed && placed.status !== "placed" ? html` <span class="badge bad" title=${placed.message}>${placed.status}</span>` : null}
            <div>“${clip(r.content)}”</div>
            <button class="link" disabled=${busy} aria-label=${`Remove evidence ${i + 1} of ${q.id}`}
              onClick=${() => removeReference(q.id, i)}>remove</button></li>`;
        })}${q.references.length ? null : html`<li class="muted">no evidence</li>`}</ul></td>
        <td class="actions">${confirming === q.id ? html`
          <button class="danger" disabled=${busy} onClick=${() => remove(q.id)}>${only ? `Delete ${name}` : `Delete ${q.id}`}</button>
          <button class="secondary" onClick=${() => setConfirming(null)}>Cancel</button>
          ${only ? html`<div class="muted small">It is the set's only question: the file goes with it.</div>` : null}`
          : html`<button class="secondary" aria-label=${`Delete ${q.id}`} onClick=${() => setConfirming(q.id)}>Delete…</button>`}</td>
      </tr>`)}</tbody>
    </table></div>
  </section>`;
}
