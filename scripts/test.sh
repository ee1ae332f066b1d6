#!/usr/bin/env bash
# Sets up and runs the whole test suite on the newest Spark line (.venv), then the tests marked spark_line
# on every older line CI tests (pyproject's ci-spark-lines, each line's pyspark first on PYTHONPATH).
# Arguments go to the first pytest run only; SPARK_LINES=none skips the older lines. pytest's "no tests
# collected" (exit 5) counts as failure.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then sed -n '2,5p' "$0"; exit 0; fi
lines=--spark-lines
[ "${SPARK_LINES:-}" = none ] && lines=
bash scripts/setup.sh $lines || exit 1

pytest_run() {  # pytest with the given arguments; exit 5 (nothing collected) is a failure
  .venv/bin/python -m pytest "$@"
  local rc=$?
  if [ "$rc" -eq 5 ]; then
    echo "test: pytest collected no tests; that is a failure" >&2
    rc=1
  fi
  return "$rc"
}

# one wheel for the whole run: the first session builds it, every Spark line's wheel tests install that file
export SLAQ_RIFFLE_WHEEL_DIR="$PWD/.spark-lines/wheel"
rm -rf "$SLAQ_RIFFLE_WHEEL_DIR"
pytest_run "$@"
rc=$?
if [ -n "$lines" ]; then
  # only the modules that hold spark_line tests are collected on each line (collecting all of tests/ costs seconds a line)
  line_modules=$(.venv/bin/python -c 'from tests.conftest import SPARK_LINE_TESTS; print(" ".join(sorted({t.split("::")[0] for t in SPARK_LINE_TESTS})))') \
    || { echo "test: cannot read SPARK_LINE_TESTS from tests/conftest.py" >&2; exit 1; }
  for version in $(cat .spark-lines/lines); do  # written by setup.sh --spark-lines
    echo "test: the spark_line tests on pyspark $version"
    start=$SECONDS
    # shellcheck disable=SC2086  # one argument per module
    PYTHONPATH="$PWD/.spark-lines/$version${PYTHONPATH:+:$PYTHONPATH}" pytest_run -m spark_line -p no:cacheprovider -q -ra $line_modules || rc=1
    echo "test: pyspark $version took $((SECONDS - start)) s"
  done
fi
exit "$rc"
