// The dashboard shell: top tabs whose components stay mounted (their state survives switching), the health
// line, and the registry of tabs. Each tab is one module under tabs/; the URL names the open one (router.js).
import { html, render, useState, useEffect } from "./vendor/htm-preact-standalone.module.js";
import { api, getApiKey, setApiKey } from "./api.js";
import { on } from "./bus.js";
import { go, useOpenTab } from "./router.js";
import { StepStrip } from "./steps.js";
import { TABS } from "./tabs/index.js";

function Health() {
  const [health, setHealth] = useState(null);
  useEffect(() => {
    api("/health").then(setHealth, () => setHealth({ status: "unreachable" }));
  }, []);
  if (!health) return null;
  return html`<span class="status" data-testid="health">server ${health.status}${health.version ? ` · v${health.version}` : ""}</span>`;
}

// The API key (CHUNKBENCH_AUTH=on): asked for when a call answers 401, or from the header's button.
function ApiKey() {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState("");
  // With auth off (the local default) there is nothing to show until a call asks for a key.
  const [needed, setNeeded] = useState(Boolean(getApiKey()));
  useEffect(() => on("api-key-needed", () => { setNeeded(true); setOpen(true); }), []);
  const save = (event) => {
    event.preventDefault();
    setApiKey(value.trim());
    // Every tab reloads its data with the key.
    window.location.reload();
  };
  const clear = () => { setApiKey(""); setValue(""); setOpen(false); };
  if (!open) {
    if (!needed) return null;
    return html`<button class="link" data-testid="api-key-button" onClick=${() => setOpen(true)}>API key</button>`;
  }
  return html`
    <form class="api-key" data-testid="api-key-form" onSubmit=${save}
        onKeyDown=${(e) => e.key === "Escape" && setOpen(false)}>
      <label>API key <input type="password" autocomplete="off" autofocus required value=${value}
        placeholder=${getApiKey() ? "a key is set; paste another" : "cb_…"} onInput=${(e) => setValue(e.target.value)} /></label>
      <button type="submit" class="primary">Use key</button>
      ${getApiKey() ? html`<button type="button" class="secondary" onClick=${clear}>Forget key</button>` : null}
      <button type="button" class="secondary" onClick=${() => setOpen(false)}>Cancel</button>
    </form>`;
}

function App() {
  // The URL's hash names the open tab (router.js): a reload reopens it, Back and Forward walk the tabs.
  const routed = useOpenTab();
  const active = TABS.some((tab) => tab.id === routed) ? routed : TABS[0].id;
  // A tab is mounted the first time it is opened and then kept: switching back finds it as it was left.
  const [opened, setOpened] = useState(() => new Set([active]));
  useEffect(() => setOpened((set) => (set.has(active) ? set : new Set(set).add(active))), [active]);
  const mounted = opened.has(active) ? opened : new Set(opened).add(active);
  const open = (id) => go(id);
  const onKey = (event, index) => {
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    if (!step) return;
    const next = TABS[(index + step + TABS.length) % TABS.length];
    open(next.id);
    document.getElementById(`tab-${next.id}`)?.focus();
  };
  return html`
    <header class="top">
      <div class="brand">chunk<span>bench</span></div>
      <nav class="tabs" role="tablist" aria-label="Sections">
        ${TABS.map((tab, index) => html`<button role="tab" id=${`tab-${tab.id}`} aria-selected=${active === tab.id}
            aria-controls=${`panel-${tab.id}`} tabindex=${active === tab.id ? 0 : -1}
            onClick=${() => open(tab.id)} onKeyDown=${(e) => onKey(e, index)}>${tab.label}</button>`)}
      </nav>
      <${Health} />
      <${ApiKey} />
    </header>
    <main>
      <${StepStrip} />
      ${TABS.filter((tab) => mounted.has(tab.id)).map((tab) => html`
        <section class="tab" role="tabpanel" id=${`panel-${tab.id}`} aria-labelledby=${`tab-${tab.id}`}
          hidden=${active !== tab.id}>
          <${tab.component} active=${active === tab.id} openTab=${open} />
        </section>`)}
    </main>`;
}

const root = document.getElementById("app");
root.textContent = ""; // the "Loading…" line: Preact renders next to existing children, not over them
render(html`<${App} />`, root);
