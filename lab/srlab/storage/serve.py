"""``python -m srlab.storage.serve ROOT MOUNTPOINT``: serves one simulated disk until it is unmounted or the
process is signalled (SIGTERM/SIGINT: libfuse unmounts and returns). Started and stopped by
:func:`srlab.storage.mount.mounted`, one process per disk, so each disk has its own interpreter and its
reads never wait on another disk's Python.

Mounted with ``direct_io`` (no page cache: every read reaches the model) and ``hard_remove`` (a file
unlinked while open is gone from the backing directory at once, as on a real disk), multithreaded, with
the largest requests a libfuse 2 mount takes.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal

from srlab.storage.model import DiskProfile

FSNAME = "srlab-disk"  # the source and subtype in /proc/mounts: how stale mounts are recognised
MAX_REQUEST = 128 * 1024  # libfuse 2's largest read and write request
PR_SET_PDEATHSIG, PR_SET_TIMERSLACK = 1, 29


def _linux_prctl(option: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m srlab.storage.serve", description=__doc__.split("\n\n")[0])
    p.add_argument("root", help="the backing directory on the real disk")
    p.add_argument("mountpoint")
    p.add_argument("--seek-ms", type=float, default=DiskProfile.seek_ms)
    p.add_argument("--read-mbps", type=float, default=DiskProfile.read_mbps)
    p.add_argument("--readahead-kib", type=int, default=DiskProfile.readahead_kib)
    p.add_argument("--charge-index-files", action="store_true", help="charge reads of Spark's .index files too (default: as if cached)")
    p.add_argument("--parent-pid", type=int, help="exit (and unmount) when this process, the one that mounted it, ends")
    args = p.parse_args(argv)
    profile = DiskProfile("hdd", args.seek_ms, args.read_mbps, args.readahead_kib, not args.charge_index_files)
    if args.parent_pid:  # nothing stays mounted after a crashed bench: its death signals this process
        _linux_prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != args.parent_pid:
            return 1
    # sleeps end within a microsecond instead of the default 50 µs slack (inherited by libfuse's threads)
    _linux_prctl(PR_SET_TIMERSLACK, 1000)

    from fuse import FUSE

    from srlab.storage.passthrough import SlowDisk

    FUSE(SlowDisk(args.root, profile), args.mountpoint, raw_fi=True, foreground=True, nothreads=False, fsname=FSNAME, subtype=FSNAME,
         allow_other=True, direct_io=True, hard_remove=True, big_writes=True, max_read=MAX_REQUEST, max_write=MAX_REQUEST)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
