#!/bin/bash
# The evaluation behind the README's retrieval table: one `chunkwise eval` run per dev set, the same
# 100 queries for every configuration of a set (--limit 100 --seed 1: a few minutes for all five sets on a
# 2-core machine once the indexes are cached; the first run embeds every corpus with each embedder, the
# 4-bit multilingual-e5-small of dense-e5 taking about 28 minutes), written to bench/results/eval/.
# Usage: bash bench/eval_all.sh [--data DIR] [--workdir DIR] (see bench/eval_options.sh)
set -euo pipefail
source "$(dirname "$0")/eval_options.sh" "$@"
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
