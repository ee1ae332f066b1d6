"""The estimator catalogue (slaq/integrations/catalogue.py) is the one list: the docs' tables show exactly its entries."""

from __future__ import annotations

import re
from pathlib import Path

from slaq.integrations.catalogue import ALWAYS, BY_NAME, CATALOGUE, NEVER, markdown_table, reports_loss, training_caches

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _table_after(text: str, heading: str) -> list[str]:
    """The rows (after the header and separator) of the first markdown table under ``heading``."""
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return rows[2:]


def _estimators(rows: list[str]) -> set[str]:
    """The catalogue names a table's first column names (``DecisionTree*`` expands); the RDD API row is not spark.ml."""
    names: set[str] = set()
    for row in rows:
        first = row.split("|")[1]
        if first.strip().startswith("RDD API"):
            continue
        for token in re.findall(r"`([A-Z][A-Za-z0-9]*\*?)`", first):
            names |= {n for n in BY_NAME if n.startswith(token[:-1])} if token.endswith("*") else {token}
    return names


def test_the_catalogue_table_in_the_docs_is_generated_from_it():
    text = (DOCS / "mllib.md").read_text()
    assert markdown_table() in text, "docs/mllib.md: regenerate the catalogue table with `python -m slaq.integrations.catalogue`"


def test_the_capture_docs_tables_list_exactly_the_catalogue():
    text = (DOCS / "mllib-capture.md").read_text()
    captured = _estimators(_table_after(text, "## Captured"))
    not_captured = _estimators(_table_after(text, "## Not captured"))
    assert captured == {e.name for e in CATALOGUE if e.reports != NEVER}
    assert not_captured == {e.name for e in CATALOGUE if e.reports != ALWAYS}


def test_catalogue_answers():
    assert all(reports_loss(e.name, {}) is (e.reports == ALWAYS) for e in CATALOGUE if e.rule is None)
    assert set(training_caches()) == {"LogisticRegression", "LinearSVC", "LinearRegression", "AFTSurvivalRegression", "KMeans",
                                      "MultilayerPerceptronClassifier"}  # its stacked data, unnamed (FeedForwardTrainer)
