"""Background jobs: long work (processing) with progress that clients poll at ``GET /jobs/{id}``."""
