"""Adapters: the splitters of other libraries as chunkbench strategies (``chunking/library_strategies.py``).

Each module wraps one library and is imported only when one of its strategies is looked up through the
``chunkbench.strategies`` entry points (pyproject.toml): a missing library never breaks the others.
"""
