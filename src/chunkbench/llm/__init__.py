"""LLM domain: the OpenAI-compatible chat client, the extractive answerer, prompts."""
