#!/bin/bash
# The evaluation behind the README's retrieval table: one `chunkwise eval` run per dev set, the same
# 100 queries for every configuration of a set (--limit 100 --seed 1: the cross-encoder takes seconds per
# query on the shared 2-core machine), written to bench/results/eval/.
# Usage: bash bench/eval_all.sh [DATA_DIR] [WORKDIR]   (defaults: ../shared/data, ~/.cache/chunkwise/eval)
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data}
workdir=${2:-$HOME/.cache/chunkwise/eval}
mkdir -p bench/results/eval
for set in chroma rmc_dev qmsum_val xquad_en anthropic_code; do
  k=5; [ "$set" = rmc_dev ] && k=6
  args=()
  for name in before bm25 dense-minilm dense fast default quality; do args+=(--config "bench/eval_configs/$name.toml"); done
  .venv/bin/chunkwise eval --data "$data/$set" -k "$k" --limit 100 --seed 1 "${args[@]}" \
    --json "bench/results/eval/$set.json" --html "bench/results/eval/$set.html" --workdir "$workdir"
done
