"""The lexical analyser every store indexes with: folding, stemming, short words, function words."""

from __future__ import annotations

from chunkwise.terms import index_terms, query_terms, search_terms


def test_index_terms_fold_stem_and_keep_every_word():
    assert index_terms("Refunds are REFUNDED; the café's crème brûlée") == [
        "refund", "ar", "refund", "the", "cafe", "s", "creme", "brule",
    ]  # fmt: skip
    assert index_terms("snake_case ﬁle №5") == ["snake", "case", "file", "no5"]  # _ splits, NFKD folds
    assert index_terms("is as us") == ["is", "as", "us"]  # words under 3 characters are not stemmed
    assert index_terms("— ... !") == []


def test_search_terms_are_distinct_stems_of_content_words():
    assert search_terms("What is the refund for refunds?") == ["refund"]
    assert search_terms("Thé cafés") == ["cafe"]  # folded before the function-word check
    assert query_terms("What is the refund for refunds?") == ["refund", "refunds"]
