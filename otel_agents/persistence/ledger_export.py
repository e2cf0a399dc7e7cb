"""Exporting ledger records as JSON lines or CSV (``billing export``, the web UI's ledger.csv)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import IO, Iterable

import orjson

from otel_agents.persistence.ledger_read import CSV_COLUMNS, CSV_NESTED

# (column, field, key in it) for each column: a nested field's key, or None for a plain field.
_CELLS = tuple(
    next(((column, field, column[len(field) + 1 :]) for field in CSV_NESTED if column.startswith(f"{field}_")),
         (column, column, None))
    for column in CSV_COLUMNS
)


def export_jsonl(records: Iterable[dict], out: IO[bytes]) -> int:
    count = 0
    for record in records:
        out.write(orjson.dumps(record) + b"\n")
        count += 1
    return count


def cost_text(cost: float | int | Decimal) -> str:
    """A cost as plain decimal text: at most 12 decimals (the runtime rounds each cost to 12), trailing
    zeros dropped, no exponent (``0.00000034``, not ``3.4e-07``; ``0.3``, not ``0.30000000000000004``)."""
    text = f"{Decimal(repr(cost)) if isinstance(cost, float) else Decimal(cost):.12f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


# A text cell starting with one of these is a formula to a spreadsheet (OWASP's "CSV injection"):
# agent names, models and errors come from whoever sends traces, so such text is written after a `'`.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: object, money: bool = False) -> object:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    if money and type(value) in (float, int):
        return cost_text(value)  # a spreadsheet or a script reads 0.00000034, not 3.4e-07
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value  # text only: a number (a negative difference) is written as it is
    return value


def export_csv(records: Iterable[dict], out: IO[str]) -> int:
    """CSV with a fixed header (objects flattened); empty cells for absent or null fields, costs in
    plain decimals."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    count = 0
    for record in records:
        row = []
        for column, field, key in _CELLS:
            if key is None:
                row.append(_csv_cell(record.get(column), column.endswith("cost_usd")))
            elif field == "tokens" and record.get("type") == "tool":
                row.append("")
            else:
                nested = record.get(field)
                row.append(_csv_cell(nested.get(key), column.endswith("cost_usd")) if isinstance(nested, dict) else "")
        if any(isinstance(cell, str) and "\r" in cell for cell in row):
            _write_quoting_cr(row, out)
        else:
            writer.writerow(row)
        count += 1
    return count


def _write_quoting_cr(row: list, out: IO[str]) -> None:
    """The row with its cells holding a CR quoted: csv quotes a cell holding a character of the line end,
    and a lone CR is none of ``\n``'s, so a reader split the row there (an error text from a provider)."""
    line = io.StringIO()
    csv.writer(line, lineterminator="\r\n").writerow(row)
    out.write(line.getvalue()[:-2] + "\n")
