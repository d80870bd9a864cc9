# Sourced, with their arguments, by the scripts that run `chunkwise eval` on the dev sets
# (bench/eval_all.sh, bench/mpnet_embedder.sh): reads their options and moves to the repository's root.
#   --data DIR: the shared data folder (default: ../shared/data beside the repository); $data names it
#   relative to the repository, as bench/bench_data.py does for the Python scripts, so results hold no
#   machine's path.
#   --workdir DIR: where the indexes are cached (default: ~/.cache/chunkwise/eval); $workdir.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data=$repo/../shared/data
workdir=$HOME/.cache/chunkwise/eval
while [ $# -gt 0 ]; do
  case "$1" in
    --data) data=$(realpath -m "$2"); shift 2 ;;
    --workdir) workdir=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: bash $0 [--data DIR] [--workdir DIR]" >&2; exit 2 ;;
  esac
done
cd "$repo"
data=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "bench"); from bench_data import shown; print(shown(sys.argv[1]))' "$data")
