#!/usr/bin/env bash
# Sets up everything on a fresh machine with Python 3.11 and a JDK 17: a virtualenv in .venv with
# pyspark, numpy, scipy, grpcio and the project installed editable, and the gRPC stubs generated.
# Idempotent: a second run only checks. Used by the README, CI (.ci/run) and docker/.
#   --merger-only (or RIFFLE_MERGER_ONLY=1): a node that only runs riffle-merger; no JDK needed, the Java
#   shim, the Spark start-up hook and the lab are skipped, and so are pyspark, numpy and scipy.
#   --spark-lines: also the pyspark of every older Spark line CI tests (pyproject's ci-spark-lines), each in
#   .spark-lines/<version> (about 470 MB each), which scripts/test.sh puts first on PYTHONPATH for that line's run.
set -euo pipefail
cd "$(dirname "$0")/.."
MERGER_ONLY=${RIFFLE_MERGER_ONLY:-0}
SPARK_LINES=0
for arg in "$@"; do
  case "$arg" in
    --merger-only) MERGER_ONLY=1 ;;
    --spark-lines) SPARK_LINES=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup: unknown argument $arg (known: --merger-only, --spark-lines)" >&2; exit 2 ;;
  esac
done

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" - <<'PY' || { echo "setup: Python >= 3.11 is required (found $($PYTHON --version 2>&1))" >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY
if [ "$MERGER_ONLY" != 1 ] && ! command -v java >/dev/null 2>&1; then
  echo "setup: no 'java' on PATH; Spark needs a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
# setuptools' notice box on every editable install ("Editable installation. Please be careful with folders in your
# working directory...") is information, not a problem: that one warning is filtered by its text, nothing else is.
EDITABLE_NOTE="ignore:Editable installation"
stamp=.venv/.installed-$MERGER_ONLY-$(cat pyproject.toml lab/pyproject.toml | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  if [ "$MERGER_ONLY" = 1 ]; then
    echo "setup: installing the merger daemon's dependencies only (no pyspark, numpy or scipy)"
    # the `merger` extra's list alone (and grpcio-tools, which generates the gRPC stubs in a checkout), then the
    # package itself without its driver-side dependencies: in that order pip has no unmet requirement to report
    .venv/bin/python -m pip install --quiet grpcio-tools $(.venv/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["merger"]))')
    PYTHONWARNINGS="$EDITABLE_NOTE" .venv/bin/python -m pip install --quiet --no-deps -e .
  else
    echo "setup: installing dependencies (first run takes a few minutes: pyspark is ~400 MB)"
    PYTHONWARNINGS="$EDITABLE_NOTE" .venv/bin/python -m pip install --quiet -e ".[dev]" -e "./lab[plot]"
  fi
  rm -f .venv/.installed-*
  touch "$stamp"
fi
if [ -d proto ] && ls proto/*/*/*.proto >/dev/null 2>&1; then
  .venv/bin/python -m riffle.proto_build
fi
.venv/bin/python -m sparkshim.messages_build  # each product's typed messages from its schema (git ignores the output)
if [ "$MERGER_ONLY" = 1 ]; then
  echo "setup: ready for a merger-only node (.venv/bin/riffle-merger, .venv/bin/riffle); Java shim skipped"
  exit 0
fi
# The Java shim (SLAQ pools, Riffle tracker), compiled against this pyspark into sparkshim/jars/ (where a
# wheel carries it; drivers never compile), and the start-up hook that attaches SLAQ/Riffle when
# spark.slaq.enabled / spark.riffle.enabled is set (a wheel installs that hook itself).
rm -rf sparkshim/_build  # where earlier checkouts cached the jar
.venv/bin/python -m sparkshim.build
.venv/bin/python -m sparkshim.autoload install >/dev/null
# Headless Chromium for the Spark UI tab test (tests/spark/test_ui_tab.py); not needed to run SLAQ.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "setup: installing Debian's chromium (headless browser for the SLAQ UI test)"
  apt-get install -y --no-install-recommends chromium >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
[ -x /usr/bin/chromium ] || echo "setup: no /usr/bin/chromium: tests/spark/test_ui_tab.py will fail (apt-get install chromium)" >&2
# libfuse 2 for the benches' simulated disks (--storage hdd; tests/cluster/test_storage_profile.py); fusepy comes with the lab.
if ! ldconfig -p 2>/dev/null | grep -q 'libfuse\.so\.2' && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "setup: installing Debian's libfuse2 (simulated disks of the benches' --storage hdd)"
  apt-get install -y --no-install-recommends libfuse2 >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends libfuse2 >/dev/null; }
fi
if [ "$SPARK_LINES" = 1 ]; then
  mkdir -p .spark-lines
  .venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["tool"]["slaq-riffle"]["ci-spark-lines"]))' > .spark-lines/lines
  for version in $(cat .spark-lines/lines); do
    if [ ! -f ".spark-lines/$version/pyspark/version.py" ] || ! grep -Fq "'$version'" ".spark-lines/$version/pyspark/version.py"; then
      echo "setup: installing pyspark $version into .spark-lines/$version (its tests run on it; ~450 MB)"
      rm -rf ".spark-lines/$version"
      .venv/bin/python -m pip install --quiet --no-deps --target ".spark-lines/$version" "pyspark==$version"
    fi
  done
fi
echo "setup: ready (.venv/bin/slaq, .venv/bin/riffle, .venv/bin/riffle-merger)"
