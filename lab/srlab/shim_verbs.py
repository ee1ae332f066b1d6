"""The lab's verbs of the ``slaq-riffle`` command: ``slaq-riffle bench attach|plugin|ui`` (registered through
the ``slaq_riffle.cli`` entry point)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sparkshim.commands import emit_json, positive


def cmd_bench_attach(args: argparse.Namespace) -> int:
    from srlab.shim_bench.attach import bench_attach

    emit_json(bench_attach(args.repeat))
    return 0


def cmd_bench_plugin(args: argparse.Namespace) -> int:
    from srlab.shim_bench.plugin import bench_plugin

    emit_json(bench_plugin(args.repeat, args.jobs, args.maps, args.reducers, args.nway, args.shares, args.seconds, args.epoch,
                           args.master, logs=args.logs))
    return 0


def cmd_bench_ui(args: argparse.Namespace) -> int:
    from srlab.shim_bench.ui import bench_ui

    emit_json(bench_ui(args.epochs, args.jobs, args.shuffles, args.repeat, tuple(args.long_epochs), args.long_jobs))
    return 0


def cmd_bench_ui_wide(args: argparse.Namespace) -> int:
    from srlab.shim_bench.ui import bench_wide_history

    emit_json(bench_wide_history(args.epochs, args.jobs, args.heap, args.jar))
    return 0


def cmd_bench_ui_jobs(args: argparse.Namespace) -> int:
    from srlab.shim_bench.many_jobs import bench_many_jobs

    emit_json(bench_many_jobs(args.jobs, args.epochs, args.losses, args.epoch, args.driver_memory, args.name_bytes, args.closes))
    return 0


def register(parser: argparse.ArgumentParser, verbs: Any) -> None:
    """Adds the lab's verbs to ``slaq-riffle``'s sub-command ``verbs`` (called by the product's CLI)."""
    bench = verbs.add_parser("bench", help="benchmarks that print JSON").add_subparsers(dest="bench", required=True)
    attach = bench.add_parser("attach", help="attach time: the packaged jar vs compiling the shim first (starts Spark)",
                              description="Each sample is a fresh local driver: it times attaching the shim's JVM side for SLAQ "
                                          "and Riffle from the packaged jar, and (alternating) after compiling the shim from its "
                                          "sources into a temporary copy of the package, as first attaches did before the jar "
                                          "shipped in the wheel. Prints medians and their ratio as JSON.")
    attach.add_argument("--repeat", type=positive(int), default=5, help="samples of each kind (default 5)")
    attach.set_defaults(func=cmd_bench_attach)
    plugin = bench.add_parser("plugin", help="the plugin's out-of-process brain vs the in-process one, same workloads (starts Spark)",
                              description="Runs the same application (the `riffle bench spark` shuffle, then the `slaq bench "
                                          "enforce` measurement) with the same confs under a pyspark driver (the brain in "
                                          "process) and under a Java driver (the plugin starts the brain as a child process), "
                                          "alternating. Prints medians and plugin/in-process ratios as JSON.")
    plugin.add_argument("--repeat", type=positive(int), default=3, help="applications of each kind (default 3)")
    plugin.add_argument("--jobs", type=positive(int), default=3, help="measured shuffle jobs per application (default 3)")
    plugin.add_argument("--maps", type=positive(int), default=100)
    plugin.add_argument("--reducers", type=positive(int), default=100)
    plugin.add_argument("--nway", type=positive(int), default=10, help="spark.riffle.nway (default 10)")
    plugin.add_argument("--shares", default="0.5,0.3,0.2", help="the enforcement measurement's target shares")
    plugin.add_argument("--seconds", type=positive(float), default=10.0, help="the enforcement measurement's window per mode")
    plugin.add_argument("--epoch", type=positive(float), default=1.0, help="seconds per epoch (deposits and spark.slaq.epoch)")
    plugin.add_argument("--master", default="local-cluster[2,1,1024]")
    plugin.add_argument("--logs", type=Path, help="keep each application's driver log in this directory")
    plugin.set_defaults(func=cmd_bench_plugin)
    ui = bench.add_parser("ui", help="the SLAQ and Riffle tabs at scale: event-log bytes and serving time, live and in the History Server "
                                     "(starts Spark and a History Server)",
                          description="Feeds one local driver synthetic models (EPOCHS epochs of JOBS jobs, then SHUFFLES settled "
                                      "shuffles), times each tab's HTML and JSON over HTTP, counts the tabs' bytes in the event log, "
                                      "then times the same pages in a History Server replaying that log, and last replays the log lengthened by "
                                      "LONG_EPOCHS more epochs (the heap in use after a full GC, per length). Prints JSON.")
    ui.add_argument("--epochs", type=positive(int), default=600, help="SLAQ epochs (default 600: the most the tab keeps)")
    ui.add_argument("--jobs", type=positive(int), default=50, help="SLAQ jobs running in every epoch (default 50)")
    ui.add_argument("--shuffles", type=positive(int), default=1000, help="Riffle shuffles settling one by one (default 1000)")
    ui.add_argument("--repeat", type=positive(int), default=5, help="timed fetches of each page (default 5)")
    ui.add_argument("--long-epochs", type=positive(int), nargs="*", default=[2_000, 20_000, 60_000],
                    help="then replay the log with this many more SLAQ epochs, once per length (default 2000 20000 60000; none: skip)")
    ui.add_argument("--long-jobs", type=positive(int), default=15, help="jobs in each of those epochs (default 15)")
    ui.set_defaults(func=cmd_bench_ui)
    wide = bench.add_parser("ui-wide", help="a History Server replaying a wide application's SLAQ tab (starts Spark and a History Server)",
                            description="Replays EPOCHS synthetic SLAQ epochs of JOBS jobs each in a History Server with a HEAP heap: "
                                        "whether the tab's JSON and page answer, what they keep, the heap after a full GC, and any "
                                        "OutOfMemoryError. Prints JSON.")
    wide.add_argument("--epochs", type=positive(int), default=600)
    wide.add_argument("--jobs", type=positive(int), default=1000)
    wide.add_argument("--heap", default="512m", help="the History Server's heap (SPARK_DAEMON_MEMORY; default 512m)")
    wide.add_argument("--jar", type=Path, help="the shim jar the History Server loads (default: this checkout's)")
    wide.set_defaults(func=cmd_bench_ui_wide)
    jobs = bench.add_parser("ui-jobs", help="thousands of open slaq.job blocks in one pyspark driver (starts Spark)",
                            description="Opens JOBS jobs from one thread in a local[2] driver with a DRIVER_MEMORY heap and the UI on, "
                                        "runs EPOCHS epochs, then reports the heap after a full GC (and its growth per epoch), the "
                                        "epoch's length, the SLAQ tab's pages, jobs closed per second and the pools' fail-open WARNs. "
                                        "Prints JSON.")
    jobs.add_argument("--jobs", type=positive(int), default=10_000)
    jobs.add_argument("--epochs", type=positive(int), default=20, help="epochs measured (default 20)")
    jobs.add_argument("--losses", type=int, default=1, help="losses each job reports (default 1)")
    jobs.add_argument("--epoch", type=positive(float), default=0.5, help="spark.slaq.epoch in seconds (default 0.5)")
    jobs.add_argument("--driver-memory", default="1g")
    jobs.add_argument("--name-bytes", type=positive(int), default=16)
    jobs.add_argument("--closes", type=int, default=0, help="jobs closed, oldest first (default 0: all)")
    jobs.set_defaults(func=cmd_bench_ui_jobs)
