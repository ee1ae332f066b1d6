"""Files that configuration names (the driver's token and CA, through ``sparkshim.safe_read``) are regular files of
bounded size: a FIFO, ``/dev/zero``, a directory or a 2 MiB file is refused at once with one message naming the
key, the path and the reason (a FIFO once blocked a driver before its SparkContext existed; ``/dev/zero`` was read
until memory ran out)."""

from __future__ import annotations

import os
import time

import pytest

from riffle.driver.config import RiffleConfig
from sparkshim.conf import ConfigError
from sparkshim.safe_read import MAX_CONFIG_FILE_BYTES, FileRefused, read_config_file, read_config_text


@pytest.fixture
def bad_files(tmp_path):
    """(path, the reason its refusal names) for every kind of file a token or CA must not be."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * (2 << 20))
    return [(str(fifo), "not a regular file but a FIFO"), ("/dev/zero", "not a regular file but a character device"),
            (str(big), "larger than 1048576 bytes (1 MiB)"), (str(tmp_path), "not a regular file but a directory"),
            (str(tmp_path / "missing"), "No such file or directory")]


@pytest.mark.parametrize("key", ["spark.riffle.authTokenFile", "spark.riffle.tlsCa"])
def test_a_driver_token_or_ca_that_is_not_a_small_regular_file_is_refused_at_once(bad_files, key):
    for path, reason in bad_files:
        started = time.monotonic()
        with pytest.raises(ConfigError) as info:
            RiffleConfig.from_conf({"spark.riffle.enabled": "true", key: path}.get)
        assert str(info.value) == f"{key}={path}: {reason}"
        assert time.monotonic() - started < 5, path


def test_the_driver_reads_its_ca_once_at_start(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    config = RiffleConfig.from_conf({"spark.riffle.tlsCa": str(ca)}.get)
    assert config.tls_ca == str(ca) and config.tls_ca_pem == ca.read_bytes()


def test_the_reader_takes_a_file_up_to_its_bound_and_a_symlink_to_one(tmp_path):
    exact = tmp_path / "exact"
    exact.write_bytes(b"y" * MAX_CONFIG_FILE_BYTES)
    assert read_config_file(str(exact), "--x") == exact.read_bytes()
    link = tmp_path / "link"  # Kubernetes mounts a secret's keys as symlinks
    link.symlink_to(exact)
    assert len(read_config_file(str(link), "--x")) == MAX_CONFIG_FILE_BYTES
    over = tmp_path / "over"
    over.write_bytes(b"y" * 11)
    with pytest.raises(FileRefused, match=f"^--x={over}: larger than 10 bytes"):
        read_config_file(str(over), "--x", limit=10)
    assert read_config_file("/proc/self/status", "--x")  # a file whose size says 0 is read to its end all the same


def test_a_secret_others_can_read_or_an_empty_or_binary_token_is_refused(tmp_path):
    token = tmp_path / "token"
    token.write_text(" s3cret\n")
    token.chmod(0o644)
    assert read_config_text(str(token), "--token-file") == "s3cret"
    with pytest.raises(FileRefused, match=f"--token-file={token}: readable by group or others .mode 0644.; fix: chmod 600 {token}"):
        read_config_text(str(token), "--token-file", private=True)
    token.chmod(0o600)
    assert read_config_text(str(token), "--token-file", private=True) == "s3cret"
    token.write_text("\n")
    with pytest.raises(FileRefused, match="the file is empty"):
        read_config_text(str(token), "--token-file")
    token.write_bytes(b"\xff\xfe")
    with pytest.raises(FileRefused, match="not UTF-8 text"):
        read_config_text(str(token), "--token-file")
