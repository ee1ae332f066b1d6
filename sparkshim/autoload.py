"""Attach SLAQ and Riffle when a SparkContext starts, so ``spark-submit --conf spark.riffle.enabled=true
app.py`` (or ``spark.slaq.enabled``) works with no change to the application.

``scripts/setup.sh`` (or ``python -m sparkshim.autoload install``) puts a one-line ``.pth`` file in
the environment's site-packages; at interpreter start it only registers an import hook, which
wraps ``SparkContext.__init__`` the first time pyspark's context module is imported. Nothing else
is imported until an application actually creates a SparkContext with one of the flags on.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import logging
import sys
import sysconfig
from pathlib import Path
from typing import Any

log = logging.getLogger("sparkshim.autoload")
TARGET = "pyspark.core.context"
PTH_NAME = "slaq_riffle_autoload.pth"
PTH_LINE = "import sparkshim.autoload as _a; _a.register()\n"


def attach_enabled(sc: Any) -> None:
    """Attach whatever ``sc``'s conf switches on; a failure is logged and the app runs as plain Spark."""
    conf = sc.getConf()
    if (conf.get("spark.riffle.enabled") or "").strip().lower() == "true":
        try:
            import riffle

            riffle.attach(sc)
        except Exception:
            log.exception("Riffle could not attach; the application runs without shuffle merging")
    if (conf.get("spark.slaq.enabled") or "").strip().lower() == "true":
        try:
            import slaq

            slaq.attach(sc)
        except Exception:
            log.exception("SLAQ could not attach; the application runs with Spark's own scheduling")


def patch(module: Any) -> None:
    cls = module.SparkContext
    if getattr(cls, "_slaq_riffle_patched", False):
        return
    original = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        attach_enabled(self)

    cls.__init__ = __init__
    cls._slaq_riffle_patched = True


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        exec_module = loader.exec_module  # type: ignore[union-attr]

        def exec_and_patch(module: Any) -> None:
            exec_module(module)
            patch(module)

        loader.exec_module = exec_and_patch  # type: ignore[union-attr, method-assign]
        return spec


def register() -> None:
    """Called from the .pth file at interpreter start: cheap, imports nothing heavy."""
    if TARGET in sys.modules:
        patch(sys.modules[TARGET])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def pth_path() -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / PTH_NAME


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sparkshim.autoload",
                                description="Install or remove the start-up hook that attaches SLAQ/Riffle from spark.*.enabled confs.")
    p.add_argument("action", choices=["install", "uninstall", "status"])
    args = p.parse_args(argv)
    path = pth_path()
    if args.action == "install":
        path.write_text(PTH_LINE)
        print(f"installed {path}")
    elif args.action == "uninstall":
        path.unlink(missing_ok=True)
        print(f"removed {path}")
    else:
        print(f"{path}: {'installed' if path.exists() else 'not installed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
