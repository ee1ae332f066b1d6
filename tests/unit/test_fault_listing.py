"""The fault matrix lists what is left on the nodes while workers and mergers are deleting it: a driver's death
makes its worker remove the application's dirs and the mergers their records as the listing walks them."""

from __future__ import annotations

import os
import shutil
import threading

from srlab.cluster.harness import Cluster
from srlab.cluster.layout import plan
from srlab.riffle_bench.faults import app_files, riffle_files


def test_listing_what_is_left_survives_dirs_deleted_while_it_walks(tmp_path):
    cluster = Cluster(plan(tmp_path, 3, list(range(9000, 9010))))
    dirs = [f"{n.local_dir}/blockmgr-{i}" for n in cluster.layout.nodes for i in range(2)]
    done = threading.Event()

    def churn() -> None:  # an application's dirs come and go, as a worker removes them
        for _ in range(15):
            if done.is_set():
                break
            for d in dirs:
                for sub in range(16):
                    path = f"{d}/{sub:02x}"
                    os.makedirs(path, exist_ok=True)
                    with open(f"{path}/shuffle_0_{sub}_0.data", "wb") as f:
                        f.write(b"x")
            for d in dirs:
                shutil.rmtree(d)
        done.set()

    deleting = threading.Thread(target=churn)
    deleting.start()
    try:
        while not done.is_set():
            riffle_files(cluster)
            app_files(cluster)
    finally:
        done.set()
        deleting.join()
    assert riffle_files(cluster) == [] and app_files(cluster) == []
