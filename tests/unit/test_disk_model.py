"""The seek model of the ``hdd`` storage profile: what each read of one simulated disk costs."""

from __future__ import annotations

import pytest

from srlab.storage.model import DiskProfile, SeekModel

KIB = 1024
MIB = 1 << 20
PROFILE = DiskProfile(seek_ms=10.0, read_mbps=100.0, readahead_kib=128)
SEEK = 0.010


def transfer(nbytes: int) -> float:
    return nbytes / 100e6


def test_a_read_elsewhere_seeks_and_fills_the_read_ahead_buffer():
    disk = SeekModel(PROFILE)
    assert disk.read("a", "f", 5 * MIB, 4 * KIB, 10 * MIB) == pytest.approx(SEEK + transfer(128 * KIB))
    assert disk.counters.seeks == 1 and disk.counters.bytes_transferred == 128 * KIB


def test_a_read_inside_the_streams_buffer_is_free_and_leaves_the_head_alone():
    disk = SeekModel(PROFILE)
    disk.read("a", "f", 0, 4 * KIB, 10 * MIB)
    assert disk.read("a", "f", 64 * KIB, 32 * KIB, 10 * MIB) == 0.0
    assert disk.counters.buffer_hits == 1
    # the next read after the buffer continues where the head stopped: transfer only, no seek
    assert disk.read("a", "f", 128 * KIB, 4 * KIB, 10 * MIB) == pytest.approx(transfer(128 * KIB))
    assert disk.counters.seeks == 1


def test_a_read_straddling_the_buffer_pays_only_for_what_lies_beyond_it():
    disk = SeekModel(PROFILE)
    disk.read("a", "f", 0, 4 * KIB, 10 * MIB)  # buffer [0, 128 KiB)
    assert disk.read("a", "f", 120 * KIB, 200 * KIB, 10 * MIB) == pytest.approx(transfer(192 * KIB))


def test_a_sequential_stream_costs_one_seek_and_its_bytes():
    disk = SeekModel(PROFILE)
    cost = sum(disk.read("a", "f", off, 64 * KIB, 4 * MIB) for off in range(0, 4 * MIB, 64 * KIB))
    assert cost == pytest.approx(SEEK + transfer(4 * MIB))
    assert disk.counters.seeks == 1


def test_read_ahead_stops_at_the_end_of_the_file():
    disk = SeekModel(PROFILE)
    assert disk.read("a", "f", 0, 4 * KIB, 16 * KIB) == pytest.approx(SEEK + transfer(16 * KIB))
    assert disk.read("a", "f", 16 * KIB, 4 * KIB, 16 * KIB) == 0.0  # at the end: nothing to read


def test_two_streams_interleaved_on_one_file_seek_once_per_buffer_not_once_per_read():
    """Two reducers reading their own pieces of one file in small requests, turn by turn: each request moves
    the head away from the other's piece, but each stream's next requests fall inside its read-ahead."""
    disk = SeekModel(PROFILE)
    costs = []
    for i in range(8):  # 8 x 16 KiB = 128 KiB each: one buffer's worth
        costs.append(disk.read("r1", "f", i * 16 * KIB, 16 * KIB, 10 * MIB))
        costs.append(disk.read("r2", "f", MIB + i * 16 * KIB, 16 * KIB, 10 * MIB))
    assert disk.counters.seeks == 2 and sum(costs) == pytest.approx(2 * (SEEK + transfer(128 * KIB)))
    # past their buffers both seek again: the other stream moved the head
    disk.read("r1", "f", 128 * KIB, 16 * KIB, 10 * MIB)
    disk.read("r2", "f", MIB + 128 * KIB, 16 * KIB, 10 * MIB)
    assert disk.counters.seeks == 4


def test_without_read_ahead_interleaved_streams_seek_on_every_read():
    disk = SeekModel(DiskProfile(seek_ms=10.0, read_mbps=100.0, readahead_kib=0))
    for i in range(4):
        disk.read("r1", "f", i * 16 * KIB, 16 * KIB, 10 * MIB)
        disk.read("r2", "f", MIB + i * 16 * KIB, 16 * KIB, 10 * MIB)
    assert disk.counters.seeks == 8


def test_buffers_belong_to_their_stream_and_file_and_go_when_the_stream_closes():
    disk = SeekModel(PROFILE)
    disk.read("a", "f", 0, 4 * KIB, 10 * MIB)
    assert disk.read("b", "f", 8 * KIB, 4 * KIB, 10 * MIB) > 0.0   # another stream: not its buffer
    assert disk.read("b", "g", 12 * KIB, 4 * KIB, 10 * MIB) > 0.0  # the same stream, another file
    disk.read("a", "f", 0, 4 * KIB, 10 * MIB)
    assert disk.read("a", "f", 4 * KIB, 4 * KIB, 10 * MIB) == 0.0
    disk.close("a")
    assert disk.read("a", "f", 8 * KIB, 4 * KIB, 10 * MIB) >= SEEK  # a reused handle starts afresh


def test_a_profile_refuses_impossible_parameters():
    with pytest.raises(ValueError):
        DiskProfile(read_mbps=0)
    with pytest.raises(ValueError):
        DiskProfile(seek_ms=-1)
