"""Riffle as the shared floor knows it (registered in pyproject.toml, entry points ``slaq_riffle.products``)."""

from sparkshim.products import Product

PRODUCT = Product(name="riffle", attachments_module="riffle.runtime", without="without shuffle merging",
                  shim_component="riffle.RiffleTracker")
