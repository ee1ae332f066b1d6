"""Generate the Python gRPC stubs of ``proto/riffle/**`` (build time only; never on import, never committed).

``setup.py``'s build step calls :func:`build` with the wheel's build directory, so the stubs (and the
``.proto`` sources next to them) ship inside the wheel; ``python -m riffle.proto_build`` generates them
into a source checkout (``scripts/setup.sh`` does).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"


def _outputs(out_root: Path) -> list[Path]:
    return [out_root / "riffle" / "v1" / "merger_pb2.py", out_root / "riffle" / "v1" / "merger_pb2_grpc.py"]


def build(out_root: Path = ROOT, proto_dir: Path = PROTO_DIR, force: bool = False) -> list[Path]:
    """Compile every ``proto_dir/riffle/**/*.proto`` into ``out_root``; a no-op when the stubs are newer."""
    sources = sorted(proto_dir.glob("riffle/**/*.proto"))
    if not sources:
        raise FileNotFoundError(f"no .proto files under {proto_dir}")
    outputs = _outputs(out_root)
    newest = max(p.stat().st_mtime for p in sources)
    if not force and all(o.exists() and o.stat().st_mtime >= newest for o in outputs):
        return outputs
    from grpc_tools import protoc

    include = Path(protoc.__file__).parent / "_proto"
    args = ["protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out_root}", f"--grpc_python_out={out_root}",
            f"--pyi_out={out_root}"]
    if protoc.main(args + [str(p) for p in sources]) != 0:
        raise RuntimeError("protoc failed to compile " + ", ".join(map(str, sources)))
    if out_root != ROOT:  # a package build: ship the API definition with its stubs
        for src in sources:
            shutil.copyfile(src, out_root / src.relative_to(proto_dir))
    return outputs


if __name__ == "__main__":
    for path in build(force="--force" in sys.argv):
        print(f"riffle: generated {path}")
