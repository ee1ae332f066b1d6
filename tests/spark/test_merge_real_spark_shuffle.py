"""Merge the map outputs of a real Spark shuffle with a real merger daemon over loopback gRPC."""

import itertools
import re
from collections import defaultdict
from pathlib import Path

from riffle.shuffle.layout import SYNTHETIC_MAP_ID_BASE, block_file_path, id_beside_inputs, read_partition
from srsupport.daemons import DaemonProcess

SHUFFLE_FILE = re.compile(r"^shuffle_(\d+)_(\d+)_0\.index$")


def spark_map_outputs(root: Path) -> dict[tuple[Path, int], list[int]]:
    """{(executor blockmgr dir, shuffle id): [map ids]} of every sort-shuffle output Spark wrote under root."""
    found: dict[tuple[Path, int], list[int]] = defaultdict(list)
    for index in root.rglob("shuffle_*_0.index"):
        m = SHUFFLE_FILE.match(index.name)
        blockmgr = next(p for p in index.parents if p.name.startswith("blockmgr-"))
        found[(blockmgr, int(m.group(1)))].append(int(m.group(2)))
    return found


def test_daemon_merges_real_spark_map_outputs_byte_for_byte(spark, spark_local_root):
    partitions = 37
    sc = spark.sparkContext
    rdd = sc.parallelize(range(40000), 12).map(lambda i: (i % 997, f"value-{i}" * (i % 5)))
    grouped = rdd.partitionBy(partitions).mapPartitions(lambda it: [sum(1 for _ in it)])
    counts = grouped.collect()
    assert sum(counts) == 40000
    outputs = {k: v for k, v in spark_map_outputs(spark_local_root).items()}
    assert outputs, "Spark wrote no sort-shuffle files under spark.local.dir"
    sid = max(s for _, s in outputs)
    per_executor = {d: sorted(maps) for (d, s), maps in outputs.items() if s == sid}
    assert sum(len(m) for m in per_executor.values()) == 12
    with DaemonProcess([spark_local_root]) as daemon:
        for n, (blockmgr, maps) in enumerate(sorted(per_executor.items())):
            dirs = [str(blockmgr)]
            for m in maps:  # our placement of Spark's files agrees with where Spark put them
                assert block_file_path(dirs, f"shuffle_{sid}_{m}_0.data").exists()
                assert block_file_path(dirs, f"shuffle_{sid}_{m}_0.index").exists()
            merged = id_beside_inputs(sid, [(m, True) for m in maps], 1, itertools.count(SYNTHETIC_MAP_ID_BASE))  # as the driver names it
            assert merged is not None
            resp = daemon.client.merge(f"spark-{n}", sid, maps, dirs, partitions, merged, app_id=sc.applicationId)
            assert resp.data_path == str(block_file_path(dirs, f"shuffle_{sid}_{merged}_0.data"))
            nonempty = 0
            for p in range(partitions):
                originals = [read_partition(block_file_path(dirs, f"shuffle_{sid}_{m}_0.data"),
                                            block_file_path(dirs, f"shuffle_{sid}_{m}_0.index"), partitions, p) for m in maps]
                merged = read_partition(Path(resp.data_path), Path(resp.index_path), partitions, p)
                assert merged == b"".join(originals)
                nonempty += bool(merged)
            assert nonempty > partitions // 2
            assert daemon.client.cleanup(dirs, sc.applicationId, sid).files_deleted == 2
