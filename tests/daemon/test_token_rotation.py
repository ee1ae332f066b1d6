"""A rotated merger token, as the driver's fleet meets it with real merger daemons: the merger restarts with the
token file's new content, the driver's first request fails UNAUTHENTICATED, the driver reads its token file again
and sends the request once more. Before, that merger counted as refusing for the rest of the application's life.
A merger whose token still differs stays refused, with one WARN."""

from __future__ import annotations

import logging
from concurrent.futures import wait

from riffle.driver import token_file as token_file_module
from riffle.driver.config import RiffleConfig
from riffle.driver.fleet import MergerFleet
from riffle.driver.merges import Merge, MergeState
from riffle.driver.policy import MapOutput
from riffle.driver.status import REFUSED, UP
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from srsupport.daemons import free_port
from tests.fixtures import make_outputs


def merge_on(fleet: MergerFleet, address: str, dirs: list[str], shuffle_id: int) -> Merge:
    """One merge of two map outputs on ``address``, through the fleet as the scheduler sends it, once it ended."""
    make_outputs(dirs, shuffle_id, [0, 1], 4)
    m = Merge(f"r{shuffle_id}", shuffle_id, [MapOutput(shuffle_id, i, i, "1", "h", 100) for i in (0, 1)],
              SYNTHETIC_MAP_ID_BASE + shuffle_id, address, dirs)
    fleet.send(m, 4)
    if m.future is not None:
        wait([m.future], timeout=60)
        fleet.poll(m)
    return m


def test_a_rotated_token_is_read_again_and_a_still_different_one_is_refused_once(dirs, tmp_path, caplog, start_merger):
    token_file = tmp_path / "token"
    token_file.write_text("before\n")
    port = free_port()
    rotated = start_merger("--state-dir", str(tmp_path / "rotated"), token="before", port=port)
    other = start_merger("--state-dir", str(tmp_path / "other"), token="someone-elses")
    config = RiffleConfig.from_conf({"spark.riffle.enabled": "true", "spark.riffle.mergers": f"{rotated.address},{other.address}",
                                     "spark.riffle.authTokenFile": str(token_file)}.get)
    fleet = MergerFleet(config, "app-rotation")
    try:
        assert merge_on(fleet, rotated.address, dirs, 1).state is MergeState.DONE
        rotated.stop()
        token_file.write_text("after\n")
        rotated = start_merger("--state-dir", str(tmp_path / "rotated"), token="after", port=port)
        with caplog.at_level(logging.INFO, logger="riffle.driver"):
            assert merge_on(fleet, rotated.address, dirs, 2).state is MergeState.DONE  # read again, sent again
            assert fleet.health(rotated.address) == UP and fleet.token.current == "after"
            for sid in (3, 4):
                m = merge_on(fleet, other.address, dirs, sid)
                assert m.state is MergeState.FAILED and "UNAUTHENTICATED" in m.error
            assert merge_on(fleet, rotated.address, dirs, 5).state is MergeState.DONE
        assert fleet.health(other.address) == REFUSED
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1 and other.address in warnings[0] and "UNAUTHENTICATED" in warnings[0], warnings
        assert sum("read a new token" in r.getMessage() for r in caplog.records) == 1
    finally:
        fleet.close()
        rotated.stop()
        other.stop()


def test_a_merger_that_refused_the_old_token_is_asked_again_once_the_file_holds_the_new_one(dirs, tmp_path, monkeypatch, start_merger):
    """The mergers may be rotated before the driver's file is (a secret propagates to the driver's node later): the
    refusing merger is asked again, at the lease renewals, once the file holds a newer token. The file is read at
    most every REREAD_SECONDS; here every time, so the test need not wait them out."""
    monkeypatch.setattr(token_file_module, "REREAD_SECONDS", 0.0)
    token_file = tmp_path / "token"
    token_file.write_text("before\n")
    merger = start_merger("--state-dir", str(tmp_path / "state"), token="after")
    fleet = MergerFleet(RiffleConfig.from_conf({"spark.riffle.mergers": merger.address, "spark.riffle.authTokenFile": str(token_file)}.get),
                        "app-rotation")
    try:
        assert merge_on(fleet, merger.address, dirs, 1).state is MergeState.FAILED
        fleet.keep_alive()
        assert fleet.health(merger.address) == REFUSED  # the file still holds the old token
        token_file.write_text("after\n")
        fleet.keep_alive()
        assert fleet.health(merger.address) == UP
        assert merge_on(fleet, merger.address, dirs, 2).state is MergeState.DONE
    finally:
        fleet.close()
        merger.stop()
