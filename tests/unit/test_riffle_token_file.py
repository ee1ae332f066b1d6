"""A token too long for gRPC's metadata is refused where it enters: at start, and when a rotated file is read again."""

from __future__ import annotations

import pytest

from riffle.driver.config import RiffleConfig
from riffle.driver.token_file import KEY, TokenFile
from sparkshim.conf import ConfigError


def test_a_rotated_token_too_long_for_grpc_is_refused_and_the_current_one_kept(tmp_path, monkeypatch, caplog):
    path = tmp_path / "token"
    path.write_text("x" * 20000)
    tokens = TokenFile("old", str(path))
    with caplog.at_level("WARNING", logger="riffle.driver"):
        assert tokens.newer_than("old") is None
    assert tokens.current == "old"
    assert [r.getMessage() for r in caplog.records] == [
        f"Riffle: cannot read the token again after a merger refused it: {KEY}={path}: the token is 20000 bytes; at most 4096 "
        "fit in a gRPC call's metadata (gRPC's limit is 8 KiB for all of a call's headers)"]


@pytest.mark.parametrize("key", ["spark.riffle.authToken", "spark.riffle.authTokenFile"])
def test_a_driver_token_longer_than_grpc_carries_is_refused_at_start_naming_the_limit(tmp_path, key):
    """16 KiB to 1 MiB passed every check, and every call then failed with RESOURCE_EXHAUSTED (read as an overloaded merger)."""
    path = tmp_path / "token"
    path.write_text("x" * 16384)
    with pytest.raises(ConfigError) as info:
        RiffleConfig.from_conf({key: str(path) if key.endswith("File") else "x" * 16384}.get)
    where = f"{key}={path}" if key.endswith("File") else key
    assert str(info.value) == (f"{where}: the token is 16384 bytes; at most 4096 fit in a gRPC call's metadata "
                               "(gRPC's limit is 8 KiB for all of a call's headers)")
    path.write_text("x" * 4096)
    assert RiffleConfig.from_conf({"spark.riffle.authTokenFile": str(path)}.get).token == "x" * 4096
