"""Storage profiles of the lab's benchmarks: a node's disk made to cost what a spinning disk costs.

``model`` (the pure seek/transfer/read-ahead cost of each read), ``passthrough`` (the FUSE file system that
charges it), ``serve`` (one disk's process), ``mount`` (mounting, unmounting, stale mounts), ``probe`` (what
a mounted disk measures), ``disks`` (a disk per node of a cluster) and ``options`` (the benches' flags).
Only ``passthrough`` (loaded by the disk process) imports fusepy.
"""
