"""The installed version of the project, for ``--version`` and the merger's Status reply."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "slaq-riffle"


def package_version(distribution: str = DISTRIBUTION) -> str:
    """The distribution's installed version, or ``"unknown"`` when it is run from sources without being installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"
