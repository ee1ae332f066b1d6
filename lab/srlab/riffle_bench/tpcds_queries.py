"""TPC-DS as the benchmark runs it on Spark: DuckDB's data generator and query texts (the ``tpcds``
extension, a registry package), the translation of DuckDB's dialect to Spark SQL, and the result hash
that decides whether Riffle changed an answer. Pure functions, except :func:`generate` and
:func:`duckdb_queries` (DuckDB, files).
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# Queries not run, and why (empty when every query runs; filled from what Spark refused, never guessed).
LEFT_OUT: dict[int, str] = {}

_QUOTED_IDENTIFIER = re.compile(r'"([^"]*)"')
_ORDER_LIMIT = re.compile(r"\border\s+by\b[^;]*\blimit\s+\d+\s*;?\s*$", re.IGNORECASE | re.DOTALL)
ROW_GROUP_ROWS = 16384  # Spark splits Parquet at row groups: small ones let small splits make many map tasks
FLOAT_DIGITS = 9  # significant digits a double keeps in the hash: sums in another order differ in the last bits


def to_spark_sql(sql: str) -> str:
    """DuckDB's text of a TPC-DS query as Spark SQL: double-quoted identifiers (column aliases such as
    ``"30 days"``) become back-quoted, and the trailing semicolon goes (``spark.sql`` takes one statement)."""
    text = _QUOTED_IDENTIFIER.sub(lambda m: "`" + m.group(1).replace("`", "``") + "`", sql)
    return text.strip().rstrip(";").strip()


def ordered_result(sql: str) -> bool:
    """Whether the query's answer is a ranking (``ORDER BY ... LIMIT n`` at its end): then the order of the
    rows is part of the answer; otherwise the rows are compared as a multiset."""
    return bool(_ORDER_LIMIT.search(sql.strip()))


def canonical(value: Any) -> str:
    """One value as stable text: doubles to ``FLOAT_DIGITS`` significant digits, decimals normalized."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else f"{value:.{FLOAT_DIGITS}g}"
    if isinstance(value, decimal.Decimal):
        return format(value.normalize(), "f") if value.is_finite() else str(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return str(value)


def result_hash(rows: Iterable[Sequence[Any]], ordered: bool) -> str:
    """A short hash of a query's answer; rows in their order when ``ordered``, else sorted (a multiset)."""
    lines = ["\x1f".join(canonical(v) for v in row) for row in rows]
    if not ordered:
        lines.sort()
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\x1e")
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- DuckDB (I/O)
def _connect() -> Any:
    import duckdb
    import duckdb_extensions

    con = duckdb.connect()
    duckdb_extensions.import_extension("tpcds", con=con)  # the extension ships in a wheel: no download
    con.execute("LOAD tpcds")
    return con


def duckdb_queries() -> list[tuple[int, str]]:
    """The 99 TPC-DS queries as DuckDB's extension ships them: (number, text)."""
    con = _connect()
    try:
        return [(int(n), str(q)) for n, q in con.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY query_nr").fetchall()]
    finally:
        con.close()


def generate(root: Path, scale: float) -> Path:
    """The TPC-DS tables at ``scale`` as Parquet under ``root`` (one directory per table), generated once:
    a ``_complete`` marker says the directory is whole."""
    out = Path(root) / f"sf{scale:g}"
    if (out / "_complete").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    con = _connect()
    try:
        con.execute(f"CALL dsdgen(sf={float(scale)!r})")
        for (table,) in con.execute("SHOW TABLES").fetchall():
            con.execute(f"COPY {table} TO '{out / table}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_ROWS}, "
                        "PER_THREAD_OUTPUT true, OVERWRITE_OR_IGNORE true)")
    finally:
        con.close()
    (out / "_complete").write_text(f"{scale}\n")
    return out


def tables(root: Path) -> list[str]:
    return sorted(p.name for p in Path(root).iterdir() if p.is_dir())
