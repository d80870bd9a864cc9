"""What ``add_bytes`` and ``add_documents`` take, checked before anything is parsed or stored.

A call with the wrong shape (one pair instead of a list of pairs, ``str`` content, a document's text
instead of a :class:`~chunkwise.document.Document`) used to fail deep in parsing or in the batch, as an
``unexpected TypeError`` reported per item or a bare ``AttributeError``; like ``add``'s paths
(:func:`~chunkwise.ingest.paths.path_list`), it is a :class:`TypeError` naming the argument and the item
now, and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Collection

from chunkwise.document import Document

#: What one ``add_bytes`` item must be.
PAIR = "(name: str, content: bytes) pair"


def byte_files(files: object) -> list[tuple[str, bytes]]:
    """``files`` as a list of ``(name, content)`` pairs; any collection of them (a list, a tuple,
    ``dict.items()``), not an iterator that a second pass would find empty.

    Raises:
        TypeError: ``files`` is not a collection of such pairs (one pair alone included: it is a
            collection of a name and content), naming the first item that is not one.
    """
    if not isinstance(files, Collection) or isinstance(files, str | bytes):
        raise TypeError(f"files must be a collection of {PAIR}s, not {type(files).__name__}")
    pairs: list[tuple[str, bytes]] = []
    for index, item in enumerate(files):
        if not (
            isinstance(item, tuple | list)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], bytes | bytearray)
        ):
            shown = repr(item)
            shown = shown if len(shown) <= 60 else shown[:60] + "…"
            raise TypeError(f"files[{index}] is not a {PAIR}: {shown}")
        pairs.append((item[0], bytes(item[1])))
    return pairs


def document_list(docs: object) -> list[Document]:
    """``docs`` as a list of documents; any collection of them (a list, a set, ``dict.values()``).

    Raises:
        TypeError: ``docs`` is not a collection of :class:`~chunkwise.document.Document` (a document
            alone included), naming the first item that is not one.
    """
    if isinstance(docs, Document):
        raise TypeError("docs must be a collection of documents; put a single document in a list")
    if not isinstance(docs, Collection) or isinstance(docs, str | bytes):
        raise TypeError(f"docs must be a collection of documents, not {type(docs).__name__}")
    for index, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise TypeError(
                f"docs[{index}] is a {type(doc).__name__}, not a Document (chunkwise.parse makes one)"
            )
    return list(docs)
