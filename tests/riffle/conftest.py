import os
from pathlib import Path

import pytest

from riffle.merger.journal import Journal
from riffle.merger.paths import Roots
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
def roots(root):
    r = Roots([root])
    yield r
    r.close()


@pytest.fixture
def journal(roots):
    j = Journal(roots, durable=False)
    yield j
    j.close()


def make_outputs(dirs, shuffle_id, maps, partitions, seed=0, sizes=(0, 1, 17, 300, 4096, 70000)):
    """Random map outputs (block sizes drawn from ``sizes``); returns {map_id: [block bytes]}."""
    import random

    rng = random.Random(seed)
    blocks = {}
    for m in maps:
        blocks[m] = [os.urandom(rng.choice(sizes)) for _ in range(partitions)]
        write_map_output(dirs, shuffle_id, m, blocks[m])
    return blocks


def all_files(root: Path) -> set[str]:
    """Files under ``root`` except the daemon's own state and logs."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.relative_to(root).parts[0].startswith((".riffle", ".merger-"))}
