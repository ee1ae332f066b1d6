"""The lab of slaq-riffle: benchmarks, paper reproductions, the loopback cluster harness and demos.

Not part of the product wheel. ``slaq_verbs``, ``riffle_verbs`` and ``shim_verbs`` add the ``bench`` and
``reproduce`` verbs to the product's ``slaq``, ``riffle`` and ``slaq-riffle`` commands (entry point group
``slaq_riffle.cli``).
"""
