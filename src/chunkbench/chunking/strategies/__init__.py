"""The built-in strategies; importing this package registers them (``chunking.base.register_strategy``)."""

from chunkbench.chunking.strategies import (  # noqa: F401
    cluster_semantic,
    code_aware,
    contextual_retrieval,
    fixed_size,
    recursive,
    semantic,
    semantic_parent_child,
    table_aware,
)
