"""Documents domain: parsers, the Document Tree, the documents service, API and CLI."""
