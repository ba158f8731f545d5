import { html, useState } from "../ui.js";
export function QueryTab() { const [n, setN] = useState(0); return html`<div class="panel"><h2>QueryTab</h2><button class="secondary" onClick=${() => setN(n + 1)}>clicked ${n}</button></div>`; }
