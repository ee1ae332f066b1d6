"""What the SLAQ and Riffle tabs cost at scale: event-log bytes per SLAQ epoch and per Riffle shuffle,
and the time to serve each tab (HTML and JSON) with a full model, live and in Spark's History Server.

One local driver (``local[1]``, UI on 127.0.0.1, event log uncompressed in a temporary directory) with
the shim's SLAQ and Riffle JVM sides attached, fed synthetic models directly, the way the Python epoch
loop and merge scheduler feed them (one ``epoch_status`` per epoch; one ``riffle_status`` per settled
shuffle): ``epochs`` epochs of ``jobs`` running jobs, then ``shuffles`` shuffles settling one by one.
Each page is then fetched over HTTP from the live UI (``repeat`` times after one warm-up; medians), the
driver stops, the event log's tab events are counted by tab, and a real History Server started on that
log serves the same four pages (its first fetch includes replaying the log and rebuilding the tabs).
Last, the same log with thousands more SLAQ epochs (hours of an application) is replayed by a History Server
with a 1 GiB heap, once per length: its first fetch, and the heap in use after a full GC (which stays flat:
the History Server holds each tab's bounded model, not its events).
Messages are built from the schema (slaq/messages.json, riffle/messages.json), so fields the tabs gain keep a value.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from riffle.messages import SCHEMA as RIFFLE_SCHEMA
from riffle.product import PRODUCT as RIFFLE
from slaq.messages import SCHEMA as SLAQ_SCHEMA
from slaq.product import PRODUCT as SLAQ
from srlab.pages import fetch, time_pages
from srlab.shim_bench.history_server import event_log_files, heap_used_mb, history_server

SCHEMA = {**SLAQ_SCHEMA, **RIFFLE_SCHEMA}

PAGES = ("/slaq/", "/slaq/json/", "/riffle/", "/riffle/json/")
TAB_EVENT = "io.slaqriffle.seam.TabEvent"


def synthetic(kind: str, **values: Any) -> dict[str, Any]:
    """A ``kind`` message as JSON-ready dict: ``values``, and a plausible value of its type for every other field."""
    fields: dict[str, Any] = {"type": kind}
    for name, typ in SCHEMA[kind].items():
        if name in values:
            fields[name] = values[name]
        elif typ in ("int", "long"):
            fields[name] = 1
        elif typ == "float":
            fields[name] = 0.5
        elif typ == "bool":
            fields[name] = False
        elif typ == "str":
            fields[name] = name
        elif typ.startswith("list["):
            fields[name] = []
        elif typ.startswith("dict["):
            fields[name] = {}
        else:
            fields[name] = synthetic(typ)
    return fields


def epoch(e: int, jobs: int) -> str:
    """Epoch ``e`` with ``jobs`` running jobs, each with its own loss curve and cores."""
    rows = [synthetic("job_status", job=f"job-{j:03d}", state="running", iterations=e + 1, loss=1.0 / (e + j + 1),
                      normalized_loss=1.0 / (e + j + 1), predicted_gain=0.01 * (j % 7), cores=0.25 + (j % 4) * 0.25, used_cores=0.2 + (j % 4) * 0.2,
                      first_loss=1.0, loss_floor=0.0)
            for j in range(jobs)]
    return json.dumps(synthetic("epoch_status", epoch=e, t=0.5 * e, policy="slaq", capacity=float(jobs), jobs=rows))


def shuffle_row(s: int) -> str:
    return json.dumps(synthetic("riffle_shuffle", shuffle=s, stage=2 * s, name=f"reduceByKey at /app/job.py:{s}", maps=64, reducers=32,
                                policy="nway 4", state="settled", groups_merged=16, groups_fell_back={"merger_down": 1},
                                bytes_merged=1 << 20, blocks_unmerged=2048, blocks_merged=512, gate_wait_seconds=0.04, reason="all merges finished",
                                outputs=64, unmerged_why=""))


def riffle_status(rows: list[str], settled: int) -> str:
    """The model after ``settled`` shuffles (``rows`` pre-encoded), two mergers, matching totals."""
    mergers = [synthetic("riffle_merger", address=f"10.0.0.{m}:7337", health="up", queued=0, running=0, merges_done=8 * settled, merges_failed=0,
                         merges_cancelled=0) for m in (1, 2)]
    totals = synthetic("riffle_totals", shuffles=settled, groups_merged=16 * settled, groups_fell_back={"merger_down": settled},
                       bytes_merged=settled << 20, blocks_unmerged=2048 * settled, blocks_merged=512 * settled, gate_wait_seconds=0.04 * settled)
    head = json.dumps({"type": "riffle_status", "t": 0.1 * settled})[:-1]
    return f'{head}, "shuffles": [{", ".join(rows)}], "unmerged": [], "mergers": {json.dumps(mergers)}, "totals": {json.dumps(totals)}}}'


def tab_event_bytes(logs: list[Path]) -> Counter[str]:
    """Bytes (with their newlines) of the event log's tab events, by tab."""
    sizes: Counter[str] = Counter()
    for log in logs:
        with open(log, "rb") as f:
            for line in f:
                if TAB_EVENT.encode() in line:
                    sizes[json.loads(line)["tab"]] += len(line)
    return sizes


def long_log(src: Path, dest: Path, app: str, epochs: int, jobs: int, extra: list[str] | None = None) -> str:
    """One uncompressed event log file in ``dest``: application ``app``'s own events from log directory ``src`` (its
    id renamed) with ``epochs`` synthetic SLAQ epochs of ``jobs`` jobs each, then the ``extra`` lines, before its end;
    returns the new app id. What hours of an application's SLAQ tab add to its log, without running for hours."""
    long_id = f"{app}-long{epochs}"
    lines = "".join(p.read_text() for p in event_log_files(src) if app in str(p)).replace(app, long_id).splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if '"Event":"SparkListenerApplicationEnd"' in line)
    with open(dest / long_id, "w") as out:
        out.writelines(lines[:end])
        for e in range(epochs):
            out.write(f'{{"Event":"{TAB_EVENT}","tab":"slaq","message":{epoch(e, jobs)}}}\n')
        out.writelines((extra or []) + lines[end:])
    return long_id


def long_logs(events: Path, app_id: str, tmp: Path, lengths: tuple[int, ...], jobs: int) -> list[dict[str, Any]]:
    """For each length, the app's log with that many more SLAQ epochs of ``jobs`` jobs, replayed by a History Server with
    a 1 GiB heap: the log's size, the first fetch of the SLAQ JSON (the replay) and the heap in use after a full GC."""
    rows = []
    for n in lengths:
        logs = tmp / f"long-{n}"
        logs.mkdir()
        long_id = long_log(events, logs, app_id, n, jobs)
        size = (logs / long_id).stat().st_size
        with history_server(logs, long_id, tmp / f"history-{n}.log", {"SPARK_DAEMON_MEMORY": "1g"}) as base:
            t0 = time.perf_counter()
            fetch(base + "/slaq/json/", timeout=600)
            replay = time.perf_counter() - t0
            rows.append({"epochs": n, "jobs": jobs, "log_mib": round(size / 2**20, 1), "first_load_s": round(replay, 2),
                         "heap_used_mib_after_gc": heap_used_mb(base)})
        (logs / long_id).unlink()
    return rows


def app_log(events: Path) -> str:
    """A tiny finished application's event log in ``events`` (local[1], no UI); returns its id (what :func:`long_log` extends)."""
    from pyspark import SparkConf, SparkContext

    conf = (SparkConf().setMaster("local[1]").setAppName("bench-ui-wide").set("spark.ui.enabled", "false")
            .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", events.as_uri()).set("spark.eventLog.compress", "false"))
    sc = SparkContext(conf=conf)
    try:
        sc.parallelize(range(10), 2).count()
        return str(sc.applicationId)
    finally:
        sc.stop()


def bench_wide_history(epochs: int = 600, jobs: int = 1000, heap: str = "512m", jar: Path | None = None) -> dict[str, Any]:
    """A History Server with a ``heap`` heap replaying ``epochs`` SLAQ epochs of ``jobs`` jobs each (issue #47: 600 x 1,000,
    a 267 MB log, ran a 512 MiB server out of memory while it saved the tab's model): whether the tab's JSON and page
    answer, the epochs and jobs they keep, the heap in use after a full GC, and any OutOfMemoryError in its log.
    ``jar``: the shim jar the server loads (default: this checkout's; another to compare a build from before a change)."""
    from sparkshim.build import PACKAGED_JAR

    with tempfile.TemporaryDirectory(prefix="bench-ui-wide-") as tmp:
        events, logs = Path(tmp) / "events", Path(tmp) / "logs"
        events.mkdir()
        logs.mkdir()
        long_id = long_log(events, logs, app_log(events), epochs, jobs)
        size = (logs / long_id).stat().st_size
        out: dict[str, Any] = {"epochs": epochs, "jobs": jobs, "heap": heap, "log_mib": round(size / 2**20, 1)}
        server_log = Path(tmp) / "history.log"
        with history_server(logs, long_id, server_log, {"SPARK_DAEMON_MEMORY": heap}, jar or PACKAGED_JAR) as base:
            t0 = time.perf_counter()
            try:
                status = json.loads(fetch(base + "/slaq/json/", timeout=900))
                out["json"] = {"ok": True, "epochs_kept": len(status["history"]), "jobs_in_last": len(status["history"][-1]["jobs"])}
            except (OSError, ValueError, KeyError, IndexError) as exc:
                out["json"] = {"ok": False, "error": str(exc)[:200]}
            out["first_load_s"] = round(time.perf_counter() - t0, 1)
            try:
                out["page_bytes"] = len(fetch(base + "/slaq/", timeout=300).encode())
            except OSError as exc:
                out["page_bytes"] = f"failed: {str(exc)[:120]}"
            try:
                out["heap_used_mib_after_gc"] = heap_used_mb(base)
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                out["heap_used_mib_after_gc"] = f"unknown: {str(exc)[:120]}"
        text = server_log.read_text(errors="replace")
        out["out_of_memory"] = text.count("OutOfMemoryError")
        out["tab_unavailable"] = "tab of" in text and "cannot" in text
    return out


def bench_ui(epochs: int = 600, jobs: int = 50, shuffles: int = 1000, repeat: int = 5,
             long_epochs: tuple[int, ...] = (2_000, 20_000, 60_000), long_jobs: int = 15) -> dict[str, Any]:
    from pyspark import SparkConf, SparkContext

    from sparkshim.bridge import shim_for

    with tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp:
        events = Path(tmp) / "events"
        events.mkdir()
        conf = (SparkConf().setMaster("local[1]").setAppName("bench-ui").set("spark.ui.enabled", "true").set("spark.ui.port", "0")
                .set("spark.ui.showConsoleProgress", "false").set("spark.scheduler.mode", "FAIR")
                .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", events.as_uri()).set("spark.eventLog.compress", "false"))
        sc = SparkContext(conf=conf)
        try:
            app_id = sc.applicationId
            shim = shim_for(sc)
            pools, tracker = shim.component(SLAQ.shim_component), shim.component(RIFFLE.shim_component)
            t0 = time.perf_counter()
            for e in range(epochs):
                pools.publish(epoch(e, jobs))
            slaq_publish = time.perf_counter() - t0
            rows: list[str] = []
            t0 = time.perf_counter()
            for s in range(shuffles):
                rows.append(shuffle_row(s))
                tracker.publishStatus(riffle_status(rows, s + 1))
            riffle_publish = time.perf_counter() - t0
            live = time_pages(str(sc.uiWebUrl), PAGES, repeat)
        finally:
            sc.stop()
        logs = event_log_files(events)
        sizes = tab_event_bytes(logs)
        total = sum(log.stat().st_size for log in logs)
        with history_server(events, app_id, Path(tmp) / "history.log") as base:
            t0 = time.perf_counter()
            fetch(base + "/slaq/json/", timeout=600)
            first = time.perf_counter() - t0
            history = time_pages(base, PAGES, repeat)
        long = long_logs(events, app_id, Path(tmp), long_epochs, long_jobs)
    return {
        "model": {"epochs": epochs, "jobs": jobs, "shuffles": shuffles},
        "event_log": {"bytes_total": total, "slaq_bytes": sizes["slaq"], "riffle_bytes": sizes["riffle"],
                      "slaq_bytes_per_epoch": round(sizes["slaq"] / epochs), "slaq_bytes_per_job_epoch": round(sizes["slaq"] / (epochs * jobs), 1),
                      "riffle_bytes_per_shuffle": round(sizes["riffle"] / shuffles)},
        "publish_ms": {"slaq_per_epoch": round(1000 * slaq_publish / epochs, 3), "riffle_per_shuffle": round(1000 * riffle_publish / shuffles, 3)},
        "live": live,
        "history": {"first_load_s": round(first, 2), **history},
        "history_long_logs": long,
    }
