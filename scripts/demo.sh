#!/usr/bin/env bash
# The main demo: a hyperparameter sweep of 16 training jobs (logistic regression, SVM, K-Means,
# boosting) with Poisson arrivals on an embedded local-cluster Spark, run under SLAQ and under fair
# sharing; prints the comparison and plots mean normalized loss over time to out/sweep.png.
# About 4-5 minutes on a 2-core machine. Extra arguments go to lab/demos/sweep.py (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/python lab/demos/sweep.py --plot out/sweep.png "$@"
