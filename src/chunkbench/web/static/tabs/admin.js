import { html, useState } from "../ui.js";
export function AdminTab() { const [n, setN] = useState(0); return html`<div class="panel"><h2>AdminTab</h2><button class="secondary" onClick=${() => setN(n + 1)}>clicked ${n}</button></div>`; }
