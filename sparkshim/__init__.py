"""The shared floor the products (SLAQ, Riffle) register with (:mod:`sparkshim.products`): the small JVM shim,
the Python bridge that loads it into the driver, the start hook, and the message codec.

Java sources live in ``sparkshim/java`` (packages ``io.slaqriffle.seam``, ``.slaq``, ``.riffle``);
:mod:`sparkshim.build` compiles them against pyspark's jars into ``sparkshim/jars/`` when the wheel is
built (or by scripts/setup.sh in a checkout; never a committed jar), and :mod:`sparkshim.bridge` loads
that jar into a running driver JVM through py4j with no jar on the user's command line.
``slaq-riffle jar`` prints its path for ``--jars``.
"""
