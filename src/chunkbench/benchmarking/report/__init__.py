"""Self-contained HTML reports of a benchmark Experiment (seed 000 §10.4): a managerial and a technical view."""
