"""Install, remove or inspect the start-up hook (:mod:`sparkshim.starthook`) in this environment.

    python -m sparkshim.autoload install|uninstall|status
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
from pathlib import Path

from sparkshim.starthook import PTH_LINE, PTH_NAME


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
