#!/bin/bash
# The evaluation behind the README's retrieval table: one `chunkwise eval` run per dev set, the same
# 100 queries for every configuration of a set (--limit 100 --seed 1: a few minutes for all five sets on a
# 2-core machine once the indexes are cached; the first run embeds every corpus with each embedder, the
# 4-bit multilingual-e5-small of dense-e5 taking about 28 minutes), written to bench/results/eval/.
# Usage: bash bench/eval_all.sh [--data DIR] [--workdir DIR]
#   --data: the shared data folder (default: ../shared/data beside the repository); the results name it
#   relative to the repository, as bench/bench_data.py does for the Python scripts.
#   --workdir: where the indexes are cached (default: ~/.cache/chunkwise/eval).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
data=$repo/../shared/data
workdir=$HOME/.cache/chunkwise/eval
while [ $# -gt 0 ]; do
  case "$1" in
    --data) data=$(realpath -m "$2"); shift 2 ;;
    --workdir) workdir=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: bash bench/eval_all.sh [--data DIR] [--workdir DIR]" >&2; exit 2 ;;
  esac
done
cd "$repo"
data=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "bench"); from bench_data import shown; print(shown(sys.argv[1]))' "$data")
mkdir -p bench/results/eval
for set in chroma rmc_dev qmsum_val xquad_en anthropic_code; do
  k=5; [ "$set" = rmc_dev ] && k=6
  args=()
  for name in before bm25 dense-minilm dense-e5 dense-whole dense dense-quality fast former-default default quality; do args+=(--config "bench/eval_configs/$name.toml"); done
  .venv/bin/chunkwise eval --data "$data/$set" -k "$k" --limit 100 --seed 1 "${args[@]}" \
    --json "bench/results/eval/$set.json" --html "bench/results/eval/$set.html" --workdir "$workdir"
done
# A set no default was tuned on: 100 queries of QMSum's training split (other meetings than qmsum_val's),
# the presets beside the references (about 10 minutes of embedding on a new machine).
args=()
for name in before bm25 dense fast default quality; do args+=(--config "bench/eval_configs/$name.toml"); done
.venv/bin/chunkwise eval --data "$data/qmsum_train" -k 5 --limit 100 --seed 1 "${args[@]}" \
  --json bench/results/eval/qmsum_train.json --html bench/results/eval/qmsum_train.html --workdir "$workdir"
