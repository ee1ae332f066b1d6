from pathlib import Path

import pytest

from riffle.merger.journal import Journal
from riffle.merger.paths import Roots


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
