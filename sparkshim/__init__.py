"""The shared floor the products (SLAQ, Riffle) register with (:mod:`sparkshim.products`): the small JVM shim,
the Python bridge that loads it into the driver, the start hook, and the message codec.

The floor's Java sources live in ``sparkshim/java`` (``io.slaqriffle.seam``, ``.brain``), each product's beside its
Python (``slaq/java``, ``riffle/java``); :mod:`sparkshim.build` compiles them all against pyspark's jars into ``sparkshim/jars/`` when the wheel is
built (or by scripts/setup.sh in a checkout; never a committed jar), and :mod:`sparkshim.bridge` loads
that jar into a running driver JVM through py4j with no jar on the user's command line.
``slaq-riffle jar`` prints its path for ``--jars``.

Importing it puts the driver-log handler on the products' loggers (:mod:`sparkshim.driver_log`).
"""

from sparkshim import driver_log as _driver_log

_driver_log.install()
