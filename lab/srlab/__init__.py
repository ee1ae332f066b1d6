"""The lab of slaq-riffle: benchmarks, paper reproductions, the loopback cluster harness and demos.

Not part of the product wheel. ``srlab.cli`` adds the ``bench`` and ``reproduce`` verbs to the
product's ``slaq`` and ``riffle`` commands (entry point group ``slaq_riffle.cli``).
"""
