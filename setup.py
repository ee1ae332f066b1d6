"""Build hook: what a wheel ships that is generated, not committed.

- the riffle.v1 gRPC stubs, generated from proto/;
- each product's typed message module (``slaq/messages.py``, ``riffle/messages.py``), generated from its schema;
- the shim jar, compiled from sparkshim/java and each product's java/ against the build environment's pyspark jars (so drivers
  never compile; the build needs a JDK 17 on the host, and pyspark, which build_backend.py asks for);
- the Spark conf templates of spark-conf/, so ``slaq-riffle conf`` has them without a clone;
- the start-up hook, a ``.pth`` file at the top of site-packages, so ``pip install`` alone makes
  ``--conf spark.slaq.enabled=true`` / ``spark.riffle.enabled=true`` work in pyspark.

Editable installs get none of these from here: scripts/setup.sh generates them in the checkout.
"""

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build_backend import source_module  # noqa: E402 (this tree's, from the line above)


class BuildGenerated(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        from riffle import proto_build
        build, starthook = source_module("sparkshim/build.py"), source_module("sparkshim/starthook.py")
        messages_build, templates = source_module("sparkshim/messages_build.py"), source_module("sparkshim/templates.py")

        lib = Path(self.build_lib)
        proto_build.build(lib, force=True)
        messages_build.build(lib, HERE)
        try:
            jar = build.compile_jar(lib / build.PACKAGED_JAR.relative_to(HERE))
        except build.BuildError as exc:
            raise SystemExit(f"sparkshim: {exc}\n(a wheel's build needs a JDK 17 and pyspark: pip wheel --no-deps . gets pyspark "
                             "into its build environment; --no-build-isolation uses the current one's)") from None
        print(f"sparkshim: built {jar.name} against Spark {build.jar_manifest(jar)[build.SPARK_VERSION_ATTR]}")
        packaged = lib / templates.PACKAGED_DIR.relative_to(HERE)
        packaged.mkdir(parents=True, exist_ok=True)
        for conf in templates.SOURCE_DIR.glob("*" + templates.SUFFIX):
            shutil.copyfile(conf, packaged / conf.name)
        (lib / starthook.PTH_NAME).write_text(starthook.PTH_LINE)


setup(cmdclass={"build_py": BuildGenerated})
