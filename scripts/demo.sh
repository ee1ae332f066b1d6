#!/usr/bin/env bash
# The main demo: the paper's §6.2 experiment (160 jobs, 640 cores, arrivals every 15 s) replayed
# under SLAQ and under fair sharing, with a Fig. 7-style plot in out/fig7.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/slaq simulate --policy slaq --policy fair --jobs 160 --cores 640 --arrival-mean 15 --seed 1 --plot out/fig7.png "$@"
