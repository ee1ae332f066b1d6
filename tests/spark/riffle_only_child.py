"""Child process of test_riffle_loads_no_slaq.py: a fresh driver JVM (neither product enabled by conf)
that attaches only Riffle's tracker, runs a shuffle, and reports which shim classes it has loaded (its
class-load log); then attaches SLAQ and reports again (so the probe is shown to see SLAQ's classes).
Prints one ``RESULT {json}`` line. Run: ``python riffle_only_child.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from operator import add
from pathlib import Path
from typing import Any

CLASS_LOAD = re.compile(r"\[class,load\] (\S+) source: ")


def loaded_classes(load_log: Path, names: list[str]) -> list[str]:
    """Those of ``names`` the driver JVM has loaded so far, as its class-load log says (``-Xlog:class+load``, the JVM's
    own ``-verbose:class``, which every JDK documents and any user can switch on)."""
    loaded = set(CLASS_LOAD.findall(load_log.read_text()))
    return [name for name in names if name in loaded]


def main() -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from riffle.product import PRODUCT as RIFFLE
    from sparkshim.bridge import shim_for
    from sparkshim.build import build

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    load_log = Path(tempfile.mkdtemp(prefix="riffle-only-")) / "class-load.log"
    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -Xlog:class+load=info:file={load_log}".strip()  # the driver JVM's
    with zipfile.ZipFile(build()) as jar:
        names = sorted(n[:-len(".class")].replace("/", ".") for n in jar.namelist() if n.endswith(".class"))
    spark = (SparkSession.builder.master("local-cluster[1,1,1024]").appName("riffle-only")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.scheduler.mode", "FAIR").getOrCreate())
    sc = spark.sparkContext
    try:
        tracker = shim_for(sc).component(RIFFLE.shim_component)
        tracker.configure(False, 30.0, False)  # nothing drains: hold no reducers
        assert sorted(sc.parallelize(range(12), 3).map(lambda x: (x % 3, 1)).reduceByKey(add, 2).collect()) == [(0, 4), (1, 4), (2, 4)]
        drained = str(tracker.drain())
        result = {"classes": names, "riffle_only": loaded_classes(load_log, names), "unavailable": tracker.unavailableReason(),
                  "drained_map_output": '"map_output"' in drained}
        from slaq.product import PRODUCT as SLAQ

        shim_for(sc).component(SLAQ.shim_component)
        result["after_slaq"] = loaded_classes(load_log, names)
        return result
    finally:
        spark.stop()
        shutil.rmtree(load_log.parent, ignore_errors=True)


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
