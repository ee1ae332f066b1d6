"""Child process of test_slaq_status.py: a driver with Spark's UI and SLAQ's tab (attached through the shim's public
``SlaqPools``, with no epoch loop), which publishes each ``epoch_status`` line it reads from stdin as the loop does
(``SlaqPools.publish``: the tab's model and the driver log's line) and answers ``published`` after each. Its first line
is ``{"ui": <the UI's URL>}``; its stderr is the driver log (log4j2 config from SPARK_CONF_DIR). Ends when stdin closes.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    from pyspark.sql import SparkSession

    from slaq.product import PRODUCT as SLAQ
    from sparkshim.bridge import shim_for

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[1]").appName("slaq-tab").config("spark.ui.enabled", "true")
             .config("spark.ui.port", "0").config("spark.ui.showConsoleProgress", "false").config("spark.scheduler.mode", "FAIR")
             .getOrCreate())
    try:
        pools = shim_for(spark.sparkContext).component(SLAQ.shim_component)
        print(json.dumps({"ui": spark.sparkContext.uiWebUrl}), flush=True)
        for line in sys.stdin:
            pools.publish(line.strip())
            print("published", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
