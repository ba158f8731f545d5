// The tabs, in the order of the top bar. Each module exports one component taking {active, openTab}.
import { DocumentsTab, PdfTab } from "./documents.js";
import { QueryTab } from "./query.js";
import { QuestionsTab } from "./questions.js";
import { BenchmarksTab } from "./benchmarks.js";
import { DecisionTab } from "./decision.js";
import { AdminTab } from "./admin.js";

export const TABS = [
  { id: "documents", label: "Documents", component: DocumentsTab },
  { id: "pdf", label: "PDF", component: PdfTab },
  { id: "query", label: "Query", component: QueryTab },
  { id: "questions", label: "Questions", component: QuestionsTab },
  { id: "benchmarks", label: "Benchmarks", component: BenchmarksTab },
  { id: "decision", label: "Decision Board", component: DecisionTab },
  { id: "admin", label: "Admin", component: AdminTab },
];
