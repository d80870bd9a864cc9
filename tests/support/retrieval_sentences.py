"""Fixed sentences and queries for the embedders' parity and retrieval checks: each query is answered by
one sentence (:data:`ANSWERS`)."""

SENTENCES = [
    "A cat sat on the mat.",
    "The quarterly revenue grew by twelve percent, driven by strong sales in Asia.",
    "Photosynthesis converts light energy into chemical energy.",
    "short",
    "Paris is the capital of France and its largest city, with more than two million residents.",
]
QUERIES = ["How much did revenue grow?", "What is the capital of France?", "How do plants use light?"]
ANSWERS = [1, 4, 2]  # the sentence answering each query
