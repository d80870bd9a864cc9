"""The prompts of the query pipeline.

The rewriting, relevance, self-reflection and threshold prompts are ChunkRAG's, verbatim from the paper's
appendix A.1 (Singh et al., "ChunkRAG: Novel LLM-Chunk Filtering Method for RAG Systems"). The paper names
a critic step but prints no prompt for it; :data:`CRITIC` is chunkwise's, in the same style, asking for the
checks the paper lists (query alignment, temporal and factual consistency). :data:`ANSWER` is chunkwise's.
"""

from __future__ import annotations

REWRITE = """You are an AI assistant that improves user queries for better search results.

Rewrite the following query to be more effective for document retrieval without changing its meaning.

Original Query: "{query}"

Rewritten Query:"""

RELEVANCE = """You are an AI assistant tasked with determining the relevance of a text chunk to a user query.

Analyze the provided chunk and query, then assign a relevance score between 0 and 1, where 1 means highly \
relevant and 0 means not relevant at all.

Chunk: {chunk}

User Query: {query}

A single decimal number between 0 and 1, representing the final relevance score. No other text.

Relevance Score (between 0 and 1):"""

SELF_REFLECTION = """You have assigned a relevance score to a text chunk based on a user query.

Your initial score was: {score}

Reflect on your scoring and adjust the score if necessary. Provide the final score.

Chunk: {chunk}

User Query: {query}

A single decimal number between 0 and 1, representing the final relevance score. No other text.

Final Relevance Score (between 0 and 1):"""

CRITIC = """You are a critic reviewing a relevance score given to a text chunk for a user query.

The initial score was: {score}
After self-reflection it became: {reflected}

Check the chunk against the query: does it address what the query asks, is it consistent in time \
(dates, periods) and in the entities it names? Give your own score.

Chunk: {chunk}

User Query: {query}

A single decimal number between 0 and 1, representing the final relevance score. No other text.

Critic Relevance Score (between 0 and 1):"""

THRESHOLD = """Based on the user query and the following set of relevance scores, determine the optimal \
threshold to filter out irrelevant chunks.

Relevance Scores: {scores}

A single decimal number between 0 and 1, representing the final relevance score. No other text.

Provide the optimal threshold (between 0 and 1):"""

ANSWER = """Answer the question using only the sources below. Each source starts with its id in brackets.

{context}

Question: {question}

Reply with JSON only: {{"answer": "...", "citations": [{{"source": "S1", "quote": "..."}}]}}.
Every quote must be copied word for word from the source it cites and must support the answer.
If the sources do not contain the answer, reply
{{"answer": "not found in the documents", "citations": []}}."""
