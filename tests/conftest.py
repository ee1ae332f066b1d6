"""Shared fixtures (one real Spark session, local-cluster with two executor JVMs, per test run) and markers.

Tests are foldered by kind: ``unit`` (pure code), ``daemon`` (real merger daemons, no Spark), ``spark``
(a real Spark session) and ``cluster`` (the multi-node loopback cluster). Everything under ``spark`` and
``cluster`` is marked ``slow`` (and ``cluster``) here, so ``pytest -m "not slow"`` is the fast loop; tests that start
processes of their own are marked ``e2e`` too (``E2E_TESTS``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

CONF_DIR = pytest.StashKey[str]()  # the run's own SPARK_CONF_DIR, removed at its end


def pytest_configure(config):
    """Every driver JVM the tests start through spark-submit (pyspark's gateway, spark-submit and spark-sql runs) stops
    its JIT at C1 (tests/fixtures.py: QUICK_JVM), unless the caller set SPARK_SUBMIT_OPTS; so do the executors of every
    application that reads spark-defaults.conf, from a SPARK_CONF_DIR of the run's own unless the caller set one (a test
    that needs a conf dir of its own writes QUICK_DEFAULTS into it)."""
    from tests.fixtures import QUICK_DEFAULTS, QUICK_JVM

    os.environ.setdefault("SPARK_SUBMIT_OPTS", QUICK_JVM)
    if "SPARK_CONF_DIR" not in os.environ:
        conf = Path(tempfile.mkdtemp(prefix="slaq-riffle-conf-"))
        (conf / "spark-defaults.conf").write_text(QUICK_DEFAULTS)
        os.environ["SPARK_CONF_DIR"] = config.stash[CONF_DIR] = str(conf)


def pytest_unconfigure(config):
    if CONF_DIR in config.stash:
        shutil.rmtree(config.stash[CONF_DIR], ignore_errors=True)


@pytest.fixture(scope="session")
def spark_local_root():
    root = Path(tempfile.mkdtemp(prefix="slaq-riffle-spark-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(spark_local_root):
    """A real SparkSession on ``local-cluster[2,1,1024]`` whose shuffle files live under ``spark_local_root``."""
    from pyspark.sql import SparkSession

    from srsupport.session import neutral_gateway

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    neutral_gateway()  # this session's confs must not become defaults of later sessions in this process
    session = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("slaq-riffle-tests")
               .config("spark.local.dir", str(spark_local_root))
               .config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.shuffle.sort.bypassMergeThreshold", "1")
               .config("spark.scheduler.mode", "FAIR")
               .config("spark.slaq.enabled", "true")
               .config("spark.slaq.epoch", "0.5s")
               .getOrCreate())
    yield session
    session.stop()


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory):
    """The wheel built from this checkout's sources, installed alone into a fresh venv (built once per run)."""
    from srsupport.wheel import REPO, install

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to copy the sources from")
    return install(tmp_path_factory.mktemp("wheel"))


SLOW_FOLDERS = ("spark", "cluster")
# What can differ between Spark lines, run on every line CI tests (marker spark_line; scripts/test.sh), each test
# whole or its module: SLAQ's pools and capture, merged RDD and SQL shuffles with results equal to Riffle off (row
# checksums where the line has them), the plugin under spark-sql, both tabs live and in the History Server (test_history_server.py), and the
# built wheel on a host without javac. docs/install.md's table says the same.
SPARK_LINE_TESTS = (
    # the seam's handles and the shim's compile on this line's jars (the module's source checks are the same on every line)
    "tests/spark/test_spark_internals.py::test_self_check_finds_every_internal_on_this_spark",
    "tests/spark/test_spark_internals.py::test_the_shim_compiles_against_this_lines_jars",
    "tests/spark/test_token_pools.py",
    "tests/spark/test_zero_change_tuning.py::test_cross_validator_fits_are_separate_jobs_with_results_equal_to_slaq_off",
    # the capture path is one for every estimator: a binomial and a multinomial L-BFGS fit, an OWL-QN one, a neural net
    "tests/spark/test_mllib_capture.py::test_captured_losses_equal_the_estimators_objective_history[lr-binomial-l2]",
    "tests/spark/test_mllib_capture.py::test_captured_losses_equal_the_estimators_objective_history[lr-multinomial]",
    "tests/spark/test_mllib_capture.py::test_captured_losses_equal_the_estimators_objective_history[lr-l1]",
    "tests/spark/test_mllib_capture.py::test_captured_losses_equal_the_estimators_objective_history[mlp]",
    "tests/spark/test_riffle_on_spark.py::test_reduce_by_key",
    "tests/spark/test_riffle_on_spark.py::test_sql_group_by_and_join",
    "tests/spark/test_riffle_skew_checksum.py::test_row_checksums_pass_on_merged_shuffles",
    "tests/spark/test_plugin.py::test_spark_sql_cli_merges_with_only_jars_and_confs",
    # the tabs' replay in this line's History Server; the bounded-memory replay of a long log is the tabs' own code
    "tests/spark/test_history_server.py::test_event_log_carries_both_tabs",
    "tests/spark/test_history_server.py::test_history_",
    "tests/spark/test_wheel_attach.py::test_installed_wheel_attaches_without_javac",
)


# End-to-end: each starts processes of its own (spark-submit, spark-sql, a driver or app JVM beside the shared session,
# a wheel install, a History Server, a multi-node cluster); `-m "not slow and not e2e"` and the like leave them out
E2E_TESTS = (
    "tests/cluster/test_fault_matrix.py",
    "tests/cluster/test_node_failures.py",
    "tests/cluster/test_riffle_cluster.py",
    "tests/cluster/test_slaq_cluster.py",
    "tests/daemon/test_merger_wheel.py",
    "tests/spark/test_bad_conf_stops_the_app.py",
    "tests/spark/test_connect.py",
    "tests/spark/test_doc_commands.py",
    "tests/spark/test_history_server.py",
    "tests/spark/test_loss_capture_lifecycle.py",
    "tests/spark/test_mllib_bench.py",
    "tests/spark/test_plugin.py",
    "tests/spark/test_riffle_loads_no_slaq.py",
    "tests/spark/test_riffle_reproduce.py::test_reproduce_fig4_9_and_4_10_small",
    "tests/spark/test_riffle_ui.py",
    "tests/spark/test_spark_submit_no_code_change.py",
    "tests/spark/test_storage_spill.py",
    "tests/spark/test_ui_tab.py",
    "tests/spark/test_wheel_attach.py",
)
# Outside the slow folders, tests that wait out a real timer of several seconds (a lease, an idle timeout, a memory
# cap's refusals) in a process of their own: run by the whole suite, left out of the fast loop (`-m "not slow"`)
SLOW_TESTS = (
    "tests/daemon/test_merger_ops.py::test_metrics_endpoint_is_bounded_in_connections_and_threads",
    "tests/daemon/test_merger_ops.py::test_the_driver_renews_its_lease_where_it_has_merged_files",
    "tests/daemon/test_merger_ops.py::test_an_application_silent_for_its_lease_loses_its_merged_files",
    "tests/daemon/test_merger_hardening.py::test_waiting_requests_stay_within_memory_plus_64mb",
    "tests/daemon/test_merger_hardening.py::test_cancel_after_the_copy_loop_never_publishes_and_a_late_one_says_so",
    "tests/daemon/test_daemon.py::test_a_reply_over_4mib_reaches_a_tls_client_like_a_plaintext_one",
)
# Cluster modules that kill nodes of the shared cluster (tests/cluster/conftest.py): after every other module using it
CLUSTER_BREAKERS = ("tests/cluster/test_node_failures.py",)


def _folder(item: pytest.Item) -> str:
    parts = Path(str(item.path)).parts
    return parts[parts.index("tests") + 1] if "tests" in parts[:-1] else ""


def _order(item: pytest.Item) -> int:
    """Multi-node cluster tests first: they start SparkContexts of their own, and one Python process holds one at a time,
    so they must run before the shared local-cluster session above is created. Among them the fault matrix first (its
    application is then the token and TLS tests', tests/cluster/conftest.py: shared_app) and the node killers last."""
    if _folder(item) != "cluster":
        return 3
    if item.nodeid.startswith("tests/cluster/test_fault_matrix.py"):
        return 0
    return 2 if item.nodeid.startswith(CLUSTER_BREAKERS) else 1


def pytest_collection_modifyitems(session, config, items):
    """Marks by folder and by the lists above; and orders the cluster tests (see ``_order``)."""
    for item in items:
        folder = _folder(item)
        if folder in SLOW_FOLDERS or item.nodeid.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
        if folder == "cluster":
            item.add_marker(pytest.mark.cluster)
        if item.nodeid.startswith(SPARK_LINE_TESTS):
            item.add_marker(pytest.mark.spark_line)
        if item.nodeid.startswith(E2E_TESTS):
            item.add_marker(pytest.mark.e2e)
    items.sort(key=_order)
