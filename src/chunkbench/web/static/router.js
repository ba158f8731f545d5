// Deep links and history: the URL's hash names the open tab and what is open in it, as name/value pairs after
// the tab's id — #documents/doc/3f2a…, #documents/corpus/contracts, #benchmarks/experiment/9c1e…/inspect/9c1e…/
// question/q7. A reload opens the same thing; every change a person makes (a tab, a document, an Experiment)
// is a history entry, so Back and Forward walk through them. Each tab's parameters are remembered while another
// tab is open: switching back restores its URL as it was left.
import { useCallback, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";

const remembered = new Map(); // tab id → its parameters ({name: value}), the open tab's as in the URL
const listeners = new Set(); // called with (tab, params) whenever a tab's parameters change

/** The tab and parameters a hash names: "#benchmarks/experiment/abc" → {tab: "benchmarks",
 * params: {experiment: "abc"}}. */
export function parseHash(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map((part) => {
    try { return decodeURIComponent(part); } catch { return part; }
  });
  const [tab = "", ...rest] = parts;
  const params = {};
  for (let i = 0; i + 1 < rest.length; i += 2) params[rest[i]] = rest[i + 1];
  return { tab, params };
}

/** The hash of a tab and its parameters (empty values are left out). */
export function formatHash(tab, params = {}) {
  const pairs = Object.entries(params).filter(([, value]) => value !== null && value !== undefined && value !== "");
  return `#${[tab, ...pairs.flat()].map((part) => encodeURIComponent(String(part))).join("/")}`;
}

let route = parseHash(window.location.hash);
remembered.set(route.tab, route.params);

function publish(tab, params) {
  remembered.set(tab, params);
  for (const listener of listeners) listener(tab, params);
}

// Back, Forward, a link to #…, a hash typed in the address bar: the URL is the truth.
function follow() {
  const next = parseHash(window.location.hash);
  if (formatHash(next.tab, next.params) === formatHash(route.tab, route.params)) return;
  route = next;
  publish(next.tab, next.params);
}
window.addEventListener("popstate", follow);
window.addEventListener("hashchange", follow);

export const currentRoute = () => route;

/** Open a tab with its parameters (its remembered ones when none are given): a new history entry unless
 * ``replace``. Parameters of a tab that is not open are only remembered, for when it is opened. */
export function go(tab, params = remembered.get(tab) || {}, { replace = false, open = true } = {}) {
  if (!open && tab !== route.tab) {
    publish(tab, params);
    return;
  }
  const hash = formatHash(tab, params);
  if (hash !== window.location.hash) history[replace ? "replaceState" : "pushState"](null, "", hash);
  route = { tab, params };
  publish(tab, params);
}

/** Change some of a tab's parameters (``null`` removes one), without opening it when it is hidden. */
export function setParams(tab, changes, { replace = false } = {}) {
  const params = { ...(remembered.get(tab) || {}) };
  for (const [name, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === "") delete params[name];
    else params[name] = String(value);
  }
  go(tab, params, { replace, open: false });
}

/** The open tab's id, following the URL. */
export function useOpenTab() {
  const [tab, setTab] = useState(route.tab);
  useEffect(() => {
    const listener = () => setTab(route.tab);
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return tab;
}

/** One parameter of a tab as [value (null when absent), set(value, {replace})]: what the URL says while the tab
 * is open, what it last said while it is hidden. */
export function useRouteParam(tab, name) {
  const [value, setValue] = useState(() => (remembered.get(tab) || {})[name] ?? null);
  useEffect(() => {
    const listener = (changed, params) => { if (changed === tab) setValue(params[name] ?? null); };
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, [tab, name]);
  const set = useCallback((next, options) => setParams(tab, { [name]: next }, options), [tab, name]);
  return [value, set];
}
