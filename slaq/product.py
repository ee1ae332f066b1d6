"""SLAQ as the shared floor knows it (registered in pyproject.toml, entry points ``slaq_riffle.products``)."""

from sparkshim.products import Product

PRODUCT = Product(name="slaq", attachments_module="slaq.runtime", without="with Spark's own scheduling", shim_component="slaq.SlaqPools")
