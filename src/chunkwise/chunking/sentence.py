"""``sentence``: whole sentences packed up to the size.

Sentences come from the offline rules of :mod:`chunkwise.chunking.sentences` (Latin and CJK
punctuation, abbreviations, paragraph breaks). A chunk holds as many consecutive whole sentences as fit;
a sentence longer than the limit is cut by the recursive rules below the sentence level (line, clause,
word, character), and the text after such a cut packs on with the sentences that follow.
"""

from __future__ import annotations

from typing import ClassVar

from chunkwise.chunking.base import BaseChunker
from chunkwise.chunking.boundaries import SENTENCE_SCAN, WITHIN_SENTENCE_LEVELS, Level


class SentenceChunker(BaseChunker):
    """Sentence ends first; inside an overlong sentence, line > clause > word > character."""

    name: ClassVar[str] = "sentence"
    levels: ClassVar[tuple[Level, ...]] = (SENTENCE_SCAN, *WITHIN_SENTENCE_LEVELS)
