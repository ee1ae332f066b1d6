"""Child process of test_riffle_loads_no_slaq.py: a fresh driver JVM (neither product enabled by conf)
that attaches only Riffle's tracker, runs a shuffle, and reports which shim classes its class loader
has loaded; then attaches SLAQ and reports again (so the probe is shown to see SLAQ's classes).
Prints one ``RESULT {json}`` line. Run: ``python riffle_only_child.py``.
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from operator import add
from typing import Any


def loaded_shim_classes(gateway: Any, names: list[str]) -> list[str]:
    """Those of ``names`` the shim's class loader has loaded (``ClassLoader.findLoadedClass``, which loads nothing)."""
    from sparkshim.bridge import shim_class

    jvm = gateway.jvm
    loader = shim_class(gateway, "seam.Shim").getClassLoader()
    params = gateway.new_array(jvm.java.lang.Class, 1)
    params[0] = jvm.java.lang.Class.forName("java.lang.String")
    find = jvm.java.lang.Class.forName("java.lang.ClassLoader").getDeclaredMethod("findLoadedClass", params)
    find.setAccessible(True)  # java.base opens java.lang to the class path under Spark's default --add-opens
    out = []
    for name in names:
        args = gateway.new_array(jvm.java.lang.Object, 1)
        args[0] = name
        if find.invoke(loader, args) is not None:
            out.append(name)
    return out


def main() -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from riffle.product import PRODUCT as RIFFLE
    from sparkshim.bridge import shim_for
    from sparkshim.build import build

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
        result = {"classes": names, "riffle_only": loaded_shim_classes(sc._gateway, names), "unavailable": tracker.unavailableReason(),
                  "drained_map_output": '"map_output"' in drained}
        from slaq.product import PRODUCT as SLAQ

        shim_for(sc).component(SLAQ.shim_component)
        result["after_slaq"] = loaded_shim_classes(sc._gateway, names)
        return result
    finally:
        spark.stop()


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
