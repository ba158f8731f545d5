import { html, useState } from "../ui.js";
export function DecisionTab() { const [n, setN] = useState(0); return html`<div class="panel"><h2>DecisionTab</h2><button class="secondary" onClick=${() => setN(n + 1)}>clicked ${n}</button></div>`; }
