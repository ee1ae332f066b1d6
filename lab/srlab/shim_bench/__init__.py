"""Benchmarks of the shim itself (``slaq-riffle bench ...``)."""
