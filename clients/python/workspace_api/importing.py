"""Importing contacts: rows (or a CSV file) in, a report out that says what happened to every row
and names every problem by the caller's own row and CSV line. Rows go in partial batches of 100
(``POST /v2/contacts/batch/upsert`` with ``mode: partial``): one bad row never holds back the
others."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import ValidationError

if TYPE_CHECKING:
    from .client import V2Api

#: rows per request: the service's bound for a batch
CHUNK = 100

#: an import's Idempotency-Key: each request's key is it plus ":<n>" (and ".rest" for rows sent
#: again), which the service takes from 8 to 128 visible ASCII characters
IMPORT_KEY = re.compile(r"[\x21-\x7e]{6,100}\Z")


@dataclass(frozen=True)
class ImportedRow:
    """What happened to one row: ``created``, ``updated`` or ``unchanged`` with its ``contact``, or
    ``invalid`` with its ``errors`` (``{"field", "message"}``; ``field`` None: the row itself)."""

    row: int
    line: Optional[int]
    result: str
    external_id: Optional[str]
    contact: Optional[Dict[str, Any]] = None
    errors: List[Dict[str, Any]] = field(default_factory=list)
    #: problems ``errors`` leaves out (the service names the first 5 of an item)
    more_errors: int = 0


@dataclass(frozen=True)
class ImportReport:
    #: one entry per row, in row order
    rows: List[ImportedRow]

    @property
    def problems(self) -> List[ImportedRow]:
        """The invalid rows, in row order: what to fix and send again."""
        return [r for r in self.rows if r.result == "invalid"]

    @property
    def counts(self) -> Dict[str, int]:
        counts = {"created": 0, "updated": 0, "unchanged": 0, "invalid": 0}
        for r in self.rows:
            counts[r.result] += 1
        return counts


def import_contacts(
    api: "V2Api",
    rows: Sequence[Mapping[str, Any]],
    *,
    lines: Optional[Sequence[int]] = None,
    idempotency_key: Optional[str] = None,
) -> ImportReport:
    """See :meth:`V2Api.import_contacts`."""
    if idempotency_key is not None and not IMPORT_KEY.match(idempotency_key):
        raise ValueError(
            "idempotency_key must be 6 to 100 visible ASCII characters (each request's key is it plus"
            f' ":<n>"), not {idempotency_key!r}'
        )
    report: List[Optional[ImportedRow]] = [None] * len(rows)

    def line_of(row: int) -> Optional[int]:
        return lines[row] if lines is not None and row < len(lines) else None

    places: Dict[str, List[int]] = {}
    for row, item in enumerate(rows):
        if isinstance(item.get("external_id"), str):
            places.setdefault(item["external_id"], []).append(row)
    sendable: List[int] = []
    for row, item in enumerate(rows):
        at = places.get(item.get("external_id")) if isinstance(item.get("external_id"), str) else None
        if at is None or len(at) == 1:
            sendable.append(row)
            continue
        where = ", ".join(f"line {line_of(r)}" if line_of(r) is not None else f"row {r}" for r in at)
        report[row] = ImportedRow(
            row=row,
            line=line_of(row),
            result="invalid",
            external_id=item["external_id"],
            errors=[
                {"field": "external_id", "message": f"{len(at)} rows send this external_id ({where}); each may be sent once"}
            ],
        )

    # Requests to send: the rows of each chunk, and its Idempotency-Key.
    queue: List[Tuple[List[int], Optional[str]]] = [
        (sendable[start : start + CHUNK], f"{idempotency_key}:{number}" if idempotency_key is not None else None)
        for number, start in enumerate(range(0, len(sendable), CHUNK))
    ]
    while queue:
        chunk, key = queue.pop(0)
        entries: List[Tuple[int, Dict[str, Any]]]
        try:
            response = api._write(
                "POST", "/contacts/batch/upsert", {"mode": "partial", "items": [rows[r] for r in chunk]}, key
            )
            entries = list(enumerate(response.data))
        except ValidationError as error:
            # No row of the chunk was valid: the 422 names its bad items in details["items"], as many
            # as an error answer may hold (details["more_items"] counts the others). Those others are
            # all invalid too, and are sent again on their own to learn their problems.
            items = error.details.get("items")
            if not isinstance(items, list) or not items:
                raise
            entries = [(item["index"], {**item, "result": "invalid", "external_id": None}) for item in items]
            named = {item["index"] for item in items}
            rest = [row for index, row in enumerate(chunk) if index not in named]
            if rest:
                queue.insert(0, (rest, f"{key}.rest" if key is not None else None))
        for index, entry in entries:
            row = chunk[index]
            sent = rows[row].get("external_id")
            report[row] = ImportedRow(
                row=row,
                line=line_of(row),
                result=entry["result"],
                external_id=entry.get("external_id") or (sent if isinstance(sent, str) else None),
                contact=entry.get("contact"),
                errors=list(entry.get("errors") or []),
                more_errors=int(entry.get("more_errors") or 0),
            )
    return ImportReport(rows=[r for r in report if r is not None])


def read_contacts_csv(source: Any) -> Tuple[List[Dict[str, str]], List[int]]:
    """Reads CSV (text, or a file opened with ``newline=""``) into rows keyed by the header's names,
    and the line each row starts on (1 is the header). Values are trimmed, and an empty one is left
    out of its row (an import does not clear a property it has no value for); blank lines are
    skipped, and so are lines holding only spaces. A value past the header's last column is kept
    under ``column <n> (past the header)``, no property of a contact, so that the service refuses
    its row and the report names its line, rather than the value being dropped unseen. Malformed
    CSV — a quoted field left open, which would swallow the rest of the file, or anything but a comma
    or the line's end after a closing quote — is a ``ValueError`` naming the line its record starts
    on."""
    text = source if isinstance(source, str) else source.read()
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), strict=True, skipinitialspace=True)
    header: Optional[List[str]] = None
    rows: List[Dict[str, str]] = []
    lines: List[int] = []
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            if "expected after" in str(error):
                raise ValueError(
                    f"line {start}: a quoted field ends at its closing quote; only a comma or the line's end may"
                    ' follow it (a " inside a quoted field is written "")'
                ) from None
            raise ValueError(f"line {start}: {error} (is a quoted field not closed?)") from None
        if not record or (len(record) == 1 and record[0].strip() == ""):
            continue
        if header is None:
            header = _header_names(record, start)
            continue
        rows.append(
            {
                header[i] if i < len(header) else f"column {i + 1} (past the header)": value.strip()
                for i, value in enumerate(record)
                if value.strip() != ""
            }
        )
        lines.append(start)
    return rows, lines


def _header_names(record: List[str], line: int) -> List[str]:
    """The header's names, trimmed; an empty one named by its column, so that a value under it is
    reported as such. A name given twice is a ``ValueError``: one of its columns would be lost."""
    names = [name.strip() or f"column {i + 1} (no name in the header)" for i, name in enumerate(record)]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise ValueError(f"line {line}: the header names {json.dumps(name, ensure_ascii=False)} twice; each column once")
    return names


def _as_text(value: str) -> str:
    """A cell a spreadsheet would run as a formula (=, +, -, @, or a tab or carriage return first),
    led by a quote so that it is shown as text: an error CSV holds values its readers did not write."""
    return f"'{value}" if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def problems_csv(report: ImportReport) -> str:
    """A CSV of the report's problems, one line per problem: line, row, external_id, field, message."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["line", "row", "external_id", "field", "message"])
    for p in report.problems:
        external_id = _as_text(p.external_id or "")
        for e in p.errors:
            writer.writerow(
                [p.line or "", p.row, external_id, _as_text(e.get("field") or ""), _as_text(e.get("message", ""))]
            )
        if p.more_errors:
            writer.writerow([p.line or "", p.row, external_id, "", f"and {p.more_errors} more problems"])
    return out.getvalue()
