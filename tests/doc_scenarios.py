"""Which documented commands the suite runs, in which order, and why the others are not run.

``tests/spark/test_doc_commands.py`` runs each scenario's commands, exactly as written, in a user's shell
with only the built wheel installed; ``tests/unit/test_doc_commands_covered.py`` holds every command in
README.md, docs/ and the examples' docstrings to one of the two lists, so a new command is run or has a
stated reason.
"""

from __future__ import annotations

import re

README, INSTALL, UI = "README.md", "docs/install.md", "docs/ui.md"
SQL_EXAMPLE, TRAIN_EXAMPLE, TUNE_EXAMPLE = ("examples/sql_shuffle_with_riffle.py", "examples/train_with_report_loss.py",
                                            "examples/tune_with_crossvalidator.py")
# a pip user's SPARK_HOME (pyspark's package directory, which holds Spark's sbin/), unless they have one
SPARK_HOME = 'export SPARK_HOME="${SPARK_HOME:-$(python -c \'import os, pyspark; print(os.path.dirname(pyspark.__file__))\')}"'
MERGER = ("mkdir -p /tmp/spark-local", "riffle-merger serve --listen 127.0.0.1:7338 --local-dir /tmp/spark-local --no-fsync &",
          "riffle status 127.0.0.1:7338 --wait 30")

# scenario -> its steps: (source, command) run in order in one shell (a background merger lives until the scenario ends)
SCENARIOS: dict[str, list[tuple[str, str]]] = {
    "slaq_app": [(README, "spark-submit --conf spark.scheduler.mode=FAIR --conf spark.slaq.enabled=true app.py")],
    "slaq_app_template": [(INSTALL, 'spark-submit --properties-file "$(slaq-riffle conf --path slaq)" app.py')],
    "spark_sql": [*((INSTALL, c) for c in MERGER),
                  (INSTALL, 'spark-sql --jars "$(slaq-riffle jar)" --conf spark.plugins=io.slaqriffle.SlaqRifflePlugin '
                            "--conf spark.local.dir=/tmp/spark-local --conf spark.riffle.enabled=true "
                            "--conf spark.riffle.mergers=127.0.0.1:7338 "
                            "--conf spark.riffle.cost.enabled=false "
                            "-e 'SELECT id % 10 AS k, count(*) AS n FROM range(0, 1000000, 1, 8) GROUP BY k ORDER BY k'")],
    "sql_example": [*((SQL_EXAMPLE, c) for c in MERGER),
                    (SQL_EXAMPLE, 'spark-submit --master "local-cluster[2,1,1024]" --conf spark.local.dir=/tmp/spark-local '
                                  "--conf spark.riffle.enabled=true --conf spark.riffle.mergers=127.0.0.1:7338 "
                                  "--conf spark.riffle.cost.enabled=false examples/sql_shuffle_with_riffle.py")],
    "train_example": [(TRAIN_EXAMPLE, 'spark-submit --master "local-cluster[2,1,1024]" --conf spark.scheduler.mode=FAIR '
                                      "--conf spark.slaq.enabled=true examples/train_with_report_loss.py")],
    "tune_example": [(TUNE_EXAMPLE, 'spark-submit --master "local-cluster[2,1,1024]" --conf spark.scheduler.mode=FAIR '
                                    "--conf spark.slaq.enabled=true examples/tune_with_crossvalidator.py")],
    "history_server": [(UI, "mkdir -p /tmp/spark-events"),
                       (UI, "spark-submit --conf spark.eventLog.enabled=true --conf spark.eventLog.dir=/tmp/spark-events "
                            "--conf spark.scheduler.mode=FAIR --conf spark.slaq.enabled=true app.py"),
                       (UI, 'export SPARK_DAEMON_CLASSPATH="$(slaq-riffle jar)"'),
                       (UI, 'export SPARK_HISTORY_OPTS="-Dspark.history.fs.logDirectory=/tmp/spark-events"'),
                       (UI, SPARK_HOME), (UI, "$SPARK_HOME/sbin/start-history-server.sh")],
    # a shell of its own, as a user's later one: install.md's SPARK_HOME line first (the user's shell has none)
    "history_server_stop": [(INSTALL, SPARK_HOME), (UI, "$SPARK_HOME/sbin/stop-history-server.sh")],
}

# commands not run, each with the reason (the first rule that matches a command applies)
NOT_RUN: list[tuple[str, str]] = [
    (r"^source \.venv/bin/activate\b", "a clone's venv: test_doc_commands.py runs every scenario in a shell whose PATH starts "
                                       "with the wheel's venv, which is what activating does"),
    (r"(^|\$\()(\.venv/bin/|bash scripts/)", "the clone's set-up, test suite, lab benchmarks and demos (not in the wheel): CI runs "
                                       "scripts/test.sh; each lab verb's --help and small runs are tests of their own"),
    (r"node1|/etc/riffle|/data/spark-local|/opt/slaq-riffle|\bsudo\b|systemctl|journalctl|kubectl|k8s://|openssl|/dev/urandom"
     r"|python -m pip wheel",
     "a multi-node, root or Kubernetes step (hosts, /etc, systemd, secrets): tests/cluster runs the same daemons and confs on "
     "loopback nodes with a token and TLS; tests/daemon/test_merger_wheel.py builds and installs the wheel"),
    (r"--class com\.example\.Train train\.jar", "the user's own jar: tests/spark/test_plugin.py runs a compiled Java "
                                                "application with these confs"),
    (r"start-connect-server\.sh", "a Connect server daemon: tests/spark/test_connect.py runs SparkConnectServer with the "
                                  "plugin under spark-submit"),
    (r"spark\.slaq\.recordTrace|/tmp/slaq-traces/", "the trace's name holds the application id: tests/spark/test_record_trace.py runs "
                                                     "an application with this conf, then slaq simulate --check and --project on its trace; "
                                                     "test_doc_commands.py does the same with only the wheel"),
]


def not_run_reason(command: str) -> str | None:
    return next((why for pattern, why in NOT_RUN if re.search(pattern, command)), None)
