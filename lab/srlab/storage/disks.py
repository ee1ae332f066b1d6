"""A disk of its own for every node of a loopback cluster: each node's local dir (its Spark local dirs and its
merger's files) mounted as a simulated disk, backed by a sibling directory on the real disk.

What the benches record about the storage comes from here too: the profile, and what one node's disk
measured at set-up (:mod:`srlab.storage.probe`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path

from srlab.storage.model import DiskProfile
from srlab.storage.mount import clean_stale, mounted
from srlab.storage.probe import probe

log = logging.getLogger("srlab.storage")
# A direct_io mount has no page cache to map: Java's FileChannel.map fails there ("No such device"). Spark maps
# blocks above memoryMapThreshold and, with transferTo, the sort shuffle writer's files; both off, for every
# configuration of a bench alike. Spark's bypass writer (a shuffle of up to bypassMergeThreshold partitions, 200
# by default, as every SQL exchange is) writes a file per reduce partition and at once reads each back to concatenate
# them: a node serves those reads from its page cache, this disk would charge each a seek (q1 of TPC-DS at scale 0.3:
# 10.5 s against 2.9 s with the sort writer), so the sort writer, which writes one file, is used instead.
SPARK_CONF = {"spark.file.transferTo": "false", "spark.storage.memoryMapThreshold": "2047m",
              "spark.shuffle.sort.bypassMergeThreshold": "1"}
LOCAL = {"name": "local"}  # the report of a run on the machine's own disk


def backing_dir(local_dir: str | Path) -> Path:
    """Where a node's simulated disk keeps its files: ``node-N/disk`` next to its ``node-N/local``."""
    return Path(local_dir).parent / "disk"


def report(profile: DiskProfile, measured: dict[str, float]) -> dict:
    """What a bench's JSON says about the storage it ran on."""
    return asdict(profile) | {"page_cache": False, "writes_charged": False, "measured": measured, "spark_conf": SPARK_CONF}


@contextmanager
def node_disks(local_dirs: Sequence[str | Path], profile: DiskProfile) -> Iterator[dict]:
    """Every one of ``local_dirs`` a disk of ``profile`` for the length of the block (unmounted however it ends);
    yields the storage report, with the first disk's measured costs."""
    for stale in clean_stale():
        log.warning("unmounted %s: a simulated disk left by a run that crashed", stale)
    with ExitStack() as stack:
        for d in local_dirs:
            stack.enter_context(mounted(backing_dir(d), d, profile))
        measured = probe(local_dirs[0]).to_json()
        log.info("%d simulated disks (%s: %g ms seek, %g MB/s, %d KiB read-ahead); measured on one: %s", len(local_dirs),
                 profile.name, profile.seek_ms, profile.read_mbps, profile.readahead_kib, measured)
        yield report(profile, measured)
