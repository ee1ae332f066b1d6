"""An explicit ``slaq.attach``/``riffle.attach`` on real Spark switches each system on (the shared session
leaves ``spark.riffle.enabled`` unset) and says what is on in exactly one INFO line each."""

from __future__ import annotations

import logging

import riffle
import slaq


def test_an_explicit_attach_switches_each_system_on_and_says_so_in_one_info_line(spark, caplog):
    sc = spark.sparkContext
    assert sc.getConf().get("spark.riffle.enabled") is None
    slaq.detach(spark)
    riffle.detach(spark)
    try:
        with caplog.at_level(logging.INFO):
            caplog.clear()  # what the detaches said (the driver log takes SLAQ's INFO lines, so Python makes them)
            s, r = slaq.attach(spark), riffle.attach(spark)
            assert slaq.attach(spark) is s and riffle.attach(spark) is r
        assert (s.enabled, s.reason, r.enabled, r.reason) == (True, None, True, None) and r.scheduler is not None
        said = [(rec.levelname, rec.name, rec.getMessage()) for rec in caplog.records
                if rec.levelno >= logging.INFO and rec.name.split(".")[0] in ("slaq", "riffle", "sparkshim")]
        assert said == [
            ("INFO", "slaq", "SLAQ: on (policy order, epoch 0.5 s, work-conserving true); no SLAQ tab (spark.ui.enabled=false)"),
            ("INFO", "riffle", f"Riffle: on for {sc.applicationId} (mergers one per executor host at port 7338, n-way 20, "
                               "best-effort 0.95, hold timeout 30 s); no Riffle tab (spark.ui.enabled=false)"),
        ], said
    finally:
        riffle.detach(spark)
        slaq.detach(spark)
