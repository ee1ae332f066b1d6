"""Pure pieces of SLAQ's live path: conf parsing, the shim's drain format, history ingestion, job API validation."""

from __future__ import annotations

import logging
import math
import threading

import numpy as np
import pytest

import slaq
from slaq import messages
from slaq.enforce.pools import Iteration, allocation_message, split_drain
from slaq.live.config import ConfigError, SlaqConfig
from slaq.live.job import LiveJob
from slaq.live.loop import EpochLoop
from slaq.live.registry import JobRegistry, append, record
from slaq.names import check_job_name
from tests.fixtures import FakePools


def conf(**kv):
    return lambda key: kv.get(key.replace("spark.slaq.", ""))


def test_config_defaults_and_values():
    assert SlaqConfig.from_conf(conf()) == SlaqConfig()
    c = SlaqConfig.from_conf(conf(enabled="true", policy="fair", epoch="500ms", workConserving="false", failOpenEpochs="4", reserveCores="2"))
    assert (c.enabled, c.policy, c.epoch, c.work_conserving, c.fail_open_epochs, c.reserve_cores) == (True, "fair", 0.5, False, 4.0, 2.0)
    assert SlaqConfig.from_conf(conf(epoch="3")).epoch == 3.0


@pytest.mark.parametrize("key,value,needle", [
    ("enabled", "maybe", "spark.slaq.enabled"), ("policy", "lottery", "expected one of"), ("epoch", "-1s", "spark.slaq.epoch"),
    ("epoch", "soon", "duration"), ("failOpenEpochs", "0.5", r"in \[1, 1000\]"), ("reserveCores", "x", "number"),
])
def test_config_errors_name_the_key(key, value, needle):
    with pytest.raises(ConfigError, match=needle):
        SlaqConfig.from_conf(conf(**{key: value}))


def test_split_drain_and_allocation_message():
    text = messages.encode([Iteration("job-a", 0.5, 1.25, 3.5, 0.0, "python"), messages.PoolState("job-a", 3.6, -0.2, 2, False),
                            messages.PoolState("b", 0.0, 1.0, 0, True)])
    its, pools = split_drain(text)
    assert its == [Iteration("job-a", 0.5, 1.25, 3.5, 0.0, "python")]
    assert pools["job-a"].tokens == -0.2 and pools["job-a"].running == 2 and pools["b"].closed
    assert messages.decode(allocation_message({"a": 1.5, "b": -1.0}, 2)) == messages.Allocation(2.0, True, {"a": 1.5, "b": 0.0}, {})
    assert messages.decode(allocation_message({"a": 1.0}, 0.25, new_epoch=False)) == messages.Allocation(0.25, False, {"a": 1.0}, {})


@pytest.mark.parametrize("bad", ["", "  ", "tab\there", "new\nline", 3, None])
def test_bad_job_names_are_rejected(bad):
    with pytest.raises(ValueError):
        check_job_name(bad)


def test_captured_costs_come_from_pool_consumption_between_reports():
    jobs = JobRegistry()
    a = jobs.add(LiveJob("a"))
    jobs.fold([Iteration("a", 1.0, 10.0, 5.0, 0.0, "python"), Iteration("a", 0.5, 12.0, 9.0, 0.0, "python"),
               Iteration("ghost", 0.1, 12.0, 1.0, 0.0, "python")], {}, 0.0)
    h = a.history
    assert h.losses == [1.0, 0.5] and "ghost" not in jobs
    assert h.core_seconds == [4.0] and h.wall_seconds == [2.0] and h.cores == [2.0]


def test_the_registry_keeps_open_jobs_by_unique_name_and_the_latest_finished_ones():
    from slaq.live.registry import FINISHED_KEPT

    jobs = JobRegistry()
    first = jobs.add(LiveJob("a"))
    with pytest.raises(ValueError, match="already running"):
        jobs.add(LiveJob("a"))
    assert jobs.remove("a", LiveJob("a")) is None and list(jobs) == ["a"]  # only the job open under that name
    assert jobs.remove("a", first) is first and list(jobs) == [] and jobs.finished() == [first]
    for k in range(FINISHED_KEPT):
        jobs.remove(jobs.add(LiveJob(f"j{k}")).name)
    assert len(jobs.finished()) == FINISHED_KEPT and jobs.finished()[0].name == "j0"


def test_allocation_uses_the_simulators_policies_and_respects_reserve():
    loop = EpochLoop(FakePools(), "fair", 1.0, reserve=2.0)
    loop.add(LiveJob("a", 1.0))
    loop.add(LiveJob("b", 3.0))
    alloc = loop.step()
    assert alloc == pytest.approx({"a": 0.5, "b": 1.5})


def test_job_api_without_spark_validates_and_tracks_targets():
    with slaq.job("offline", target_loss=0.2) as job:
        for bad in ("1.0", None, True, [1.0]):
            with pytest.raises(slaq.InvalidReport, match="loss must be a real number"):
                slaq.report_loss(bad)
        for v in (1.0, 0.5, 0.3):
            slaq.report_loss(v)
            assert not job.should_stop()
        job.report(0.19)
        assert job.should_stop() and job.done
    assert job.losses == [1.0, 0.5, 0.3, 0.19]
    with pytest.raises(slaq.NoActiveJob):
        slaq.report_loss(0.1)
    with pytest.raises(slaq.JobClosed):
        job.report(0.1)


def test_a_non_finite_loss_is_skipped_with_one_warning_per_job_and_the_loop_goes_on(caplog):
    """A diverging model's NaN must not kill the training loop: skipped, one WARN per job naming it and
    the value, the rest counted; other jobs warn for their own."""
    with caplog.at_level("WARNING", logger="slaq"), slaq.job("diverging") as job, slaq.job("other") as other:
        job.report(1.0)
        for bad in (math.nan, math.inf, -math.inf, np.float64("nan")):
            slaq.report_loss(bad)  # the thread's job: the innermost block, "other"
            job.report(bad)
        job.report(0.5)
    assert job.losses == [1.0, 0.5] and other.losses == []
    assert (job.skipped_losses, other.skipped_losses) == (4, 4)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 2 and "job other reported a loss of nan; skipped" in warnings[0], warnings
    assert "job diverging reported a loss of nan; skipped" in warnings[1]
    with pytest.raises(slaq.NoActiveJob):
        slaq.report_loss(math.nan)  # outside any job: a misuse, not a skipped loss


def test_a_disabled_runtime_keeps_its_jobs_in_one_registry(monkeypatch):
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)  # the full suite's shared session may be running
    with slaq.job("once") as job:
        runtime = job.runtime
        assert runtime is not None and not runtime.enabled and runtime.loop is None
        assert runtime.running_jobs() == ["once"] and runtime.job_named("once") is job
        with pytest.raises(ValueError, match="already running"), slaq.job("once"):
            pass
        job.report(0.5)
    assert runtime.running_jobs() == [] and runtime.jobs.finished()[-1].owner is job and job.losses == [0.5]
    slaq.detach()


def test_target_reduction_uses_the_fitted_floor():
    with slaq.job("reduction", target_reduction=0.95) as job:
        losses = [1.0 / (1 + k) + 0.1 for k in range(6)] + [0.1 + 0.5 ** k for k in range(6, 30)]
        stopped_at = None
        for k, v in enumerate(losses):
            job.report(v)
            if job.should_stop():
                stopped_at = k
                break
    assert stopped_at is not None and stopped_at < len(losses) - 1


@pytest.mark.parametrize("kwargs", [{"weight": 0}, {"weight": "2"}, {"target_reduction": 1.5}, {"target_loss": math.nan}])
def test_bad_job_arguments(kwargs):
    with pytest.raises(ValueError):
        slaq.job("x", **kwargs)


def test_messages_check_every_field_when_built_and_decoded():
    from riffle.messages import HoldExpired, MapOutput, MessageError, decode

    with pytest.raises(MessageError, match="32-bit"):
        MapOutput(1 << 31, 0, 0, 0, 0, "e", "h", 0)
    with pytest.raises(MessageError, match="finite"):
        Iteration("a", float("nan"), 0.0, 0.0, 0.0, "python")
    with pytest.raises(MessageError, match="do not match"):
        decode('{"type": "hold_expired", "shuffle": 1, "extra": 2}')
    with pytest.raises(MessageError, match="unknown message type"):
        decode('[{"type": "nope"}]')
    assert decode('{"type": "hold_expired", "shuffle": 1}') == HoldExpired(1)


class _ConfOnly:
    """A SparkContext stand-in with only a conf: enough for the attach decision, nothing to attach to."""

    def __init__(self, conf):
        self._conf = conf

    def getConf(self):
        return self

    def get(self, key, default=None):
        return self._conf.get(key, default)

    def getAll(self):
        return list(self._conf.items())

    def stop(self):
        self.stopped = True


@pytest.mark.parametrize("value", ["yes", "1", "on", "enabled"])
def test_enabled_values_other_than_true_false_are_refused_everywhere_alike(value):
    from riffle.driver.config import RiffleConfig
    from sparkshim import starthook
    from sparkshim.conf import enabled

    for key, parse in (("spark.riffle.enabled", RiffleConfig.from_conf), ("spark.slaq.enabled", SlaqConfig.from_conf)):
        with pytest.raises(ConfigError, match=key):
            parse({key: value}.get)
        with pytest.raises(ConfigError, match=key):
            enabled({key: value}.get, key)
        sc = _ConfOnly({key: value})
        with pytest.raises(ConfigError, match=key):  # the app stops at start, never half-attached
            starthook.attach_enabled(sc)
        assert sc.stopped
    assert enabled({"k": " TRUE "}.get, "k") and not enabled({"k": "false"}.get, "k") and not enabled({}.get, "k")


class _StandInContext(_ConfOnly):
    """A live-looking SparkContext stand-in (``_jsc`` set) with only a conf: SLAQ and Riffle stay disabled on it
    (both switched off by their confs unless a test says otherwise: an explicit attach would switch them on)."""

    _jsc = object()

    def __init__(self, conf):
        super().__init__({"spark.slaq.enabled": "false", "spark.riffle.enabled": "false"} | conf)


def test_slaq_and_riffle_attach_alike_one_runtime_per_context_detached_when_it_stops():
    import riffle
    import riffle.runtime
    from slaq.runtime import runtimes

    sc = _StandInContext({})
    s, r = slaq.attach(sc), riffle.attach(sc)
    assert (type(s).__name__, s.enabled, type(r).__name__, r.enabled) == ("SlaqRuntime", False, "RiffleRuntime", False)
    assert slaq.attach(sc) is s and riffle.attach(sc) is r and runtimes.current(sc) is s and riffle.runtime.current(sc) is r
    sc.stop()  # wrapped once for both packages
    assert sc.stopped and runtimes.current(sc) is None and riffle.runtime.current(sc) is None
    other = _StandInContext({})
    assert slaq.attach(other) is not s
    slaq.detach(other)
    assert runtimes.current(other) is None


def _warnings(caplog, logger):
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == logging.WARNING]


def test_an_explicit_attach_that_cannot_switch_on_says_why_in_one_warn_line(caplog):
    import riffle

    sc = _StandInContext({})  # both confs say false: the user's explicit call does not override that
    with caplog.at_level(logging.INFO):
        s, r = slaq.attach(sc), riffle.attach(sc)
        assert slaq.attach(sc) is s and riffle.attach(sc) is r  # idempotent: said once
    assert not s.enabled and "spark.slaq.enabled=false" in s.reason
    assert not r.enabled and "spark.riffle.enabled=false" in r.reason
    assert _warnings(caplog, "slaq") == [f"SLAQ is off: {s.reason}"]
    assert _warnings(caplog, "riffle") == [f"Riffle is off: {r.reason}"]
    sc.stop()


def test_an_explicit_attach_switches_slaq_on_unless_it_cannot_the_confs_alone_do_not(caplog):
    from slaq.runtime import runtimes

    fifo = _StandInContext({"spark.slaq.enabled": None})  # unset
    with caplog.at_level(logging.INFO):
        quiet = runtimes.attach(fifo, explicit=False)  # what slaq.job and the start-up hook do: nothing switched on, nothing said
        assert not quiet.config.enabled and _warnings(caplog, "slaq") == []
        s = slaq.attach(fifo)  # the user's call switches SLAQ on: it tries anew, and FIFO scheduling stops it
    assert s is not quiet and s.config.enabled and not s.enabled
    assert _warnings(caplog, "slaq") == [f"SLAQ is off: {s.reason}"] and "spark.scheduler.mode=FAIR" in s.reason
    fifo.stop()
    on_by_conf = _StandInContext({"spark.slaq.enabled": "true"})  # switched on by the conf: FIFO is the user's config error
    with pytest.raises(ConfigError, match="spark.scheduler.mode=FAIR"):
        runtimes.attach(on_by_conf, explicit=False)
    on_by_conf.stop()


def test_an_explicit_attach_without_a_spark_context_says_so(caplog, monkeypatch):
    from pyspark import SparkContext

    from slaq.runtime import runtimes

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)  # the full suite's shared session may be running
    runtimes.detach(None)
    with caplog.at_level(logging.INFO):
        s = slaq.attach()
        assert slaq.attach() is s
    assert not s.enabled and "no active SparkContext" in s.reason and _warnings(caplog, "slaq") == [f"SLAQ is off: {s.reason}"]
    runtimes.detach(None)


def test_unknown_keys_name_the_closest_known_one():
    from riffle.driver.config import RiffleConfig
    from sparkshim.conf import keys_read, unknown_keys

    known = keys_read(RiffleConfig.from_conf)
    assert {"spark.riffle.enabled", "spark.riffle.nway", "spark.riffle.authTokenFile", "spark.riffle.tlsCa"} <= set(known)
    pairs = [("spark.riffle.nWay", "4"), ("spark.riffle.nway", "4"), ("spark.riffle.enable", "true"), ("spark.riffle.zzz", "1"),
             ("spark.other.nWay", "1")]
    said = unknown_keys(pairs, "spark.riffle.", known)
    assert said[0] == "spark.riffle.nWay is not a known key and is ignored; did you mean spark.riffle.nway?"
    assert said[1].endswith("did you mean spark.riffle.enabled?")
    assert "known keys: spark.riffle.authToken, " in said[2] and "spark.sql" not in said[2] and len(said) == 3  # its prefix's keys only
    assert keys_read(SlaqConfig.from_conf) == tuple("spark.slaq." + k for k in (
        "enabled", "policy", "epoch", "workConserving", "failOpenEpochs", "reserveCores", "prune", "recordTrace"))


def test_a_removed_key_gets_the_unknown_key_warn(caplog):
    removed = ("spark.slaq.prior", "spark.slaq.setupOrder", "spark.slaq.storageAdmission")
    sc = _StandInContext(dict.fromkeys(removed, "true"))
    with caplog.at_level(logging.INFO):
        slaq.attach(sc)
    said = [w for w in _warnings(caplog, "slaq") if "known key" in w]
    assert [w.split(" is not a known key and is ignored; known keys: ")[0] for w in said] == [f"SLAQ: {k}" for k in removed]
    sc.stop()


def test_unknown_keys_are_one_warn_each_once_per_context_at_attach_or_at_start(caplog):
    import riffle
    from sparkshim import starthook

    sc = _StandInContext({"spark.riffle.nWay": "4", "spark.slaq.epoc": "1s"})
    with caplog.at_level(logging.INFO):
        riffle.attach(sc)
        slaq.attach(sc)
        riffle.attach(sc, explicit=True)
    assert [w for w in _warnings(caplog, "riffle") if "known key" in w] == [
        "Riffle: spark.riffle.nWay is not a known key and is ignored; did you mean spark.riffle.nway?"]
    assert [w for w in _warnings(caplog, "slaq") if "known key" in w] == [
        "SLAQ: spark.slaq.epoc is not a known key and is ignored; did you mean spark.slaq.epoch?"]
    sc.stop()
    caplog.clear()
    typo = _ConfOnly({"spark.riffle.enable": "true"})  # the start-up hook: nothing switched on, and it says why
    with caplog.at_level(logging.INFO):
        starthook.attach_enabled(typo)
    assert _warnings(caplog, "riffle") == ["Riffle: spark.riffle.enable is not a known key and is ignored; "
                                           "did you mean spark.riffle.enabled?"]


def test_the_loop_schedules_on_the_history_its_owner_keeps():
    from slaq.stats.history import JobHistory

    history = JobHistory()
    loop = EpochLoop(FakePools(), "fair", 1.0)
    loop.add(LiveJob("mine", 1.0, history=history))
    append(loop.jobs["mine"], [Iteration("mine", 2.0, 1.0, 0.0, 0.0, "mllib"), Iteration("mine", 1.0, 3.0, 2.0, 0.0, "python")],
           clock_offset=10.0)
    assert loop.jobs["mine"].history is history and history.losses == [2.0, 1.0] and history.times == [11.0, 13.0]


def test_a_target_check_per_loss_fits_the_curve_once_per_history_length():
    from slaq.live.target import Target
    job = LiveJob("t", target=Target.checked(reduction=0.99))
    for k in range(8):
        record(job, [1.0 / (1 + k)])
    n, curve = job.curves.fitted
    assert n == 8 and curve is not None
    assert not job.check_target() and job.curves.fitted[1] is curve  # no new loss: the cached fit, not a refit


def test_the_attach_line_says_where_the_slaq_tab_is():
    from types import SimpleNamespace

    from sparkshim.announce import tab_location

    assert tab_location(SimpleNamespace(uiWebUrl="http://10.0.0.1:4040"), "/slaq/", "SLAQ") == "SLAQ tab at http://10.0.0.1:4040/slaq/"
    assert tab_location(SimpleNamespace(uiWebUrl=None), "/slaq/", "SLAQ") == "no SLAQ tab (spark.ui.enabled=false)"


@pytest.mark.parametrize(("plugins", "wraps", "attached"), [
    ("io.slaqriffle.SlaqRifflePlugin", True, False),  # a JVM driver's context: its plugin's brain attaches
    ("org.example.Other, io.slaqriffle.SlaqRifflePlugin", True, False),
    ("io.slaqriffle.SlaqRifflePlugin", False, True),  # a pyspark driver (the plugin skips itself there)
    ("org.example.Other", True, True),  # a JVM driver without the plugin: only this Python can attach
    (None, True, True),
])
def test_the_start_hook_leaves_a_jvm_drivers_context_to_the_plugin(monkeypatch, plugins, wraps, attached):
    import inspect
    import types

    import pyspark

    from sparkshim import starthook

    # the hook finds ``jsc`` by position too: its index in pyspark's own signature
    assert list(inspect.signature(pyspark.SparkContext.__init__).parameters)[starthook.JSC_ARG + 1] == "jsc"
    calls = []
    monkeypatch.setattr(starthook, "attach_enabled", calls.append)

    class Context(_ConfOnly):
        def __init__(self, *args, jsc=None):
            super().__init__({} if plugins is None else {"spark.plugins": plugins})

    module = types.SimpleNamespace(SparkContext=Context)
    starthook.patch(module)
    by_keyword = module.SparkContext(jsc=object() if wraps else None)
    by_position = module.SparkContext(*([None] * starthook.JSC_ARG), object() if wraps else None)
    assert calls == ([by_keyword, by_position] if attached else [])


class GrantingPools(FakePools):
    """The fake shim, keeping each deposit's window (seconds, new epoch) and saying when one came."""

    def __init__(self):
        super().__init__()
        self.windows: list[tuple[float, bool]] = []
        self.deposited = threading.Semaphore(0)

    def deposit(self, alloc, seconds, new_epoch=True, ranks=None):
        super().deposit(alloc, seconds, new_epoch)
        self.windows.append((seconds, new_epoch))
        self.deposited.release()


def test_a_job_arriving_mid_epoch_is_decided_at_once_for_the_rest_of_the_epoch_only():
    """The loop keeps its epochs' times: a wake-up between them grants the epoch's remaining seconds, not a whole epoch."""
    pools = GrantingPools()
    loop = EpochLoop(pools, policy="fair", epoch=60.0)
    loop.start()
    try:
        assert pools.deposited.acquire(timeout=30)
        loop.add(LiveJob("a", reports=False))
        assert pools.deposited.acquire(timeout=30)  # woken by the arrival, long before the next epoch
    finally:
        loop.stop()
    (first, whole), (rest, new_epoch) = pools.windows[:2]
    assert (first, whole) == (60.0, True)
    assert not new_epoch and 30.0 < rest < 60.0
    assert pools.deposits[1] == {"a": 4.0}


def test_decisions_within_an_epoch_do_not_count_as_epochs_without_a_loss():
    """At many arrivals an epoch, counting every decision took a new job for one that reports no loss at once."""
    from tests.fixtures import FakeClock

    loop = EpochLoop(FakePools(), policy="fair", epoch=1.0, clock=FakeClock())
    quiet = loop.add(LiveJob("quiet"))
    loop.step()
    for _ in range(5):
        loop.step(0.5)
    assert quiet.silent_epochs == 1
    loop.step()
    assert quiet.silent_epochs == 2
