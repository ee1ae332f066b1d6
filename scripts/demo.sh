#!/usr/bin/env bash
# The main demo: a hyperparameter sweep of 16 training jobs (logistic regression, SVM, K-Means,
# boosting) with Poisson arrivals on an embedded local-cluster Spark, run under SLAQ (its default policy, order), SLAQ's fair policy and
# stock Spark FAIR; prints the comparison (negative = less time under SLAQ) and plots mean normalized loss
# over time and mean time to 90/95% to out/sweep.png. About 6-9 minutes on a quiet 2-core machine (each of
# the three runs 2-3 minutes; much longer when the machine is busy; it prints progress every 10 s, then the
# comparison: one run, which can fall outside README's spread of 5 repeats).
# Extra arguments go to lab/demos/sweep.py (try --help; --repeats 5 for medians and their spread, --tables for SLAQ's table).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/python lab/demos/sweep.py --plot out/sweep.png "$@"
