"""The DuckDB peer of the benchmark's fast path: ``read_ndjson`` and SQL, on one thread.

The same figures calibcli's ``reliability``, ``calibrate`` and ``perplexity`` report, computed by
a columnar engine with a native JSON reader, so the benchmark can set calibcli's CPU beside what
a compiled reader costs. One thread (``SET threads=1``) and the column types given: DuckDB
neither samples the file for a schema nor splits the work, so its CPU time is the work itself.
Bins are equal-width, each value put in the bin whose exact edges hold it (as calibcli does:
``floor(c * M)`` corrected by one comparison with each edge). Not used by calibcli.

    python bench/duckdb_sql.py reliability FILE
    python bench/duckdb_sql.py calibrate FILE
    python bench/duckdb_sql.py perplexity FILE
    python bench/duckdb_sql.py groups FILE FIELD    # calibrate --by FIELD: a GROUP BY

Prints the figures as JSON; bench/paths.py compares them with calibcli's. Needs duckdb, which
calibcli does not depend on (``pip install duckdb`` into the venv that runs the benchmark).
"""

from __future__ import annotations

import json
import math
import sys

import duckdb

BINS = 10

# Rows -> (bin, confidence, correct as 0/1). The bin of c: k = floor(c * M), moved down when c
# lies below k / M and up when it reaches (k + 1) / M, the last bin closed at 1.
_BINNED = f"""
WITH rows AS (
    SELECT confidence AS c, correct::INTEGER AS y
    FROM read_ndjson(?, columns = {{'confidence': 'DOUBLE', 'correct': 'BOOLEAN'}},
                     format = 'newline_delimited')
), guess AS (
    SELECT c, y, least(floor(c * {BINS})::INTEGER, {BINS - 1}) AS k FROM rows
), binned AS (
    SELECT c, y,
        k - (c < k / {BINS}.0)::INTEGER
          + (c >= (k + 1) / {BINS}.0 AND k < {BINS - 1})::INTEGER AS k
    FROM guess
)
"""

_BIN_TABLE = """
SELECT k, count(*) AS n, sum(c) AS sum_c, sum(y) AS sum_y, sum((c - y) * (c - y)) AS sq
FROM binned GROUP BY k ORDER BY k
"""

# The calibrate peer's extra figures: the log loss and the rank-sum AUROC (ties share the mean
# rank), both needing every row, as calibcli's do. Its rows are read once, into a table.
_EXTRA = """
WITH ranked AS (
    SELECT y, c,
        (rank() OVER (ORDER BY c)) + (count(*) OVER (PARTITION BY c) - 1) / 2.0 AS r
    FROM binned
)
SELECT
    sum(CASE WHEN y = 1 THEN -ln(c) ELSE -ln(1 - c) END) AS loss,
    sum(CASE WHEN y = 1 THEN r ELSE 0 END) AS rank_sum,
    sum(y) AS n_right,
    count(*) - sum(y) AS n_wrong
FROM ranked
"""


def calibration(path: str, *, extra: bool) -> dict:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    if extra:
        con.execute("CREATE TEMP TABLE binned AS " + _BINNED + "SELECT * FROM binned", [path])
        table = con.execute(_BIN_TABLE).fetchall()
    else:
        table = con.execute(_BINNED + _BIN_TABLE, [path]).fetchall()
    n = sum(row[1] for row in table)
    count = [0] * BINS
    sum_c = [0.0] * BINS
    sum_y = [0] * BINS
    for k, nk, sc, sy, _ in table:
        count[k], sum_c[k], sum_y[k] = nk, sc, sy
    conf = [sum_c[k] / count[k] if count[k] else 0.0 for k in range(BINS)]
    acc = [sum_y[k] / count[k] if count[k] else 0.0 for k in range(BINS)]
    gaps = [abs(conf[k] - acc[k]) for k in range(BINS) if count[k]]
    out = {
        "n": n,
        "accuracy": sum(sum_y) / n,
        "mean_confidence": math.fsum(sum_c) / n,
        "ece": math.fsum(count[k] / n * abs(conf[k] - acc[k]) for k in range(BINS)),
        "brier": math.fsum(row[4] for row in table) / n,
        "reliability": {"confidence": conf, "accuracy": acc, "count": count},
    }
    if extra:
        loss, rank_sum, n_right, n_wrong = con.execute(_EXTRA).fetchone()
        out["mce"] = max(gaps)
        out["nll"] = loss / n
        u = float(rank_sum) - n_right * (n_right + 1) / 2
        out["auroc"] = u / (n_right * n_wrong)
    return out


def perplexity(path: str) -> dict:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    n, nll, tokens = con.execute(
        "SELECT count(*), sum(nll), sum(tokens) FROM read_ndjson(?, columns = "
        "{'nll': 'DOUBLE', 'tokens': 'BIGINT'}, format = 'newline_delimited')",
        [path],
    ).fetchone()
    return {
        "sequences": n,
        "total_tokens": int(tokens),
        "total_nll": nll,
        "perplexity": math.exp(nll / tokens),
    }


# calibrate --by FIELD: each group's count, accuracy, mean confidence, ECE and Brier from one
# GROUP BY (group, bin) over the rows, then one over the groups.
_GROUPS = f"""
WITH rows AS (
    SELECT confidence AS c, correct::INTEGER AS y, "{{field}}"::VARCHAR AS g
    FROM read_ndjson(?, columns = {{{{'confidence': 'DOUBLE', 'correct': 'BOOLEAN',
                                     '{{field}}': 'VARCHAR'}}}},
                     format = 'newline_delimited')
), guess AS (
    SELECT c, y, g, least(floor(c * {BINS})::INTEGER, {BINS - 1}) AS k FROM rows
), binned AS (
    SELECT g, c, y,
        k - (c < k / {BINS}.0)::INTEGER
          + (c >= (k + 1) / {BINS}.0 AND k < {BINS - 1})::INTEGER AS k
    FROM guess
), cells AS (
    SELECT g, k, count(*) AS n, sum(c) AS sc, sum(y) AS sy, sum((c - y) * (c - y)) AS sq
    FROM binned GROUP BY g, k
)
SELECT g, sum(n) AS n, sum(sy) / sum(n) AS accuracy, sum(sc) / sum(n) AS mean_confidence,
    sum(abs(sc - sy)) / sum(n) AS ece, sum(sq) / sum(n) AS brier
FROM cells GROUP BY g ORDER BY g
"""


def groups(path: str, field: str) -> dict:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    rows = con.execute(_GROUPS.format(field=field), [path]).fetchall()
    keys = ("n", "accuracy", "mean_confidence", "ece", "brier")
    return {g: dict(zip(keys, values, strict=True)) for g, *values in rows}


def main(argv: list[str]) -> None:
    command, path = argv[0], argv[1]
    if command == "groups":
        sys.stdout.write(json.dumps(groups(path, argv[2])) + "\n")
        return
    if command == "perplexity":
        out = perplexity(path)
    else:
        out = calibration(path, extra=command == "calibrate")
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
