"""The document ranking that every document-level metric scores.

A retrieval returns chunks (or segments); document-level metrics judge the *documents* they come from.
The ranking is the documents of the retrieved items, deduplicated in rank order: a document takes the
rank of its best item, and later items of the same document are dropped. So with ``k`` retrieved items the
ranking holds at most ``k`` documents, and rank ``i`` means the ``i``-th *distinct* document.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkwise.evaluation.items import Located


def ranked_documents(retrieved: Sequence[Located]) -> list[str]:
    """Distinct document ids of ``retrieved``, in order of first appearance."""
    return list(dict.fromkeys(item.doc_id for item in retrieved))
