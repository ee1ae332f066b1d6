"""Worker-side merge (Riffle, thesis §4.3.1, Algorithm 2): one request's map outputs into one merged pair.

Every file operation is relative to directory descriptors obtained from the daemon's roots
(:mod:`riffle.merger.paths`). The engine opens the executor's dirs and the inputs, has the copy loop
(:mod:`riffle.merger.concat`) write the output's temp files, and the publish protocol
(:mod:`riffle.merger.publish`) give them their final names.
"""

from __future__ import annotations

import errno
import os
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from riffle.merger.cancel import CancelToken
from riffle.merger.concat import Copied, IndexStream, Input, Output, concatenate
from riffle.merger.errors import MissingInput
from riffle.merger.faults import NO_FAULTS, Faults
from riffle.merger.journal import Journal
from riffle.merger.paths import Location, Roots, open_dir_at, open_input_at
from riffle.merger.publish import Target, publish_pair, refuse_existing
from riffle.shuffle.layout import block_location, data_file_name, index_file_name


def fds_needed(fan_in: int, num_dirs: int) -> int:
    """Descriptors one merge holds: data and index of each input, the output's two, its directories."""
    return 2 * fan_in + 2 + 2 * num_dirs + 4


@dataclass(frozen=True)
class MergeSpec:
    """A validated merge request: which map outputs of which shuffle go into which merged map id."""

    app_id: str
    shuffle_id: int
    map_ids: tuple[int, ...]
    merged_map_id: int
    num_partitions: int
    sub_dirs: int


@dataclass(frozen=True)
class MergeResult:
    partition_lengths: array
    bytes_written: int
    bytes_read: int  # from the map outputs' data and index files
    data_path: str
    index_path: str


class _Dirs:
    """Descriptors of an executor's local dirs and the sub dirs a merge touches; closed together."""

    def __init__(self, roots: Roots, dirs: list[Location]):
        self.roots, self.locs, self.fds = roots, dirs, []
        self._subs: dict[tuple[int, str], int] = {}
        try:
            for loc in dirs:
                self.fds.append(roots.open_dir(loc))
        except BaseException:
            self.close()
            raise

    def where(self, name: str, sub_dirs: int) -> tuple[int, str]:
        return block_location(len(self.locs), name, sub_dirs)

    def sub(self, name: str, sub_dirs: int) -> int:
        """The descriptor of the sub dir holding ``name``, never created: Spark creates its sub dirs on first use by
        checking and then creating, unlocked against other processes, so one made in between fails the executor's
        task (``FileAlreadyExistsException``). The driver names merged files that hash beside their inputs
        (:func:`~riffle.shuffle.layout.id_beside_inputs`); a sub dir missing all the same fails the merge, and the
        reducers read the inputs."""
        key = self.where(name, sub_dirs)
        if key not in self._subs:
            path = self.path(name, sub_dirs)
            try:
                self._subs[key] = open_dir_at(self.fds[key[0]], key[1], path)
            except FileNotFoundError as exc:
                raise FileNotFoundError(errno.ENOENT, f"{path}: its sub dir does not exist, and only Spark creates one") from exc
        return self._subs[key]

    def open_input(self, name: str, sub_dirs: int) -> int:
        """Open the input ``name`` through its sub dir's descriptor, closed at once: the inputs of a wide merge
        spread over as many sub dirs as files, and holding those would double the descriptors a merge needs."""
        i, sub = self.where(name, sub_dirs)
        path = self.path(name, sub_dirs)
        try:
            sub_fd = open_dir_at(self.fds[i], sub, path)
            try:
                return open_input_at(sub_fd, name, path)
            finally:
                os.close(sub_fd)
        except FileNotFoundError as exc:
            raise MissingInput(f"map output {path} does not exist") from exc

    def dir_of(self, name: str, sub_dirs: int) -> tuple[str, ...]:
        i, sub = self.where(name, sub_dirs)
        return (self.roots.paths[self.locs[i].root], *self.locs[i].parts, sub)

    def path(self, name: str, sub_dirs: int) -> str:
        i, sub = self.where(name, sub_dirs)
        return self.roots.display(self.locs[i], sub, name)

    def close(self) -> None:
        for fd in [*self._subs.values(), *self.fds]:
            os.close(fd)
        self._subs.clear()
        self.fds = []


def _target(d: _Dirs, spec: MergeSpec, faults: Faults) -> Target:
    """The merged pair's place, in sub dirs that exist."""
    data_name = data_file_name(spec.shuffle_id, spec.merged_map_id)
    index_name = index_file_name(spec.shuffle_id, spec.merged_map_id)
    faults.fail("output-dir", d.path(data_name, spec.sub_dirs))
    return Target(spec.app_id, spec.shuffle_id, d.sub(data_name, spec.sub_dirs), d.sub(index_name, spec.sub_dirs),
                  data_name, index_name, d.path(data_name, spec.sub_dirs), d.path(index_name, spec.sub_dirs),
                  d.dir_of(data_name, spec.sub_dirs), d.dir_of(index_name, spec.sub_dirs))


def _open_inputs(d: _Dirs, spec: MergeSpec, fds: list[int]) -> list[Input]:
    """Open every input's data and index; the descriptors go into ``fds`` as they are opened, for the caller to close.

    A map task that wrote no rows leaves only an index of zeros and no data file: such an input is
    empty, not missing (its reader is never asked for a byte, so it gets no data descriptor)."""
    inputs: list[Input] = []
    for m in spec.map_ids:
        data_name, index_name = data_file_name(spec.shuffle_id, m), index_file_name(spec.shuffle_id, m)
        fds.append(d.open_input(index_name, spec.sub_dirs))
        index_fd = fds[-1]
        try:
            data_fd = d.open_input(data_name, spec.sub_dirs)
        except MissingInput:
            if not _index_says_empty(index_fd, spec.num_partitions):
                raise
            data_fd, data_length = -1, 0
        else:
            fds.append(data_fd)
            data_length = os.fstat(data_fd).st_size
            if hasattr(os, "posix_fadvise"):  # each input is read front to back: ask for the larger read-ahead
                os.posix_fadvise(data_fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        index = IndexStream(index_fd, spec.num_partitions, data_length, d.path(index_name, spec.sub_dirs))
        inputs.append(Input(data_fd, index, d.path(data_name, spec.sub_dirs)))
    return inputs


def _index_says_empty(index_fd: int, num_partitions: int) -> bool:
    """Whether an index's last offset (the data length it promises) is 0; the full index is still
    validated as the merge streams it."""
    last = os.pread(index_fd, 8, num_partitions * 8)
    return len(last) == 8 and int.from_bytes(last, "big", signed=True) == 0


def merge_map_outputs(
    roots: Roots,
    journal: Journal,
    dirs: list[Location],
    spec: MergeSpec,
    read_buffer: int,
    write_buffer: int,
    cancel: CancelToken | None = None,
    progress: Callable[[int], None] | None = None,
    durable: bool = True,
    faults: Faults = NO_FAULTS,
) -> MergeResult:
    """Merge the spec's map outputs into its merged map id's data and index files; all or nothing, never replacing.

    ``durable=False`` skips the fsyncs (publishing stays all or nothing): Spark itself never fsyncs
    shuffle files, and a merged file lost in a crash is recomputed. ``faults`` is for the crash tests.
    """
    if spec.num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    if not spec.map_ids:
        raise ValueError("nothing to merge")
    d = _Dirs(roots, dirs)
    try:
        target = _target(d, spec, faults)
        refuse_existing(target)
        fds: list[int] = []
        try:
            inputs = _open_inputs(d, spec, fds)

            def fill(data_fd: int, index_fd: int) -> Copied:
                output = Output(data_fd, index_fd, target.data_path, target.index_path)
                return concatenate(inputs, output, spec.num_partitions, read_buffer, write_buffer, cancel, progress)

            copied = publish_pair(journal, target, fill, durable, faults, cancel)
        finally:
            for fd in fds:
                os.close(fd)
    finally:
        d.close()
    return MergeResult(copied.partition_lengths, copied.bytes_written, copied.bytes_read, target.data_path, target.index_path)
