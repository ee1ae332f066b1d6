"""The daemon's journal as an attacker who can write into the local dirs would forge it, against real daemons
(in this process; the start-up refusals' exit code and line as ``riffle-merger serve``).

The default state dir lies inside the first local dir, which executors can write: a record there must never make
recovery or cleanup remove anything outside the roots, and a state dir others could have written is refused.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from riffle.merger.journal import STATE_DIR_NAME, app_key
from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE
from tests.fixtures import make_outputs


def forged(root: Path, data_dir: list[str], data: str, tmp_data: str, inode: tuple[int, int], app: str = "app") -> dict:
    return {"app_id": app, "shuffle_id": 0, "data_dir": data_dir, "index_dir": [str(root)], "data": data,
            "index": "shuffle_0_1_0.index", "tmp_data": tmp_data, "tmp_index": ".riffle-tmp-x", "data_inode": list(inode),
            "index_inode": [0, 0]}


def victims(tmp_path: Path, n: int) -> list[Path]:
    out = tmp_path / "outside"
    out.mkdir(exist_ok=True)
    files = [out / f"victim{i}" for i in range(n)]
    for f in files:
        f.write_text("precious")
    return files


def inode(p: Path) -> tuple[int, int]:
    st = p.stat()
    return st.st_dev, st.st_ino


def test_forged_records_never_remove_files_outside_the_roots(root, dirs, tmp_path, start_merger):
    """Names with '/' or '..' and dirs with '..' components are refused, in recovery and in cleanup."""
    v = victims(tmp_path, 4)
    state = root / STATE_DIR_NAME
    (state / "pending").mkdir(parents=True)
    (state / "apps" / app_key("app")).mkdir(parents=True)
    real_root = os.path.realpath(root)
    records = {
        state / "pending" / "a.json": forged(root, [real_root, "blockmgr-a"], "x", "../../outside/victim0", (0, 0)),
        state / "pending" / "b.json": forged(root, [real_root, "..", "outside"], "victim1", ".riffle-tmp-y", inode(v[1])),
        state / "pending" / "c.json": forged(root, [real_root], "../outside/victim2", ".riffle-tmp-z", inode(v[2])),
        state / "apps" / app_key("app") / "d.json": forged(root, [real_root, "blockmgr-a", "..", "..", "outside"], "victim3",
                                                           ".riffle-tmp-w", inode(v[3])),
    }
    for path, rec in records.items():
        path.write_text(json.dumps(rec))
    with start_merger() as d:
        assert d.client.cleanup(dirs, "app", all_shuffles=True).files_deleted == 0
        assert "ignoring" in d.log()
    assert [f.read_text() for f in v] == ["precious"] * 4


def serve_once(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "riffle.merger.cli", "serve", "--listen", "127.0.0.1:0", "--local-dir", str(root)],
                          capture_output=True, text=True, timeout=60)


def test_state_dir_others_could_write_is_refused_in_one_line(root, start_merger):
    """A state dir another user owns, or that group/others may write, could hold forged records: refuse to start."""
    state = root / STATE_DIR_NAME
    state.mkdir()
    state.chmod(0o777)
    out = serve_once(root)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "state dir" in lines[0] and f"chmod go-w {state}" in lines[0], out.stderr
    if os.geteuid() == 0:  # only root can give the dir to another user
        state.chmod(0o700)
        os.chown(state, 4321, 4321)
        out = serve_once(root)
        assert out.returncode == 2 and "owned by uid 4321" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    state.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(state, os.geteuid(), os.getegid())
    with start_merger():
        pass


def test_records_of_gone_files_and_empty_app_dirs_are_pruned_while_running(root, dirs, start_merger):
    """An application that ends without Cleanup (Spark removes its dirs) leaves no record behind for long,
    and one that cleans up leaves no empty record dir: the state dir does not grow with every application."""
    apps = root / STATE_DIR_NAME / "apps"
    make_outputs(dirs, 1, [0, 1], 4)
    with start_merger("--prune-interval", "0.2") as d:
        gone = d.client.merge("a", 1, [0, 1], dirs, 4, SYNTHETIC_MAP_ID_BASE + 1, app_id="ended")
        d.client.merge("b", 1, [0, 1], dirs, 4, SYNTHETIC_MAP_ID_BASE + 2, app_id="tidy")
        assert d.client.cleanup(dirs, "tidy", all_shuffles=True).files_deleted == 2
        assert sorted(os.listdir(apps)) == [app_key("ended")]
        os.unlink(gone.data_path)
        os.unlink(gone.index_path)
        deadline = time.monotonic() + 30
        while os.listdir(apps) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.listdir(apps) == []


def test_half_written_record_of_a_crash_is_removed_at_start(root, start_merger):
    """A crash while a record was being written leaves its temp in pending/: recovery removes it (it never began)."""
    pending = root / STATE_DIR_NAME / "pending"
    pending.mkdir(parents=True)
    (pending / ".0123.json.4567").write_text('{"app_id": "ap')
    with start_merger():
        assert os.listdir(pending) == []


def test_fifos_in_the_state_dir_hang_neither_start_up_nor_cleanup(root, dirs, start_merger):
    """The state dir's files are opened like inputs (no symlink, non-blocking, a regular file on the descriptor):
    a FIFO named like a record must not block start-up's recovery or a cleanup thread for good."""
    make_outputs(dirs, 1, [0, 1], 4)
    state = root / STATE_DIR_NAME
    for sub in ("pending", f"apps/{app_key('app')}"):
        (state / sub).mkdir(parents=True, mode=0o700)
        os.mkfifo(state / sub / "0000-fifo.json")
    t0 = time.monotonic()
    with start_merger() as d:
        assert time.monotonic() - t0 < 20
        resp = d.client.merge("m", 1, [0, 1], dirs, 4, SYNTHETIC_MAP_ID_BASE + 1, app_id="app")
        t0 = time.monotonic()
        assert d.client.cleanup(dirs, "app", all_shuffles=True).files_deleted == 2
        assert time.monotonic() - t0 < 5 and not Path(resp.data_path).exists()
        assert "ignoring unreadable merge record 0000-fifo.json" in d.log()


def test_a_fifo_for_the_lock_file_is_refused_in_one_line(root):
    state = root / STATE_DIR_NAME
    state.mkdir(mode=0o700)
    os.mkfifo(state / "lock")
    out = subprocess.run([sys.executable, "-m", "riffle.merger.cli", "serve", "--local-dir", str(root)],
                         capture_output=True, text=True, timeout=30)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "lock is not a regular file" in lines[0], out.stderr
