"""The benches' storage flags: ``--storage local|hdd`` and the ``hdd`` disk's parameters."""

from __future__ import annotations

import argparse

from sparkshim.commands import positive
from srlab.storage.model import DiskProfile
from srlab.storage.mount import check_available

PROFILES = ("local", "hdd")
OVERRIDES = ("seek_ms", "read_mbps", "readahead_kib")


def add_storage_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("storage", "what each node's disk costs (docs/benchmarks.md, \"Storage profiles\")")
    g.add_argument("--storage", choices=PROFILES, default="local",
                   help="local: this machine's disk as it is; hdd: every node's local dir on a simulated spinning disk of its "
                        "own (seek + transfer + read-ahead, no page cache; needs root, FUSE and a --nodes cluster)")
    g.add_argument("--seek-ms", type=float, help=f"hdd: time of a seek (default {DiskProfile.seek_ms:g})")
    g.add_argument("--read-mbps", type=positive(float), help=f"hdd: transfer rate in MB/s (default {DiskProfile.read_mbps:g})")
    g.add_argument("--readahead-kib", type=int, help=f"hdd: what a seek reads ahead for its stream (default {DiskProfile.readahead_kib})")


def storage_profile(args: argparse.Namespace) -> DiskProfile | None:
    """The disk the flags ask for (None: the local disk as it is). Raises ValueError (one line for the user) for
    overrides without ``--storage hdd`` and, through :func:`check_available`, where disks cannot be mounted."""
    given = {k: getattr(args, k) for k in OVERRIDES if getattr(args, k) is not None}
    if args.storage == "local":
        if given:
            raise ValueError(f"--{', --'.join(k.replace('_', '-') for k in given)}: parameters of --storage hdd (this run is --storage local)")
        return None
    profile = DiskProfile(args.storage, **given)
    check_available()
    return profile
