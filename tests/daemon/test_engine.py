import os
import struct
import subprocess
import sys

import grpc
import pytest

from riffle.merger import paths as paths_module
from riffle.merger.cancel import CancelToken
from riffle.merger.engine import MergeSpec, merge_map_outputs
from riffle.merger.errors import MergeCancelled, MissingInput
from riffle.merger.faults import CRASH_ENV, CRASH_EXIT_CODE, NO_FAULTS, Faults
from riffle.merger.paths import PathRefused
from riffle.merger.publish import TEMP_PREFIX, remove_stale_temps
from riffle.merger.refusals import merge_failure
from riffle.shuffle.layout import (
    SYNTHETIC_MAP_ID_BASE,
    CorruptShuffleFile,
    block_file_path,
    block_location,
    data_file_name,
    decode_index,
    encode_index,
    id_beside_inputs,
    index_file_name,
    java_string_hash,
    non_negative_hash,
    read_partition,
)
from tests.fixtures import all_files, make_outputs

MERGED = SYNTHETIC_MAP_ID_BASE + 5


def paths(dirs, sid, maps):
    return [(block_file_path(dirs, data_file_name(sid, m)), block_file_path(dirs, index_file_name(sid, m))) for m in maps]


def out_paths(dirs, sid, merged=MERGED):
    return block_file_path(dirs, data_file_name(sid, merged)), block_file_path(dirs, index_file_name(sid, merged))


def merge(roots, journal, dirs, sid, maps, partitions, read_buffer=4096, write_buffer=8192, app="app", **kw):
    spec = MergeSpec(app, sid, tuple(maps), MERGED, partitions, 64)
    return merge_map_outputs(roots, journal, [roots.locate(d) for d in dirs], spec, read_buffer, write_buffer, durable=False, **kw)


def test_java_hash_matches_spark():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert non_negative_hash("polygenelubricants") == 0
    assert non_negative_hash("shuffle_0_0_0.data") == 581811660


def test_block_file_path_follows_disk_block_manager():
    dirs = ["/a", "/b", "/c"]
    h = non_negative_hash("shuffle_1_2_0.data")
    assert str(block_file_path(dirs, "shuffle_1_2_0.data")) == f"{dirs[h % 3]}/{(h // 3) % 64:02x}/shuffle_1_2_0.data"


def test_a_merged_id_is_one_whose_files_hash_beside_the_inputs_or_none():
    ids = iter(range(SYNTHETIC_MAP_ID_BASE, SYNTHETIC_MAP_ID_BASE + 10**6))
    inputs = [(m, m % 2 == 0) for m in range(20)]  # the odd ones wrote no data file: only their index proves a sub dir
    held = {block_location(3, name, 64) for m, data in inputs for name in (index_file_name(7, m), *([data_file_name(7, m)] if data else []))}
    merged = id_beside_inputs(7, inputs, 3, ids)
    assert merged is not None and {block_location(3, n(7, merged), 64) for n in (data_file_name, index_file_name)} <= held
    assert next(ids) == merged + 1  # the ids tried are spent: none is named twice
    # one index among 64 x 64 sub dirs: no id within the tries fits, and the merge is not sent
    assert id_beside_inputs(7, [(0, False)], 64, iter(range(SYNTHETIC_MAP_ID_BASE, SYNTHETIC_MAP_ID_BASE + 10**6))) is None


@pytest.mark.parametrize("read_buffer,write_buffer", [(4096, 8192), (7, 13), (1 << 20, 1 << 20)])
def test_merged_blocks_are_concatenations(roots, journal, dirs, read_buffer, write_buffer):
    blocks = make_outputs(dirs, 2, [10, 11, 12, 13], 37)
    result = merge(roots, journal, dirs, 2, [10, 11, 12, 13], 37, read_buffer, write_buffer)
    data, index = out_paths(dirs, 2)
    assert (result.data_path, result.index_path) == (str(data), str(index))
    for p in range(37):
        expected = b"".join(blocks[m][p] for m in (10, 11, 12, 13))
        assert read_partition(data, index, 37, p) == expected
        assert result.partition_lengths[p] == len(expected)
    assert not [f for f in all_files(data.parents[2]) if TEMP_PREFIX in f]


def corrupt_cases():
    def wrong_length(idx, data):
        idx.write_bytes(idx.read_bytes()[:-8])

    def not_starting_at_zero(idx, data):
        raw = bytearray(idx.read_bytes())
        raw[0:8] = struct.pack(">q", 1)
        idx.write_bytes(bytes(raw))

    def decreasing(idx, data):
        offs = list(struct.unpack(">6q", idx.read_bytes()))
        offs[2], offs[3] = offs[3], offs[2] - 1 if offs[2] else 0
        offs[3] = offs[1] - 1
        idx.write_bytes(struct.pack(">6q", *offs))

    def data_truncated(idx, data):
        data.write_bytes(data.read_bytes()[:-1])

    def data_longer(idx, data):
        data.write_bytes(data.read_bytes() + b"x")

    return {"index length": (wrong_length, "bytes, expected"), "first offset": (not_starting_at_zero, "offset of partition 0 is 1, expected 0"),
            "decreasing": (decreasing, "offsets decrease"), "truncated data": (data_truncated, "does not match data file length"),
            "longer data": (data_longer, "does not match data file length")}


@pytest.mark.parametrize("case", sorted(corrupt_cases()))
def test_corrupt_inputs_rejected_without_output(roots, journal, dirs, root, case):
    corrupt, message = corrupt_cases()[case]
    make_outputs(dirs, 1, [0, 1], 5)
    data, idx = paths(dirs, 1, [1])[0]
    before = all_files(root)
    corrupt(idx, data)
    with pytest.raises(CorruptShuffleFile, match=message):
        merge(roots, journal, dirs, 1, [0, 1], 5)
    assert all_files(root) == before


def test_missing_input_named(roots, journal, dirs, root):
    make_outputs(dirs, 1, [0], 4)
    before = all_files(root)
    with pytest.raises(MissingInput, match="shuffle_1_7_0.index"):
        merge(roots, journal, dirs, 1, [0, 7], 4)
    assert all_files(root) == before
    data, _ = paths(dirs, 1, [0])[0]
    data.unlink()  # an index that promises bytes, without its data file: missing, not empty
    with pytest.raises(MissingInput, match="shuffle_1_0_0.data"):
        merge(roots, journal, dirs, 1, [0, 7], 4)


def test_map_output_without_rows_merges_as_empty(roots, journal, dirs):
    """A map task that wrote no rows leaves an index of zeros and no data file (Spark's own behaviour)."""
    blocks = make_outputs(dirs, 1, [0, 1, 2], 6)
    empty_data, empty_index = paths(dirs, 1, [1])[0]
    empty_data.unlink()
    empty_index.write_bytes(encode_index([0] * 6))
    merge(roots, journal, dirs, 1, [0, 1, 2], 6)
    data, index = out_paths(dirs, 1)
    for p in range(6):
        assert read_partition(data, index, 6, p) == blocks[0][p] + blocks[2][p]


def test_existing_output_never_rewritten(roots, journal, dirs):
    make_outputs(dirs, 1, [0, 1], 4)
    merge(roots, journal, dirs, 1, [0, 1], 4)
    data, _ = out_paths(dirs, 1)
    stamp = data.read_bytes()
    with pytest.raises(FileExistsError):
        merge(roots, journal, dirs, 1, [0, 1], 4)
    assert data.read_bytes() == stamp


def test_cancel_leaves_nothing(roots, journal, dirs, root):
    make_outputs(dirs, 1, [0, 1], 50)
    before = all_files(root)
    cancel = CancelToken()
    calls = []

    def progress(n):
        calls.append(n)
        if len(calls) == 3:
            assert cancel.cancel()

    with pytest.raises(MergeCancelled):
        merge(roots, journal, dirs, 1, [0, 1], 50, cancel=cancel, progress=progress)
    assert all_files(root) == before


def test_cancel_after_the_copy_loop_publishes_nothing_and_a_late_one_is_refused(roots, journal, dirs, root):
    """Up to the first link a cancel undoes the merge; from there on the token refuses it, so a Cancel that
    reports success never meets a published pair."""
    blocks = make_outputs(dirs, 1, [0, 1], 5)
    left = [sum(len(b) for m in (0, 1) for b in blocks[m])]
    before = all_files(root)
    cancel = CancelToken()

    def cancel_once_all_is_copied(n):
        left[0] -= n
        if left[0] == 0:
            assert cancel.cancel()

    with pytest.raises(MergeCancelled, match="cancelled before publishing"):
        merge(roots, journal, dirs, 1, [0, 1], 5, cancel=cancel, progress=cancel_once_all_is_copied)
    assert all_files(root) == before
    late = CancelToken()
    merge(roots, journal, dirs, 1, [0, 1], 5, cancel=late)
    assert late.cancel() is False


def test_symlinked_input_refused(roots, journal, dirs, root, tmp_path):
    make_outputs(dirs, 1, [0], 3)
    outside = tmp_path / "outside.data"
    outside.write_bytes(b"secret")
    data = block_file_path(dirs, data_file_name(1, 9))
    data.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, data)
    block_file_path(dirs, index_file_name(1, 9)).parent.mkdir(parents=True, exist_ok=True)
    block_file_path(dirs, index_file_name(1, 9)).write_bytes(encode_index([2, 2, 2]))
    with pytest.raises(PathRefused, match="symlink"):
        merge(roots, journal, dirs, 1, [0, 9], 3)


def test_paths_outside_roots_refused(roots, root, tmp_path):
    for bad in ["relative/dir", str(tmp_path), "/etc", str(root) + "/../..", str(root) + "/a/./b", "", str(root) + "/.riffle-merger"]:
        with pytest.raises(PathRefused):
            roots.locate(bad)


def test_symlinked_dir_refused_at_any_level(roots, root, tmp_path):
    (tmp_path / "elsewhere" / "deeper").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere", root / "blockmgr-evil")
    for path in (root / "blockmgr-evil", root / "blockmgr-evil" / "deeper"):
        with pytest.raises(PathRefused, match="symlink"):
            roots.open_dir(roots.locate(str(path)))


def test_stale_temps_removed(roots, dirs):
    sub = block_file_path(dirs, "x").parent
    sub.mkdir(parents=True, exist_ok=True)
    stale = sub / f"{TEMP_PREFIX}abc-shuffle_1_2_0.data"
    stale.write_bytes(b"partial")
    keep = sub / "shuffle_1_2_0.data"
    keep.write_bytes(b"real")
    assert remove_stale_temps(roots) == [str(stale)]
    assert keep.exists() and not stale.exists()


def test_decode_index_roundtrip():
    raw = encode_index([3, 0, 5])
    assert decode_index(raw, 3, 8) == [0, 3, 3, 8]


def test_journal_forgets_pairs_whose_files_are_gone(roots, journal, dirs):
    make_outputs(dirs, 1, [0, 1], 4)
    result = merge(roots, journal, dirs, 1, [0, 1], 4)
    assert journal.prune() == 0
    os.unlink(result.data_path)
    assert journal.prune() == 0  # the index is still there
    os.unlink(result.index_path)
    assert journal.prune() == 1
    assert journal.delete("app", lambda rec: False) == (0, 0)


def test_a_second_journal_on_a_state_dir_is_refused_until_the_first_closes(roots, journal):
    from riffle.merger.journal import Journal, StateDirBusy

    with pytest.raises(StateDirBusy, match="another merger is running on state dir"):
        Journal(roots, durable=False)
    journal.close()
    journal.close()  # twice is harmless
    Journal(roots, durable=False).close()


def test_a_merge_whose_sub_dir_is_missing_fails_and_creates_nothing(roots, journal, dirs, root, tmp_path, monkeypatch):
    """Only Spark creates its sub dirs (it checks and then creates, unlocked against other processes)."""
    make_outputs(dirs, 1, [0, 1], 4)
    inputs = {p.parent for m in (0, 1) for p in out_paths(dirs, 1, m)}
    merged = next(m for m in range(MERGED, MERGED + 1000) if out_paths(dirs, 1, m)[0].parent not in inputs)
    out_paths(dirs, 1, merged)[0].parent.rmdir()
    before = all_files(root)
    with pytest.raises(FileNotFoundError, match="only Spark creates one") as caught:
        merge_map_outputs(roots, journal, [roots.locate(d) for d in dirs], MergeSpec("app", 1, (0, 1), merged, 4, 64), 4096, 8192, durable=False)
    refused = merge_failure(caught.value)
    assert refused is not None and refused.code == grpc.StatusCode.NOT_FOUND
    assert all_files(root) == before and not out_paths(dirs, 1, merged)[0].parent.exists()
    # the merger's own state dirs: one removed between its mkdir (EEXIST) and its open is not found, not an I/O fault
    def mkdir_lost_race(*args, **kwargs):
        raise FileExistsError(17, "File exists")  # something stood there at the mkdir, and nothing at the open

    monkeypatch.setattr(paths_module.os, "mkdir", mkdir_lost_race)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(FileNotFoundError, match="removed while the merger was creating it"):
            paths_module.open_dir_at(fd, "state", "state", create=True)
    finally:
        os.close(fd)


def test_faults_are_passed_in_not_read_from_the_environment(roots, journal, dirs, root, monkeypatch):
    from riffle.merger.journal import Journal

    """A merge crashing where its Faults say (here in a child process, between the two links) leaves what recovery undoes."""
    monkeypatch.setenv(CRASH_ENV, "recorded")  # ignored: only the daemon's start-up reads the environment
    assert Faults.from_env().crash_at == "recorded" and Faults.from_env({}) == NO_FAULTS
    with pytest.raises(ValueError, match="publish steps are temps-written"):
        Faults("no-such-step")
    make_outputs(dirs, 1, [0, 1], 4)
    before = all_files(root)
    child = f"""
from riffle.merger.engine import MergeSpec, merge_map_outputs
from riffle.merger.faults import Faults
from riffle.merger.journal import Journal
from riffle.merger.paths import Roots
roots = Roots([{str(root)!r}])
merge_map_outputs(roots, Journal(roots, durable=False), [roots.locate(d) for d in {dirs!r}], MergeSpec("app", 1, (0, 1), {MERGED}, 4, 64),
                  4096, 8192, durable=False, faults=Faults("data-linked"))
"""
    journal.close()  # the child is the state dir's only daemon
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert out.returncode == CRASH_EXIT_CODE, out.stderr
    data, index = out_paths(dirs, 1)
    assert data.exists() and not index.exists()
    again = Journal(roots, durable=False)
    try:
        assert again.recover() == (0, 1)
        assert all_files(root) == before
        assert merge(roots, again, dirs, 1, [0, 1], 4).bytes_written > 0  # no fault passed: none happens
    finally:
        again.close()
