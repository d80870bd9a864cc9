"""``python -m chunkwise`` runs the command line."""

from chunkwise.cli.main import run

run()
