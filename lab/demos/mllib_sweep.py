#!/usr/bin/env python
"""Unmodified spark.ml fits (LogisticRegression L2 and L1, LinearRegression l-bfgs, LinearSVC, MLP)
with Poisson arrivals on cached data, as plain fits and through CrossValidator(parallelism=4), under
SLAQ, SLAQ's machinery with the fair policy, and stock Spark FAIR (one pool per fit).

    python lab/demos/mllib_sweep.py              # medians of 3, human-readable
    python lab/demos/mllib_sweep.py --json       # the same as `slaq bench mllib`
    python lab/demos/mllib_sweep.py --small --repeats 1
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from slaq.progress import console
from srlab.slaq_bench.mllib import headline
from srlab.slaq_bench.mllib_args import add_mllib_arguments, run_from_args


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    add_mllib_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON only")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.json else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        with console(every=5.0, enabled=not args.json):  # SLAQ's table on stderr while a SLAQ configuration runs
            result = run_from_args(args)
    except ValueError as exc:
        p.error(str(exc))
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(headline(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
