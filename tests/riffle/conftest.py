import os
from pathlib import Path

import pytest

from riffle.merger.paths import PathGuard
from riffle.shuffle.layout import write_map_output


@pytest.fixture
def root(tmp_path) -> Path:
    r = tmp_path / "local"
    r.mkdir()
    return r


@pytest.fixture
def dirs(root) -> list[str]:
    out = [root / "blockmgr-a", root / "blockmgr-b", root / "blockmgr-c"]
    for d in out:
        d.mkdir()
    return [str(d) for d in out]


@pytest.fixture
def guard(root) -> PathGuard:
    return PathGuard([root])


def make_outputs(dirs, shuffle_id, maps, partitions, seed=0):
    """Random map outputs (some empty blocks); returns {map_id: [block bytes]}."""
    import random

    rng = random.Random(seed)
    blocks = {}
    for m in maps:
        blocks[m] = [os.urandom(rng.choice([0, 1, 17, 300, 4096, 70000])) for _ in range(partitions)]
        write_map_output(dirs, shuffle_id, m, blocks[m])
    return blocks


def all_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
