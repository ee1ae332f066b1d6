"""Where the shim jar is found and what loading it says when it cannot be, with no JVM and no compile."""

from __future__ import annotations

import zipfile

import pytest

from sparkshim import cli
from sparkshim.bridge import ShimUnavailable, packaged_jar, spark_line_mismatch
from sparkshim.build import SOURCES_ATTR, SPARK_VERSION_ATTR, manifest_attributes, outside_line_hint, sources_fingerprint
from sparkshim.spark_line import in_line, pyspark_specifier, supported_spark


def make_jar(path, **attrs):
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n" + "".join(f"{k}: {v}\n" for k, v in attrs.items()) + "\n")
    return path


def layout(root, checkout):
    """``root/sparkshim/jars/slaq-riffle-shim.jar``'s path in a checkout (a pyproject.toml beside the package) or a site-packages."""
    (root / "sparkshim" / "jars").mkdir(parents=True)
    if checkout:
        (root / "pyproject.toml").write_text("")
    return root / "sparkshim" / "jars" / "slaq-riffle-shim.jar"


def test_manifest_main_section_with_continuation_lines():
    text = "Manifest-Version: 1.0\nSpark-Version: 4.3.0\nLong: abc\n def\n\nName: x\nSpark-Version: 9\n"
    assert manifest_attributes(text) == {"Manifest-Version": "1.0", "Spark-Version": "4.3.0", "Long": "abcdef"}


@pytest.mark.parametrize("built, running, warns", [
    ("4.3.0", "4.3.1", False), ("4.3.0", "4.3.0-SNAPSHOT", False), ("4.3.0", "4.2.1", False), ("4.3.0", "4.1.4", False),
    ("4.3.0", "4.0.5", False), ("4.3.0", "3.5.4", True), ("4.3.0", "4.4.0", True), ("4.3.0", "5.0.0", True), ("4.3.0", "", True),
])
def test_only_a_spark_outside_the_supported_lines_is_one_warning(built, running, warns):
    """One jar, compiled against 4.3, serves 4.0-4.3: a driver on another supported line is not warned."""
    message = spark_line_mismatch(built, running)
    assert (message is not None) == warns
    if warns:
        assert "\n" not in message and "built against Spark" in message and "self-check" in message


def test_without_a_readable_range_the_jar_s_own_line_is_compared():
    assert spark_line_mismatch("4.3.0", "4.3.1", "") is None
    assert "built against Spark 4.3.0 but this driver runs Spark 4.2.1" in spark_line_mismatch("4.3.0", "4.2.1", "")


def test_the_supported_lines_are_the_declared_pyspark_requirement():
    import pyspark

    assert supported_spark() == ">=4.0,<4.4"  # pyproject.toml's, read from the checkout
    assert in_line(pyspark.__version__, supported_spark())  # the tests run on a supported line
    # a wheel's metadata, as pip writes it (clauses reordered, extras' requirements after ';')
    assert pyspark_specifier(["numpy>=1.26", "pyspark<4.4,>=4.0", "pyspark[connect]>=4.0; extra == 'connect'"]) == ">=4.0,<4.4"
    assert pyspark_specifier(["numpy>=1.26"]) is None


@pytest.mark.parametrize("version, inside", [
    ("4.3.0", True), ("4.3.2-SNAPSHOT", True), ("4.2.1", True), ("4.1.4", True), ("4.0.5", True), ("4.0", True),
    ("3.5.4", False), ("4.4.0", False), ("", None), ("dev", None),
])
def test_versions_against_the_supported_lines(version, inside):
    assert in_line(version, ">=4.0,<4.4") is inside
    assert (outside_line_hint(version) != "") == (inside is False)


@pytest.mark.parametrize("built, running, outside", [
    ("4.3.0", "3.5.4", True), ("4.3.0", "4.4.0", True), ("4.3.0", "4.0.5", False), ("4.3.0", "4.3.1", False),
])
def test_a_driver_outside_the_supported_lines_is_told_so(built, running, outside):
    message = spark_line_mismatch(built, running, ">=4.0,<4.4")
    assert (message is not None) == outside
    if outside:
        assert "outside the Spark lines slaq-riffle supports (pyspark>=4.0,<4.4" in message and "\n" not in message


def test_missing_jar_in_a_checkout_says_run_setup(tmp_path):
    with pytest.raises(ShimUnavailable, match=r"checkout's shim jar is not built.*scripts/setup\.sh"):
        packaged_jar(layout(tmp_path, checkout=True))


def test_missing_jar_in_an_install_says_reinstall(tmp_path):
    with pytest.raises(ShimUnavailable, match=r"installed slaq-riffle has no shim jar.*reinstall the slaq-riffle wheel"):
        packaged_jar(layout(tmp_path, checkout=False))


def test_a_checkout_jar_older_than_its_sources_is_not_loaded(tmp_path):
    jar = make_jar(layout(tmp_path, checkout=True), **{SPARK_VERSION_ATTR: "4.3.0", SOURCES_ATTR: "0" * 12})
    with pytest.raises(ShimUnavailable, match="older than the Java sources.*python -m sparkshim.build"):
        packaged_jar(jar)
    make_jar(jar, **{SPARK_VERSION_ATTR: "4.3.0", SOURCES_ATTR: sources_fingerprint()})
    assert packaged_jar(jar) == jar


def test_an_installed_jar_loads_as_shipped(tmp_path):
    jar = make_jar(layout(tmp_path, checkout=False), **{SPARK_VERSION_ATTR: "4.3.0"})
    assert packaged_jar(jar) == jar


def test_jar_verb_prints_the_path_or_the_fix(tmp_path, monkeypatch, capsys):
    jar = make_jar(layout(tmp_path, checkout=False), **{SPARK_VERSION_ATTR: "4.3.0"})
    monkeypatch.setattr("sparkshim.bridge.PACKAGED_JAR", jar)
    assert cli.main(["jar", "--info"]) == 0
    assert capsys.readouterr().out.splitlines() == [str(jar), "built against Spark 4.3.0"]
    jar.unlink()
    assert cli.main(["jar"]) == 1
    assert "reinstall the slaq-riffle wheel" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("slaq-riffle ")


def test_the_lab_adds_bench_attach_to_slaq_riffle():
    import argparse

    from srlab import shim_verbs
    from srlab.shim_bench.attach import summarize

    parser = argparse.ArgumentParser(prog="slaq-riffle")
    shim_verbs.register(parser, parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(["bench", "attach", "--repeat", "3"])
    assert args.repeat == 3 and args.func is shim_verbs.cmd_bench_attach
    samples = [{"compile_s": 0.0, "load_s": x, "total_s": x} for x in (3.0, 1.0, 2.0)]
    assert summarize(samples)["median_total_s"] == 2.0


def test_the_lab_adds_bench_plugin_to_slaq_riffle():
    import argparse

    from srlab import shim_verbs
    from srlab.shim_bench.plugin import ratio, summarize

    parser = argparse.ArgumentParser(prog="slaq-riffle")
    shim_verbs.register(parser, parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(["bench", "plugin", "--repeat", "2", "--nway", "5"])
    assert (args.repeat, args.nway, args.jobs) == (2, 5, 3) and args.func is shim_verbs.cmd_bench_plugin

    def app(job_seconds: list[float], error_pp: float) -> dict:
        enforce = [{"mode": m, "max_error_pp": error_pp, "utilization": 1.0, "deposit_ms_median": 2.0} for m in ("strict", "work-conserving")]
        return {"brain_started": True, "merges_completed": 8, "enforce": enforce,
                "shuffles": [{"job_seconds": s, "reduce_stage": {"seconds": s / 2, "blocks_fetched": 200}} for s in job_seconds]}

    summary = summarize([app([1.0, 4.0], 3.0), app([2.0], 1.0)])  # medians over every job and every run of the arm
    assert summary["shuffle_job_seconds"] == 2.0 and summary["brain_processes"] == 2
    assert summary["enforce_strict"]["max_error_pp"] == 2.0 and summary["blocks_fetched"] == 200
    assert ratio(3.0, 2.0) == 1.5 and ratio(None, 2.0) is None and ratio(1.0, 0.0) is None
