// What can work on this server (GET /admin/capabilities): the forms offer only those options, and say of each
// one that cannot work why, naming the setting that enables it. Shared by the Query, Benchmarks and Admin tabs.
import { html, useApi } from "./ui.js";
import { api } from "./api.js";

export const RERANK_LABELS = [["none", "none"], ["cross_encoder", "cross-encoder"], ["llm", "LLM listwise"]];

/** The server's capabilities ({data, error, loading, reload}), read again when a dependency changes. */
export function useCapabilities(deps = []) {
  return useApi(() => api("/admin/capabilities"), deps);
}

/** Whether an option may be offered: the server says so; not yet while it has not answered; when it cannot be
 * asked (an API key without the admin scope), every option is offered and the server refuses what cannot run. */
export function offered(capabilities, capability) {
  if (capabilities.data) return capability?.available !== false;
  return !capabilities.loading;
}

/** The rerankers as [value, label, offered, capability] rows ("none" is always offered). */
export function rerankers(capabilities) {
  return RERANK_LABELS.map(([value, label]) => {
    const capability = capabilities.data?.rerankers?.[value];
    return [value, label, value === "none" || offered(capabilities, capability), capability];
  });
}

/** One line per option that cannot work: its name and the server's reason, which names the setting that enables it. */
export function Unavailable({ items }) {
  const off = items.filter(([, capability]) => capability && !capability.available);
  if (!off.length) return null;
  return html`<div class="unavailable stack" data-testid="unavailable-options">
    ${off.map(([label, capability]) => html`<p style="margin: 0">
      <strong>${label}</strong> is not available: ${capability.detail}</p>`)}
  </div>`;
}
