"""Self-contained HTML reports of a benchmark Experiment (docs/benchmarks.md): a managerial and a technical view."""
