"""Generate the Python gRPC stubs from ``proto/`` into ``riffle/v1`` (run at install time, never committed)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
OUT = ROOT / "riffle" / "v1"


def stubs_present() -> bool:
    return (OUT / "merger_pb2.py").exists() and (OUT / "merger_pb2_grpc.py").exists()


def build(force: bool = False) -> None:
    """Compile every ``proto/riffle/**/*.proto``; a no-op when the stubs are newer than the sources."""
    sources = sorted(PROTO_DIR.glob("riffle/**/*.proto"))
    if not sources:
        raise FileNotFoundError(f"no .proto files under {PROTO_DIR}")
    newest = max(p.stat().st_mtime for p in sources)
    if not force and stubs_present() and (OUT / "merger_pb2.py").stat().st_mtime >= newest:
        return
    from grpc_tools import protoc

    include = Path(protoc.__file__).parent / "_proto"
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={ROOT}", f"--grpc_python_out={ROOT}", f"--pyi_out={ROOT}"]
    if protoc.main(args + [str(p) for p in sources]) != 0:
        raise RuntimeError("protoc failed to compile " + ", ".join(map(str, sources)))


if __name__ == "__main__":
    build(force="--force" in sys.argv)
    print(f"riffle: gRPC stubs in {OUT}")
