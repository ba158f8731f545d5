// Tabs talk through events, not a global store: e.g. "ask about this document" from Documents selects it in Query.
export const bus = new EventTarget();

export function emit(name, detail) {
  bus.dispatchEvent(new CustomEvent(name, { detail }));
}

export function on(name, handler) {
  const listener = (event) => handler(event.detail);
  bus.addEventListener(name, listener);
  return () => bus.removeEventListener(name, listener);
}

// A hand-off to a tab that may not be mounted yet (tabs mount on first opening): the last detail is kept until the
// receiving tab takes it, so "Benchmark it…" reaches a Benchmarks tab opened for the first time by that click.
const handed = new Map();

export function handOff(name, detail) {
  handed.set(name, detail);
  emit(name, detail);
}

/** The detail handed off under ``name`` and not yet taken (then forgotten), or null. */
export function take(name) {
  const detail = handed.get(name) ?? null;
  handed.delete(name);
  return detail;
}
