"""One published merge as the daemon's journal records it (:mod:`riffle.merger.journal`): where its two files
are, their temp names and the inodes the merge created, so cleanup and recovery remove only what it made."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from riffle.merger.paths import PRIVATE_PREFIX, Location, Roots, is_plain_name


@dataclass(frozen=True)
class Record:
    app_id: str
    shuffle_id: int
    data_dir: tuple[str, ...]   # the data file's dir: the root's canonical path, then components below it
    index_dir: tuple[str, ...]  # the index file's dir (Spark hashes each name to its own sub dir)
    data: str
    index: str
    tmp_data: str
    tmp_index: str
    data_inode: tuple[int, int]
    index_inode: tuple[int, int]

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @staticmethod
    def decode(raw: bytes) -> Record:
        """Parse a record, refusing one that names anything but plain entries below a root: records are
        only as trustworthy as the state dir, and a forged one must not reach outside the roots."""
        d = json.loads(raw)
        rec = Record(str(d["app_id"]), int(d["shuffle_id"]), tuple(d["data_dir"]), tuple(d["index_dir"]), d["data"], d["index"],
                     d["tmp_data"], d["tmp_index"], (int(d["data_inode"][0]), int(d["data_inode"][1])),
                     (int(d["index_inode"][0]), int(d["index_inode"][1])))
        for where in (rec.data_dir, rec.index_dir):
            if not where or not isinstance(where[0], str) or not all(isinstance(p, str) and is_plain_name(p) for p in where[1:]):
                raise ValueError(f"record names a directory that is not plain components below a root: {where}")
        for name, private in ((rec.data, False), (rec.index, False), (rec.tmp_data, True), (rec.tmp_index, True)):
            if not isinstance(name, str) or not is_plain_name(name) or name.startswith(PRIVATE_PREFIX) != private:
                raise ValueError(f"record names a file that is not a plain merged or temp name: {name!r}")
        return rec


def app_key(app_id: str) -> str:
    """A file-name-safe key for an application id (any string)."""
    return hashlib.sha256(app_id.encode()).hexdigest()[:32]


def under_any(record: Record, roots: Roots, dirs: Iterable[Location]) -> bool:
    """Whether the record's data file lies in one of an executor's local dirs."""
    for loc in dirs:
        where = (roots.paths[loc.root], *loc.parts)
        if record.data_dir[:len(where)] == where:
            return True
    return False

