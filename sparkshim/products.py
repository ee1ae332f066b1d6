"""The products that attach to the shared floor, as they register themselves: the floor names none.

A product (SLAQ, Riffle) lists one :class:`Product` in its distribution's entry points, group
``slaq_riffle.products`` (pyproject.toml), under its name. Its confs are ``spark.<name>.*``, so the start
hook can tell from the conf keys alone, without importing anything, which products an application asks
for; only those are loaded (:func:`product`).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

ENTRY_POINTS = "slaq_riffle.products"


@dataclass(frozen=True)
class Product:
    """What the floor needs to know of a product: its ``name`` (its Python package and its conf prefix's
    middle), the module whose import registers its attachments (:mod:`sparkshim.attach`), what the
    application runs as when it cannot attach (``without``, ending a log line), and its JVM component
    (the shim class, relative to ``io.slaqriffle``, whose static ``attach(SparkContext)`` installs it)."""

    name: str
    attachments_module: str
    without: str
    shim_component: str


def conf_prefix(name: str) -> str:
    """The prefix of product ``name``'s confs (``spark.<name>.``)."""
    return f"spark.{name}."


def product_names() -> list[str]:
    """The registered products' names, sorted; reads installed metadata only (imports no product)."""
    return sorted({entry.name for entry in metadata.entry_points(group=ENTRY_POINTS)})


def product(name: str) -> Product:
    """The registration of product ``name`` (imports its package)."""
    for entry in metadata.entry_points(group=ENTRY_POINTS, name=name):
        registered = entry.load()
        if not isinstance(registered, Product) or registered.name != name:
            raise TypeError(f"entry point {entry.value} ({ENTRY_POINTS}) is not the Product {name!r}")
        return registered
    raise LookupError(f"no product {name!r} is registered ({ENTRY_POINTS})")
