"""Every numeric ``spark.slaq.*``/``spark.riffle.*`` key is finite and within its range: a non-finite or
out-of-range value is one ConfigError naming the key and the range (the same parser runs in a pyspark driver
and in the plugin's brain). Before, ``inf`` raised OverflowError, a bandwidth of 1e-10 ZeroDivisionError, and a
port above 65535 or a 1e-10 s epoch (a busy loop) was accepted."""

from __future__ import annotations

import pytest

from riffle.driver.config import RiffleConfig
from slaq.live.config import SlaqConfig
from sparkshim.conf import ConfigError, keys_read

# key -> (a value out of its range, the range as the message states it)
RANGES = {
    "spark.slaq.epoch": ("0.00000000001", "[50ms, 3600s]"),
    "spark.slaq.failOpenEpochs": ("1001", "[1, 1000]"),
    "spark.slaq.reserveCores": ("-1", "[0, 1000000]"),
    "spark.riffle.mergerPort": ("65536", "[1, 65535]"),
    "spark.riffle.nway": ("4097", "[2, 4096]"),
    "spark.riffle.targetBlockSize": ("2g", "[1k, 1g]"),
    "spark.riffle.bestEffort": ("1.5", "[0, 1]"),
    "spark.riffle.holdTimeout": ("86401s", "[1ms, 86400s]"),
    "spark.riffle.rpcTimeout": ("50ms", "[100ms, 86400s]"),
    "spark.riffle.cost.requestTime": ("61s", "[0.001ms, 60s]"),
    "spark.riffle.cost.bandwidth": ("1e-10", "[1k, 1t]"),
    "spark.riffle.cost.mergeTime": ("0.0000001ms", "[0.001ms, 60s]"),
    "spark.riffle.cost.mergeInputTime": ("2min", "[0.001ms, 60s]"),
    "spark.diskStore.subDirectories": ("65537", "[1, 65536]"),  # Spark's, which the mergers must hash files by too
}
NOT_NUMERIC = {"enabled", "policy", "workConserving", "prune", "recordTrace", "mergers", "authToken", "authTokenFile", "tlsCa", "cost.enabled"}
PARSERS = {"spark.slaq.": SlaqConfig.from_conf, "spark.riffle.": RiffleConfig.from_conf, "spark.diskStore.": RiffleConfig.from_conf}


def parse(key: str, value: str) -> object:
    prefix = key[:key.index(".", len("spark.")) + 1]
    return PARSERS[prefix]({key: value}.get)


def test_every_numeric_key_has_a_range():
    numeric = {key for prefix, from_conf in PARSERS.items() for key in keys_read(from_conf)
               if key.startswith(prefix) and key[len(prefix):] not in NOT_NUMERIC}
    assert numeric == set(RANGES)


@pytest.mark.parametrize("key", sorted(RANGES))
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "9" * 400, "out of range"])
def test_a_non_finite_or_out_of_range_value_names_the_key_and_the_range(key, value):
    value = RANGES[key][0] if value == "out of range" else value
    with pytest.raises(ConfigError) as info:
        parse(key, value)
    message = str(info.value)
    assert message.startswith(f"{key}={value!r}: ") and message.endswith(f" in {RANGES[key][1]}"), message
    assert "\n" not in message


def test_the_ends_of_each_range_are_accepted():
    assert SlaqConfig.from_conf({"spark.slaq.epoch": "50ms", "spark.slaq.reserveCores": "1000000"}.get).epoch == 0.05
    c = RiffleConfig.from_conf({"spark.riffle.mergerPort": "65535", "spark.riffle.nway": "4096", "spark.riffle.cost.bandwidth": "1t",
                                "spark.riffle.rpcTimeout": "86400s", "spark.riffle.targetBlockSize": "1k", "spark.diskStore.subDirectories": "1"}.get)
    assert (c.merger_port, c.nway, c.cost.storage.byte_seconds, c.rpc_timeout, c.target_block_bytes, c.sub_dirs) == (65535, 4096, 1 / (1 << 40), 86400, 1024, 1)


def test_a_port_or_fan_in_is_a_whole_number():
    for key in ("spark.riffle.mergerPort", "spark.riffle.nway"):
        with pytest.raises(ConfigError, match=f"^{key}='7.5': expected a whole number in "):
            parse(key, "7.5")
