"""The ``chunkwise`` command line: a thin layer over the library that owns all printing."""
