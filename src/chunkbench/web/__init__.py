"""The dashboard: one page at /app (Preact + htm, vendored), talking to the same API as everyone else."""
