"""The small JVM shim SLAQ and Riffle share, and the Python bridge that loads it into the driver.

Java sources live in ``sparkshim/java`` (packages ``io.slaqriffle.seam``, ``.slaq``, ``.riffle``); :mod:`sparkshim.build` compiles them against the installed
pyspark jars (never a committed jar), and :mod:`sparkshim.bridge` loads the result into a running
driver JVM through py4j with no jar on the user's command line.
"""
