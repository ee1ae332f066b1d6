"""`riffle reproduce` at reduced size on real local-cluster Spark with a real merger daemon."""

import json
import os
import subprocess
import sys

from srlab.reproduce.riffle_figures import figures_from
from tests.fixtures import QUICK_DEFAULTS, ends


def test_reproduce_fig4_9_and_4_10_small(tmp_path):
    conf = tmp_path / "conf"  # the bench's executors stop their JIT at C1, as the tests' others do (tests/fixtures.py)
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(QUICK_DEFAULTS)
    out = subprocess.run([sys.executable, "-m", "riffle.cli", "reproduce", "--small", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "SPARK_CONF_DIR": str(conf)})
    assert out.returncode == 0, ends(out.stderr)
    report = json.loads(out.stdout)
    assert set(report["figures"]) == {"fig4.9", "fig4.10"}
    for name in ("fig4.9", "fig4.10"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    fetches = json.loads((tmp_path / "fig4.10.json").read_text())["fetches"]
    assert fetches["nway-10"]["blocks_fetched"] * 5 <= fetches["vanilla"]["blocks_fetched"]  # N-way: about N times fewer fetches
    stages = json.loads((tmp_path / "fig4.9.json").read_text())["stage_seconds"]
    assert set(stages) == {"vanilla", "nway-5", "nway-10", "nway-10-besteffort-0.9"} and all(s["job_s"] > 0 for s in stages.values())


def test_figures_from_bench_result():
    bench = {"maps": 4, "reducers": 4, "rows_per_map": 1, "master": "m", "repeats": 1, "merger_fsync": False,
             "configs": {"vanilla": {"map_stage_seconds": 1.0, "reduce_stage_seconds": 2.0, "job_seconds": 3.0, "hold_seconds": None, "blocks_fetched": 16},
                         "nway-2": {"map_stage_seconds": 1.0, "reduce_stage_seconds": 1.0, "job_seconds": 2.0, "hold_seconds": 0.1, "blocks_fetched": 8,
                                    "blocks_fetched_reduction_x": 2.0}}}
    figs = figures_from(bench)
    assert figs["fig4.10"]["fetches"]["nway-2"] == {"blocks_fetched": 8, "reduction_x": 2.0}
    assert figs["fig4.9"]["stage_seconds"]["vanilla"]["reduce_stage_s"] == 2.0
