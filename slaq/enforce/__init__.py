"""Enforcement: SLAQ's allocations become token buckets on Spark task pools (via the JVM shim)."""
