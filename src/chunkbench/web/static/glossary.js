// The dashboard's glossary: every metric and term a table, form or verdict shows, explained where it is shown.
// A tab writes <${Term} name="tok_at_k" /> (the term's own label) or <${Term} name="tok_at_k">tokens</${Term}>,
// or gives a control of its own the explanation with ...${describe("tok_at_k")} (a sort button: no focusable
// term inside it); hovering or focusing it opens one shared tooltip, Escape closes it. Metric names are the API's.
import { html } from "./vendor/htm-preact-standalone.module.js";

const METRICS = {
  recall: ["recall", "Share of the evidence characters that the context sent to the answerer covers (Chroma's " +
    "span recall; hits and Neighbor Expansion neighbours alike). 1 = all the evidence was retrieved."],
  precision: ["precision", "Share of the context's characters that are evidence (Chroma's span precision): how " +
    "little besides the evidence the answerer has to read."],
  precision_omega: ["precision Ω", "Precision Ω: the best precision any retrieval from this chunking could " +
    "reach — the evidence divided by every chunk that touches it. Low means the chunks are much larger than the " +
    "evidence, whatever the retriever does."],
  iou: ["IoU", "Intersection over union of the context and the evidence (characters): recall and precision in " +
    "one figure, 1 only when the context is exactly the evidence."],
  recall_at_k: ["recall@k", "Of the chunks that overlap the evidence, the share found among the k hits."],
  hit_at_k: ["hit@k", "1 when at least one of the k hits overlaps the evidence, else 0."],
  mrr: ["MRR", "Mean reciprocal rank: 1 / the rank of the first hit that overlaps the evidence (1 = ranked " +
    "first, 0.5 = second, 0 = not among the k hits)."],
  ndcg_at_k: ["nDCG@k", "Normalised discounted cumulative gain over the k hits (a hit that overlaps the evidence " +
    "gains 1): how near the top the relevant chunks are ranked."],
  tok_at_k: ["tok@k", "Context tokens: the cl100k tokens of everything the answerer receives for the question " +
    "(the k hits, their neighbours, parents). Lower is cheaper; the Decision breaks ties on it."],
  exact_match: ["exact match", "1 when the generated answer equals the expected one after normalising case, " +
    "punctuation, articles and [Source n] citations."],
  token_f1: ["token F1", "Word overlap of the generated and expected answers (SQuAD-style F1 after normalising)."],
  answer_similarity: ["answer similarity", "Cosine similarity of the Corpus model's embeddings of the generated " +
    "and the expected answer."],
  judge_context_relevance: ["judge: context relevance", "The LLM-as-judge's 1–10 rating of how relevant the " +
    "retrieved context is to the question."],
  judge_answer_similarity: ["judge: answer similarity", "The LLM-as-judge's 1–10 rating of how close the " +
    "generated answer is to the expected one."],
  judge_faithfulness: ["judge: faithfulness", "The LLM-as-judge's 1–10 rating of how well the answer sticks to " +
    "the retrieved context."],
  judge_hallucination: ["judge: hallucination", "Share of answers the LLM-as-judge found to state something the " +
    "context does not support. Lower is better."],
};

const TERMS = {
  latency_p50: ["latency p50", "The median time a question took with this configuration, from embedding the " +
    "question to the answer."],
  latency: ["latency", "Time per stage of a query: embed the question, search, rerank, Neighbor Expansion, answer."],
  p_best: ["P(best)", "In how many of 2,000 paired bootstrap resamples of the questions this configuration came " +
    "out best on the Decision's metric. A winner needs 97.5%."],
  interval: ["95% interval", "The range the mean would fall in 95 times out of 100 if the benchmark were rerun " +
    "on other questions like these (bootstrap over questions)."],
  neighbors: ["±P/N", "Neighbor Expansion: each hit brings P chunks before and N chunks after it into the " +
    "context (fixed_size windows only). ±0/0 means none."],
  neighbor_expansion: ["Neighbor Expansion", "Each hit brings the chunks just before and after it in the " +
    "document (fixed_size windows only), so an answer cut at a window edge is still read whole."],
  expansion_tree: ["Expansion Tree", "The hits in rank order, each with the neighbours Neighbor Expansion added " +
    "before and after it."],
  corpus_model: ["Corpus model", "The embedding model that embeds the chunks and the questions: retrieval " +
    "figures are comparable only between runs with the same one."],
  boundary_model: ["Boundary model", "The embedding model the semantic strategies use to decide where to cut: " +
    "a cut falls where adjacent sentences are less similar than its semantic threshold."],
  semantic_threshold: ["semantic threshold", "The cosine similarity below which the Boundary model's semantic " +
    "strategies cut between two sentences; higher cuts more often (smaller chunks)."],
  retriever: ["retriever", "How chunks are found: dense (cosine of Corpus-model embeddings), bm25 (word " +
    "matches, Qdrant sparse vectors) or hybrid (both, fused by reciprocal rank)."],
  hybrid: ["hybrid", "Dense and BM25 results fused with Reciprocal Rank Fusion: scores come from ranks, not " +
    "cosines."],
  rerank: ["rerank", "A second pass over a larger candidate pool that reorders it and keeps the top k: a " +
    "cross-encoder reading each (question, chunk) pair, or an LLM ranking them all at once."],
  candidate_k: ["candidate pool", "How many chunks the retriever hands the reranker, which keeps the best top_k."],
  top_k: ["top_k", "How many chunks (hits) the retriever returns for a question."],
  judge: ["LLM-as-judge", "An LLM rates each answer and context 1–10 (relevance, answer similarity, " +
    "faithfulness) and flags hallucinations; needs an LLM."],
  answer_mode: ["answer mode", "llm: an LLM wrote the answer; extractive: the most relevant context sentences, " +
    "cited, chosen locally without an LLM; none: nothing was relevant enough."],
  score: ["score", "The retriever's score of a hit: cosine (dense), BM25 score (bm25), fused rank score " +
    "(hybrid) or the reranker's score; neighbours have none."],
  configuration: ["configuration", "One combination benchmarked: strategy / retriever / top_k (/ rerank, " +
    "neighbours, Corpus model), e.g. fixed_size/dense/k5."],
  cells: ["cells", "One cell = one question asked with one configuration: questions × configurations in all."],
  ruled_out: ["ruled out", "Its 95% interval of the difference to the leader lies wholly below zero: it is " +
    "worse than the leader, not just unlucky."],
  tiny: ["tiny chunks", "Share of chunks under 32 tokens: too short to carry an answer on their own."],
  mid_sentence: ["mid-sentence ends", "Share of chunks that end inside a sentence (the next chunk finishes it)."],
  coverage: ["coverage", "Characters in chunks ÷ characters of the document: 1 = every character once; more = " +
    "overlap; less = text left out."],
  beyond_window: ["beyond window", "Chunks longer than the Corpus model's input window: it embeds them from " +
    "their first window only, the rest is not searchable by meaning."],
  median_tokens: ["median tok", "The median chunk length in cl100k tokens."],
  p95_tokens: ["p95 tok", "95% of the chunks are at most this many cl100k tokens long."],
  parent_context: ["parent context", "semantic_parent_child: each retrieved child chunk is given with its larger " +
    "parent chunk as context."],
};

/** Every entry: name → {label, text}. The metric names are those of the API (METRIC_DIRECTIONS). */
export const GLOSSARY = Object.fromEntries(Object.entries({ ...METRICS, ...TERMS })
  .map(([name, [label, text]]) => [name, { label, text }]));

/** The short label of a term or metric (its name when the glossary has none): for text that cannot hold markup. */
export const termLabel = (name) => GLOSSARY[name]?.label ?? name;

const TIP_ID = "glossary-tip";
let shown = null; // the term element whose explanation is open

function tip() {
  let node = document.getElementById(TIP_ID);
  if (!node) {
    node = Object.assign(document.createElement("div"), { id: TIP_ID, className: "glossary-tip", hidden: true });
    node.setAttribute("role", "tooltip");
    document.body.append(node);
  }
  return node;
}

function open(term) {
  const entry = GLOSSARY[term.dataset.term];
  if (!entry) return;
  const node = tip();
  node.textContent = entry.text;
  node.hidden = false;
  shown = term;
  // Placed in the viewport (position: fixed), so scroll boxes and sticky headers never clip it.
  const box = term.getBoundingClientRect();
  const width = Math.min(320, window.innerWidth - 16);
  node.style.maxWidth = `${width}px`;
  node.style.left = `${Math.max(8, Math.min(box.left, window.innerWidth - width - 8))}px`;
  const below = box.bottom + 6;
  node.style.top = `${below + node.offsetHeight > window.innerHeight ? box.top - node.offsetHeight - 6 : below}px`;
}

function close(term) {
  if (term && term !== shown) return;
  tip().hidden = true;
  shown = null;
}

tip(); // present from the start: every term's aria-describedby names it

const termOf = (event) => event.target?.closest?.("[data-term]");
document.addEventListener("mouseover", (event) => { const term = termOf(event); if (term) open(term); });
document.addEventListener("mouseout", (event) => { const term = termOf(event); if (term) close(term); });
document.addEventListener("focusin", (event) => { const term = termOf(event); if (term) open(term); });
document.addEventListener("focusout", (event) => { const term = termOf(event); if (term) close(term); });
document.addEventListener("keydown", (event) => { if (event.key === "Escape" && shown) close(shown); });
// It stays by its term when the page or a table scrolls (a fixed tooltip would otherwise float away from it).
window.addEventListener("scroll", () => shown && open(shown), { passive: true, capture: true });

/** The attributes that give an element of a tab's own (a button, a header) the explanation of ``name``. */
export const describe = (name) => (GLOSSARY[name] ? { "data-term": name, "aria-describedby": TIP_ID } : {});

/** A term or metric with its explanation on hover and focus; children replace the label. */
export function Term({ name, children }) {
  const entry = GLOSSARY[name];
  if (!entry) return children ?? name;
  // The one tooltip describes whichever term has focus: its text is set as focus arrives.
  return html`<span class="term" tabindex="0" ...${describe(name)}>${children ?? entry.label}</span>`;
}
