#!/usr/bin/env bash
# A real Spark standalone cluster on this machine, one command each:
#   bash scripts/cluster.sh up [--nodes N] [--tls] [--shuffle-service]   # master + N worker nodes, a merger per node
#   bash scripts/cluster.sh status [--json]                              # every node, its executors and its merger
#   bash scripts/cluster.sh conf                                         # --conf flags that point a driver at it
#   bash scripts/cluster.sh down
# Node i is the host 127.0.0.(i+1); nothing binds outside 127.0.0.0/8. Runs scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
verb=${1:-}
if [ -z "$verb" ]; then exec .venv/bin/python -m srlab.cluster --help; fi
shift
exec .venv/bin/python -m srlab.cluster "$verb" "$@"
