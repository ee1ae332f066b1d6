"""The distribution's version, defined by the shared floor (:mod:`sparkshim.version`); kept for the merger's imports."""

from sparkshim.version import DISTRIBUTION, package_version

__all__ = ["DISTRIBUTION", "package_version"]
