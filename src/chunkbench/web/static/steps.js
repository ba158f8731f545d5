// The step strip (issue 27): the path a benchmark takes — upload → corpus → process → questions → benchmark →
// Decision — each stage marked done from what the server holds (not from what this browser clicked), with the next
// action as a button. It is read again whenever the URL changes (a tab opened, an Experiment started) and when a
// tab says its data changed.
import { html, useEffect, useState } from "./ui.js";
import { api, getApiKey } from "./api.js";
import { on } from "./bus.js";
import { go, useOpenTab } from "./router.js";

// Emitted by the Benchmarks tab when a run ends: the strip reads the Experiments again.
export const EXPERIMENTS_CHANGED = "experiments-changed";
const CHANGES = ["documents-changed", "question-sets-changed", EXPERIMENTS_CHANGED];

// Each stage: its name, whether the data shows it done, and the action that does it (where it is done).
const STAGES = [
  { id: "upload", label: "Upload", done: (s) => s.documents > 0, action: "Upload documents",
    open: () => go("documents", {}) },
  { id: "corpus", label: "Corpus", done: (s) => s.corpora.length > 0, action: "Make a corpus",
    hint: "tick documents in the list, then New corpus…", open: () => go("documents", {}) },
  { id: "process", label: "Process", done: (s) => s.indexed > 0, action: "Process the corpus",
    open: (s) => go("documents", s.corpora[0] ? { corpus: s.corpora[0].name } : {}) },
  { id: "questions", label: "Questions", done: (s) => s.sets > 0 || s.experiments.length > 0, action: "Write or upload questions",
    open: () => go("questions") },
  { id: "benchmark", label: "Benchmark", done: (s) => s.experiments.length > 0, action: "Run a benchmark",
    open: () => go("benchmarks") },
  { id: "decision", label: "Decision", action: "Read the Decision",
    done: (s) => s.experiments.some((e) => e.status === "completed" && e.decision_status
      && e.decision_status !== "insufficient_data"),
    open: () => go("decision") },
];

async function standing() {
  const [documents, indexed, corpora, sets, experiments] = await Promise.all([
    api("/documents", { query: { limit: 1 } }),
    api("/documents", { query: { status: "indexed", limit: 1 } }),
    api("/corpora"),
    // Question files are listed under /admin (403 for a key that is not an admin's): with a key (auth on) the
    // strip does not ask, and reads the stage from the Experiments (a benchmark had a question set).
    getApiKey() ? Promise.resolve(null) : api("/admin/questions"),
    api("/experiments", { query: { limit: 50 } }),
  ]);
  const count = (page) => page.total ?? page.items?.length ?? 0;
  return { documents: count(documents), indexed: count(indexed), corpora, sets: sets?.length ?? 0, experiments };
}

export function StepStrip() {
  const tab = useOpenTab();
  const [state, setState] = useState(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const offs = CHANGES.map((name) => on(name, () => setTick((t) => t + 1)));
    const moved = () => setTick((t) => t + 1);
    window.addEventListener("hashchange", moved);
    window.addEventListener("popstate", moved);
    return () => { offs.forEach((off) => off()); window.removeEventListener("hashchange", moved);
      window.removeEventListener("popstate", moved); };
  }, []);
  useEffect(() => {
    let live = true;
    // A strip that cannot be read (no key yet, the server gone) is left out: the tabs say why.
    standing().then((s) => live && setState(s), () => live && setState(null));
    return () => { live = false; };
  }, [tab, tick, window.location.hash]);
  if (!state) return null;
  const done = STAGES.map((stage) => stage.done(state));
  const next = done.indexOf(false);
  const stage = STAGES[next];
  return html`<nav class="steps" aria-label="Steps" data-testid="steps">
    <ol>${STAGES.map((s, i) => html`<li key=${s.id} data-step=${s.id} data-done=${String(done[i])}
        aria-current=${i === next ? "step" : undefined} class=${done[i] ? "done" : i === next ? "next" : ""}>
        <span aria-hidden="true">${done[i] ? "✓" : i + 1}</span> ${s.label}${done[i] ? html`<span class="sr-only"> (done)</span>`
          : null}</li>`)}</ol>
    ${stage ? html`<div class="steps-next" data-testid="next-step">Next: <button class="primary"
        onClick=${() => stage.open(state)}>${stage.action}</button>${stage.hint ? html` <span class="muted">— ${
        stage.hint}</span>` : null}</div>`
      : html`<div class="steps-next" data-testid="next-step">Every step is done: <button class="link"
        onClick=${() => go("decision")}>open the Decision Board</button></div>`}
  </nav>`;
}
