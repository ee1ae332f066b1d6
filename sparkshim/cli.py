"""``slaq-riffle``: what a Spark user needs from the installed package outside Python.

    slaq-riffle jar            the shim jar's path, for ``--jars`` / ``spark.jars``
    slaq-riffle jar --info     also the Spark version it was built against
    slaq-riffle conf NAME...   the conf templates (spark-conf/), concatenated; --path NAME: the file, for --properties-file
    slaq-riffle bench attach   (the lab, from a clone) attach time: packaged jar vs compiling it first
    slaq-riffle bench ui       (the lab) the tabs at scale: event-log bytes, serving time live and in the History Server
"""

from __future__ import annotations

import argparse
import sys

from sparkshim import templates
from sparkshim.commands import add_lab_verbs, add_version, run_verb

PROG = "slaq-riffle"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="The SLAQ/Riffle package's Spark-side pieces.")
    add_version(p, PROG)
    verbs = p.add_subparsers(dest="verb", required=True)
    jar = verbs.add_parser("jar", help="print the path of the shim jar (for spark-submit --jars or spark.jars)",
                           description="Print the path of the shim jar shipped in this package, e.g. spark-submit --jars \"$(slaq-riffle jar)\".")
    jar.add_argument("--info", action="store_true", help="also print the Spark version the jar was built against")
    jar.set_defaults(func=_jar)
    conf = verbs.add_parser("conf", help="print a Spark conf template (spark-conf/), or with --path its file",
                            description="Print the Spark conf templates NAME... (concatenated: they combine that way), or with --path "
                                        "the file of one, e.g. spark-submit --properties-file \"$(slaq-riffle conf --path slaq)\". "
                                        "Without NAME: the templates there are.")
    conf.add_argument("names", nargs="*", metavar="NAME", help="a template: " + ", ".join(templates.names()))
    conf.add_argument("--path", action="store_true", help="print the template's file instead of its text")
    conf.set_defaults(func=_conf)
    add_lab_verbs(p, verbs, PROG, ("bench",))
    return p


def _jar(args: argparse.Namespace) -> int:
    from sparkshim.bridge import ShimUnavailable, packaged_jar
    from sparkshim.build import SPARK_VERSION_ATTR, jar_manifest

    try:
        jar = packaged_jar()
    except ShimUnavailable as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    print(jar)
    if args.info:
        print(f"built against Spark {jar_manifest(jar).get(SPARK_VERSION_ATTR, 'unknown')}")
    return 0


def _conf(args: argparse.Namespace) -> int:
    paths = [templates.template(name) for name in args.names]  # an unknown name: ValueError, one line and exit code 2
    if not paths:
        print(f"{templates.templates_dir()}: {' '.join(templates.names())}")
    elif args.path:
        print("\n".join(map(str, paths)))
    else:
        sys.stdout.write("".join(p.read_text().rstrip("\n") + "\n" for p in paths))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_verb(parser().parse_args(argv), PROG)


if __name__ == "__main__":
    sys.exit(main())
