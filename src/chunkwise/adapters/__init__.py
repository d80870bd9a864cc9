"""chunkwise inside LangChain and LlamaIndex: retrievers over a knowledge base, and a text splitter and
node parser for every chunker (extras ``[langchain]`` and ``[llamaindex]``).

:mod:`.langchain` has ``ChunkwiseRetriever`` (a ``BaseRetriever``) and ``ChunkwiseTextSplitter`` (a
``TextSplitter``); :mod:`.llamaindex` has ``ChunkwiseNodeParser`` (a ``NodeParser``) and
``ChunkwiseRetriever`` (a ``BaseRetriever``). Each keeps chunkwise's exact offsets: a hit or chunk says
where in its document it starts and ends (``document.text[start:end] == text``). The framework is
imported only by the module that adapts to it.
"""
