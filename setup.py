"""Build hook: the riffle.v1 gRPC stubs are generated from proto/ into the build, so wheels ship them."""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent))


class BuildWithStubs(build_py):
    def run(self) -> None:
        super().run()
        from riffle import proto_build

        if not self.editable_mode:  # editable installs use the checkout's stubs (python -m riffle.proto_build)
            proto_build.build(Path(self.build_lib), force=True)


setup(cmdclass={"build_py": BuildWithStubs})
