"""Corpora: named sets of a tenant's documents (membership by document id), their service, API and CLI."""
