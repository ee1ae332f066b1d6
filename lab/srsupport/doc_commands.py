"""The shell commands the documentation tells a user to run: README.md, docs/*.md (fenced ``bash``/``sh``
blocks) and the examples' docstrings (indented command lines), each as one line with its backslash
continuations joined and its trailing comment dropped, exactly as a user would paste it."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(?:bash|sh|shell|console)\n(.*?)^```", re.S | re.M)
COMMAND_WORDS = ("mkdir", "riffle-merger", "riffle", "slaq", "slaq-riffle", "spark-submit", "spark-sql", "pyspark")


@dataclass(frozen=True)
class Documented:
    source: str  # the file, relative to the repository
    command: str


def commands_in(text: str) -> list[str]:
    """The commands of one block of shell text: continuations joined, comments and blank lines dropped."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        line = re.sub(r"\s+#.*$", "", line.strip()) if not line.strip().startswith("#") else ""
        line = re.sub(r"\s{2,}", " ", line)
        if line:
            out.append(line)
    return out


def documented_commands(repo: Path = REPO) -> list[Documented]:
    """Every command in the README, docs/ and the examples' docstrings, in document order."""
    found = []
    for doc in [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]:
        for block in FENCE.findall(doc.read_text()):
            found += [Documented(str(doc.relative_to(repo)), c) for c in commands_in(block)]
    for example in sorted((repo / "examples").glob("*.py")):
        docstring = ast.get_docstring(ast.parse(example.read_text()), clean=False) or ""
        indented = "\n".join(line for line in docstring.splitlines() if line.startswith("    "))
        found += [Documented(str(example.relative_to(repo)), c) for c in commands_in(indented) if c.split()[0] in COMMAND_WORDS]
    return found
