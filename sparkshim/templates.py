"""The Spark conf templates, ``spark-conf/*.properties`` (one per mode, driver kind and cluster manager), where a
checkout and an installed wheel keep them: ``slaq-riffle conf NAME`` prints one, ``slaq-riffle conf --path NAME``
names its file for ``spark-submit --properties-file``.

``spark-conf/`` in the repository is their one source; a wheel carries them in ``sparkshim/spark-conf/``,
where setup.py's build step puts them.
"""

from __future__ import annotations

from pathlib import Path

PACKAGED_DIR = Path(__file__).resolve().parent / "spark-conf"  # in an installed wheel
SOURCE_DIR = Path(__file__).resolve().parents[1] / "spark-conf"  # in a checkout (and an editable install)
SUFFIX = ".properties"


def templates_dir() -> Path:
    return PACKAGED_DIR if PACKAGED_DIR.is_dir() else SOURCE_DIR


def names() -> list[str]:
    return sorted(p.name.removesuffix(SUFFIX) for p in templates_dir().glob("*" + SUFFIX))


def template(name: str) -> Path:
    """The file of template ``name`` (``slaq`` or ``slaq.properties``); ValueError naming the known ones."""
    path = templates_dir() / (name.removesuffix(SUFFIX) + SUFFIX)
    if not path.is_file():
        raise ValueError(f"no conf template {name!r} (known: {', '.join(names()) or 'none, in ' + str(templates_dir())})")
    return path
