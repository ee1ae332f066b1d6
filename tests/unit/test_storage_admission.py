"""slaq.live.admission: caching fits start while storage memory holds their copies, best predicted gain per byte first."""

from __future__ import annotations

import logging
import threading

from slaq.live.admission import MB, CachedRdd, Demand, StorageAdmission, StorageReading, Tracked, admit, attribute, gain_per_byte
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.status import STORAGE
from slaq.predict.prior import fit_key
from srsupport.slaq_watch import Statuses
from tests.fixtures import FakeClock, FakePools


def test_fits_start_in_arrival_order_while_their_caches_fit():
    demands = [Demand("a", 100), Demand("b", 100), Demand("c", 100)]
    assert admit(demands, 250) == {"a", "b"}
    assert admit(demands, 300) == {"a", "b", "c"}


def test_a_later_small_fit_never_overtakes_the_first_waiting_one():
    demands = [Demand("a", 200, started=True), Demand("big", 200), Demand("small", 10)]
    assert admit(demands, 250) == {"a"}  # "small" would fit, but "big" came first


def test_started_fits_stay_admitted_even_when_storage_shrank():
    demands = [Demand("a", 200, started=True), Demand("b", 200, started=True), Demand("c", 1)]
    assert admit(demands, 100) == {"a", "b"}


def test_with_nothing_running_the_first_fit_starts_whatever_its_size():
    assert admit([Demand("huge", 10_000), Demand("next", 1)], 100) == {"huge"}
    assert admit([], 100) == set()


def test_the_measured_size_replaces_the_estimate_once_the_cache_is_complete():
    fit = Tracked("a", "uid1: training ", 100.0, started=True)
    building = [CachedRdd("uid1: training blocks (blockSizeInMB=1.0)", 30.0, complete=False, rdd_id=5)]
    assert attribute(building, [fit]) == ({"a": (100.0, False)}, 0.0)  # partial: no less than the estimate
    done = [CachedRdd("uid1: training blocks (blockSizeInMB=1.0)", 40.0, complete=True, rdd_id=5)]
    assert attribute(done, [fit]) == ({"a": (40.0, True)}, 0.0)


def test_a_tuners_parallel_fits_share_their_estimators_uid_and_count_the_mean():
    fits = [Tracked("a", "uid1: training ", 100.0, True), Tracked("b", "uid1: training ", 100.0, True)]
    two = [CachedRdd("uid1: training blocks", 40.0, True, 7), CachedRdd("uid1: training blocks", 60.0, True, 8)]
    assert attribute(two, fits)[0] == {"a": (50.0, True), "b": (50.0, True)}


def test_an_unnamed_cache_is_the_first_unclaimed_one_cached_after_its_fit_arrived_and_the_rest_is_other_data():
    rdds = [CachedRdd("input", 150.0, True, 3), CachedRdd("uid1: training blocks", 120.0, True, 9),
            CachedRdd("MapPartitionsRDD", 130.0, True, 11)]
    fits = [Tracked("lr", "uid1: training ", 100.0, True, seen_id=3), Tracked("mlp", "", 100.0, True, seen_id=3),
            Tracked("mlp2", "", 90.0, True, seen_id=3), Tracked("later", "", 80.0, False, seen_id=3)]
    caches, other = attribute(rdds, fits)
    assert caches == {"lr": (120.0, True), "mlp": (130.0, True), "mlp2": (90.0, False), "later": (80.0, False)}
    assert other == 150.0  # the input's cache, which existed before the fits arrived


class Storage:
    """A storage status the test changes by hand."""

    def __init__(self, capacity: float):
        self.reading = StorageReading(capacity)

    def __call__(self) -> StorageReading:
        return self.reading


def test_a_waiting_fit_starts_when_a_running_one_ends_and_measurement_can_admit_more(caplog):
    storage = Storage(1000 * MB)
    changes: list[int] = []
    adm = StorageAdmission(storage, lambda: changes.append(1), clock=lambda: 0.0, headroom=1.0)
    with caplog.at_level(logging.INFO, logger="slaq.admission"):
        for job in ("a", "b", "c"):
            adm.arrive(job, f"{job}: training ", 400 * MB)
    assert adm.waiting() == {"c"}
    assert sum("c waits for storage memory" in r.getMessage() for r in caplog.records) == 1
    # "a"'s cache turns out smaller than estimated: "c" fits next to the measured copies
    storage.reading = StorageReading(1000 * MB, (CachedRdd("a: training blocks", 100 * MB, True),))
    adm.refresh()
    assert adm.waiting() == set() and changes
    adm.wait("c")  # admitted: returns at once


def test_a_waiting_fits_thread_blocks_until_an_end_frees_room():
    adm = StorageAdmission(Storage(500.0), headroom=1.0)
    adm.arrive("a", "a: ", 400.0)
    adm.arrive("b", "b: ", 400.0)
    started = threading.Event()

    def fit_b() -> None:
        adm.wait("b")
        started.set()

    t = threading.Thread(target=fit_b)
    t.start()
    assert not started.wait(0.05) and adm.waiting() == {"b"}
    adm.end("a")
    t.join(5)
    assert started.is_set() and adm.waiting() == set()


def test_stop_releases_every_waiting_fit_and_a_failed_read_admits_on_what_is_known():
    def broken() -> StorageReading:
        raise RuntimeError("py4j down")

    adm = StorageAdmission(broken)
    adm.arrive("a", "a: ", 1e12)
    adm.arrive("b", "b: ", 1e12)
    assert adm.waiting() == set()  # nothing known about storage: nobody is held back

    held = StorageAdmission(Storage(100.0), headroom=1.0)
    held.arrive("a", "a: ", 80.0)
    held.arrive("b", "b: ", 80.0)
    assert held.waiting() == {"b"}
    held.stop()
    held.wait("b")
    assert held.waiting() == set()


def test_the_loop_gives_a_waiting_fit_no_cores_and_says_why():
    waiting = {"b"}
    statuses = Statuses()
    loop = EpochLoop(FakePools(), policy="slaq", waiting=lambda: set(waiting), observers=[statuses])
    loop.add(LiveJob("a", 1.0))
    loop.add(LiveJob("b", 1.0))
    alloc = loop.allocate(2.0)
    assert alloc["b"] == 0.0 and alloc["a"] > 0.0
    assert statuses.decided is not None and statuses.decided.held == {"b"}
    assert [f.why for f in statuses.decided.figures][1] == STORAGE
    waiting.clear()
    assert loop.allocate(2.0)["b"] > 0.0


def test_waiting_fits_start_best_gain_per_byte_first_and_the_best_is_never_overtaken():
    assert admit([Demand("a", 100, True), Demand("early", 100, rank=1.0), Demand("late", 100, rank=3.0)], 200) == {"a", "late"}
    demands = [Demand("a", 200, True), Demand("big", 200, rank=2.0), Demand("small", 10, rank=1.0)]
    assert admit(demands, 250) == {"a"}  # "small" would fit, but "big" ranks first and starts next
    assert admit([Demand("x", 100, rank=1.0), Demand("y", 100, rank=1.0)], 100) == {"x"}  # equal ranks: arrival order


def test_gain_per_byte_prefers_short_set_ups_and_small_caches_and_grows_while_a_fit_waits():
    assert gain_per_byte(2.0, 0.0, 100 * MB) > gain_per_byte(10.0, 0.0, 100 * MB)
    assert gain_per_byte(5.0, 0.0, 50 * MB) == 2 * gain_per_byte(5.0, 0.0, 100 * MB)
    assert gain_per_byte(10.0, 90.0, 100 * MB) == 2 * gain_per_byte(2.0, 0.0, 100 * MB)  # (90 + 10) / 10 / 10 vs (0 + 2) / 2 / 2
    assert gain_per_byte(1.0, 0.0, 0.0) == gain_per_byte(1.0, 0.0, MB)  # a cache counts as at least 1 MB


def test_the_fit_with_the_shorter_predicted_set_up_starts_first_and_a_long_one_that_waited_overtakes_newcomers():
    clock = FakeClock()
    setups = {"svc": 10.0, "lr": 2.0, "lr2": 2.0}
    adm = StorageAdmission(Storage(200 * MB), clock=clock, headroom=1.0, setup=lambda jobs: {j: setups[j] for j in jobs if j in setups})
    adm.arrive("running", "running: ", 150 * MB)
    adm.arrive("svc", "svc: ", 150 * MB)
    clock.now = 1.0
    adm.arrive("lr", "lr: ", 150 * MB)
    assert adm.waiting() == {"svc", "lr"}
    clock.now = 2.0
    adm.end("running")  # room for one: svc (2 + 10) / 10 / 10 = 0.12, lr (1 + 2) / 2 / 2 = 0.75, per 150 MB
    assert adm.waiting() == {"svc"}
    clock.now = 60.0
    adm.arrive("lr2", "lr2: ", 150 * MB)
    adm.end("lr")  # svc: (60 + 10) / 10 / 10 = 0.7; lr2: (0 + 2) / 2 / 2 = 0.5
    assert adm.waiting() == {"lr2"}


def test_a_waiting_fit_is_ranked_by_the_set_up_predicted_from_its_estimators_ended_fits():
    loop = EpochLoop(FakePools(), policy="slaq")
    assert loop.setup_seconds(["nobody"]) == {}
    done = loop.add(LiveJob("done", reports=True, fit=fit_key("LinearSVC", {})))
    done.setup_core_seconds = 12.0
    loop.remove("done")
    loop.add(LiveJob("svc", reports=True, fit=fit_key("LinearSVC", {"regParam": 0.1})))
    assert loop.setup_seconds(["svc"]) == {}  # no epoch measured the cluster yet
    loop.step()
    assert loop.setup_seconds(["svc"]) == {"svc": 12.0 / FakePools().capacity()}
    assert loop.add(LiveJob("plain", 1.0)) and loop.setup_seconds(["plain", "svc"]) == {"svc": 12.0 / FakePools().capacity()}  # not a fit
