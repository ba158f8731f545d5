import { html, useState } from "../ui.js";
export function DocumentsTab() { const [n, setN] = useState(0); return html`<div class="panel"><h2>DocumentsTab</h2><button class="secondary" onClick=${() => setN(n + 1)}>clicked ${n}</button></div>`; }
export function PdfTab() { const [n, setN] = useState(0); return html`<div class="panel"><h2>PdfTab</h2><button class="secondary" onClick=${() => setN(n + 1)}>clicked ${n}</button></div>`; }
