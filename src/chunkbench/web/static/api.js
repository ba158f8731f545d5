// The API as the dashboard uses it: JSON in and out, and every failure an ApiError whose message is the
// server's own (each domain error carries one a person can act on).
import { emit } from "./bus.js";

// With CHUNKBENCH_AUTH=on every call carries the API key the user gave the dashboard (kept in this browser only).
const KEY_STORAGE = "chunkbench.apiKey";

export function getApiKey() {
  try { return localStorage.getItem(KEY_STORAGE) || ""; } catch { return ""; }
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

function authHeaders() {
  const key = getApiKey();
  return key ? { authorization: `Bearer ${key}` } : {};
}

// A 401 means no key or a bad one: the shell asks for one ("api-key-needed" on the bus).
function checkAuth(status) {
  if (status === 401) emit("api-key-needed");
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || (typeof body?.detail === "string" ? body.detail : null) || validationText(body) ||
      `Request failed with HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function validationText(body) {
  // FastAPI's 422: a list of {loc, msg}; show where and what.
  if (!Array.isArray(body?.detail)) return null;
  return body.detail.map((d) => `${(d.loc || []).slice(1).join(".") || "request"}: ${d.msg}`).join("\n");
}

async function parse(response) {
  const type = response.headers.get("content-type") || "";
  const body = type.includes("application/json") ? await response.json() : await response.text();
  checkAuth(response.status);
  if (!response.ok) throw new ApiError(response.status, typeof body === "string" ? { message: body } : body);
  return body;
}

export async function api(path, { method = "GET", json, query, signal } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(key, item);
  }
  const init = { method, signal, headers: authHeaders() };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["content-type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, { message: "The chunkbench server cannot be reached. Is `make run` still running?" });
  }
  return parse(response);
}

// The strategies and their capabilities (GET /strategies), fetched once per page: they change only on a restart.
let strategyCatalogRequest = null;
export function strategyCatalog() {
  strategyCatalogRequest ||= api("/strategies").catch((error) => {
    strategyCatalogRequest = null;  // a failed fetch is retried by the next caller
    throw error;
  });
  return strategyCatalogRequest;
}

// Whether the strategy called ``name`` gets Neighbor Expansion (its chunks are windows), from the catalog.
export function expandsNeighbours(catalog, name) {
  return Boolean((catalog || []).find((s) => s.name === name)?.expands_neighbours);
}

// Multipart upload with progress (fetch has no upload progress): resolves with the JSON body.
export function upload(path, file, { field = "file", onProgress, query } = {}) {
  return new Promise((resolve, reject) => {
    const url = new URL(path, window.location.origin);
    for (const [key, value] of Object.entries(query || {})) url.searchParams.set(key, value);
    const request = new XMLHttpRequest();
    request.open("POST", url);
    for (const [name, value] of Object.entries(authHeaders())) request.setRequestHeader(name, value);
    request.upload.onprogress = (event) => event.lengthComputable && onProgress?.(event.loaded / event.total);
    request.onerror = () => reject(new ApiError(0, { message: "The upload failed: the server cannot be reached." }));
    request.onload = () => {
      checkAuth(request.status);
      let body = null;
      try { body = JSON.parse(request.responseText); } catch { body = { message: request.responseText }; }
      if (request.status >= 200 && request.status < 300) resolve(body);
      else reject(new ApiError(request.status, body));
    };
    const form = new FormData();
    form.append(field, file);
    request.send(form);
  });
}

// A job that stopped because a person cancelled it: not a failure (ErrorBox shows it as a notice). Its message
// says what was kept and how to finish.
export class JobCancelled extends ApiError {
  constructor(job) {
    super(409, job.error || { message: "Cancelled." });
    this.cancelled = true;
    this.job = job;
  }
}

// Poll a job until it ends; onProgress gets (fraction, message, job). Resolves with the job, rejects on failure
// (JobCancelled when it was cancelled).
export async function waitForJob(jobId, { onProgress, intervalMs = 500, signal } = {}) {
  for (;;) {
    const job = await api(`/jobs/${jobId}`, { signal });
    onProgress?.(job.progress ?? 0, job.status === "cancelling" ? "cancelling…" : job.message || job.status, job);
    if (job.status === "succeeded") return job;
    if (job.status === "failed") throw new ApiError(500, job.error || { message: "The job failed." });
    if (job.status === "cancelled") throw new JobCancelled(job);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

// Ask a job to stop at its next cell, document or strategy (POST /jobs/{id}/cancel); waitForJob then rejects
// with JobCancelled.
export const cancelJob = (jobId) => api(`/jobs/${encodeURIComponent(jobId)}/cancel`, { method: "POST" });

// Links to API pages (reports, exports) cannot carry a header: with a key set, a click fetches the page with it
// and opens (or downloads) the result instead. Without a key the link works as a plain link.
export function withKey(event) {
  if (!getApiKey()) return;
  event.preventDefault();
  const link = event.currentTarget;
  const opened = link.hasAttribute("download") ? null : window.open("", "_blank");
  fetch(link.href, { headers: authHeaders() })
    .then(async (response) => {
      checkAuth(response.status);
      const url = URL.createObjectURL(await response.blob());
      if (opened) opened.location.href = url;
      else Object.assign(document.createElement("a"), { href: url, download: link.getAttribute("download") }).click();
    })
    .catch(() => opened?.close());
}
