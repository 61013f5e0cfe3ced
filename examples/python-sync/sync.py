#!/usr/bin/env python3
"""Keeps a local SQLite copy of a workspace's contacts up to date, deletions included, and can be
stopped (Ctrl-C, SIGTERM, or killed outright) and started again at any moment without missing or
double-applying a change. The Python twin of examples/sync-contacts (TypeScript).

    WORKSPACE_API_KEY=wsk_… python3 examples/python-sync/sync.py \\
        --base-url http://127.0.0.1:3000 --db ./contacts.sqlite [--once | --watch] [--interval 5]

It follows docs/sync.md exactly:
  1. head: take the feed's current position (GET /v2/events/head);
  2. list: walk GET /v2/contacts to its end, storing every contact (and the cursor, to resume);
  3. follow: apply the feed after that position — contact.created/updated store the event's data,
     contact.deleted removes the contact — up to its end (--once) or forever (--watch).
  A 410 events_expired (the position is older than the feed keeps) starts again at 1, and the new
  walk drops the contacts it does not return.
Every page is applied in one SQLite transaction together with the new checkpoint (phase, position,
list cursor), so the file always holds one consistent state.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import sqlite3
import sys
import threading
from typing import Any, Callable, Dict, Iterable, Optional

try:
    import workspace_api  # noqa: F401  (installed: pip install ./clients/python)
except ImportError:  # run from a checkout: use the client beside this example
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "clients" / "python"))

from workspace_api import (  # noqa: E402
    ApiError,
    BadRequestError,
    Contact,
    Event,
    EventsExpiredError,
    V2Api,
    WorkspaceApiClient,
    pages,
    parse_datetime,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS contacts (
    id          TEXT PRIMARY KEY,
    external_id TEXT,
    updated_at  TEXT NOT NULL,
    data        TEXT NOT NULL          -- the contact exactly as GET /v2/contacts/{id} returns it
);
CREATE INDEX IF NOT EXISTS contacts_external_id ON contacts (external_id);
CREATE TABLE IF NOT EXISTS sync_state (
    name  TEXT PRIMARY KEY,            -- phase, position, list_cursor, resync
    value TEXT
);
CREATE TABLE IF NOT EXISTS seen (      -- during a resynchronization: ids the list walk returned
    id TEXT PRIMARY KEY
);
"""

Log = Callable[[str], None]


class Stopped(Exception):
    """Raised between two pages once a stop was asked for: the last page is committed."""


def _check(stop: Optional[threading.Event]) -> None:
    if stop is not None and stop.is_set():
        raise Stopped


class Mirror:
    """The local copy and its checkpoint, in one SQLite file (one process per file)."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)  # transactions are explicit below
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    # ----------------------------------------------------------------------------- checkpoint

    def get(self, name: str) -> Optional[str]:
        row = self.db.execute("SELECT value FROM sync_state WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def set(self, name: str, value: Optional[str]) -> None:
        self.db.execute(
            "INSERT INTO sync_state (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    @property
    def phase(self) -> str:
        return self.get("phase") or "head"

    # ---------------------------------------------------------------------------------- data

    def upsert(self, contact: Contact) -> bool:
        """Stores the contact unless the copy holds this version or a later one."""
        row = self.db.execute("SELECT updated_at FROM contacts WHERE id = ?", (contact["id"],)).fetchone()
        if row is not None and parse_datetime(row[0]) >= parse_datetime(contact["updated_at"]):
            return False
        self.db.execute(
            "INSERT INTO contacts (id, external_id, updated_at, data) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET external_id = excluded.external_id, "
            "updated_at = excluded.updated_at, data = excluded.data",
            (contact["id"], contact["external_id"], contact["updated_at"], json.dumps(contact, ensure_ascii=False)),
        )
        return True

    def delete(self, contact_id: str) -> bool:
        return self.db.execute("DELETE FROM contacts WHERE id = ?", (contact_id,)).rowcount > 0

    def apply(self, event: Event) -> bool:
        """Applies one contact event; True when it changed the copy."""
        if event["resource_type"] != "contact":
            return False
        if event["type"] == "contact.deleted":
            # Deletions are final (ids are never reused): a replayed one is harmless.
            return self.delete(event["resource_id"])
        if event["type"] in ("contact.created", "contact.updated"):
            data: Any = event["data"]
            if "updated_at" not in data:
                # The contact was deleted since: its earlier events keep only the tombstone. Its
                # contact.deleted follows in the feed.
                return False
            return self.upsert(data)
        return False

    def contacts(self) -> Dict[str, Contact]:
        return {row[0]: json.loads(row[1]) for row in self.db.execute("SELECT id, data FROM contacts")}

    def transaction(self) -> "_Transaction":
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def sync_once(
    v2: V2Api,
    mirror: Mirror,
    *,
    page_size: int = 100,
    log: Log = lambda line: None,
    stop: Optional[threading.Event] = None,
) -> None:
    """Brings the copy up to date with the current end of the feed. Raises :class:`Stopped`
    after the page in hand is committed once ``stop`` is set."""
    if mirror.phase == "head":
        # 1. The position first: every change from now on is in the feed after it.
        position = v2.get_events_head().data["position"]
        with mirror.transaction():
            mirror.set("position", position)
            mirror.set("list_cursor", None)
            mirror.set("phase", "list")
        log(f"head: {position}")

    if mirror.phase == "list":
        # 2. Every contact, page by page; a restart resumes at the stored cursor.
        try:
            _walk_contacts(v2, mirror, page_size, log, stop)
        except BadRequestError as error:
            # A stored cursor the server no longer accepts (one of a retired form): walk again.
            if error.code != "invalid_cursor" or mirror.get("list_cursor") is None:
                raise
            log("stored list cursor refused (invalid_cursor): walking the list again from the start")
            with mirror.transaction():
                mirror.set("list_cursor", None)
                mirror.db.execute("DELETE FROM seen")
            _walk_contacts(v2, mirror, page_size, log, stop)
        with mirror.transaction():
            if mirror.get("resync") == "1":
                dropped = mirror.db.execute("DELETE FROM contacts WHERE id NOT IN (SELECT id FROM seen)").rowcount
                mirror.db.execute("DELETE FROM seen")
                mirror.set("resync", None)
                log(f"resync: dropped {dropped} contacts deleted meanwhile")
            mirror.set("list_cursor", None)
            mirror.set("phase", "follow")

    # 3. The feed after the position, to its current end.
    try:
        for page in v2.event_pages(after=mirror.get("position"), resource_type="contact", limit=page_size):
            with mirror.transaction():
                applied = sum(1 for event in page.events if mirror.apply(event))
                mirror.set("position", page.last_event_id)
            if page.events:
                log(f"follow: {len(page.events)} events, {applied} applied")
            _check(stop)
    except EventsExpiredError:
        # Events after our position were purged (deletions among them): walk the whole list
        # again and drop what it does not return.
        log("position older than the feed retention (410 events_expired): resynchronizing")
        with mirror.transaction():
            mirror.set("phase", "head")
            mirror.set("position", None)
            mirror.set("resync", "1")
            mirror.db.execute("DELETE FROM seen")
        sync_once(v2, mirror, page_size=page_size, log=log, stop=stop)


def _walk_contacts(v2: V2Api, mirror: Mirror, page_size: int, log: Log, stop: Optional[threading.Event]) -> None:
    for response in pages(v2.list_contacts, limit=page_size, cursor=mirror.get("list_cursor")):
        page = response.data
        with mirror.transaction():
            stored = sum(1 for contact in page if mirror.upsert(contact))
            if mirror.get("resync") == "1":
                mirror.db.executemany("INSERT OR IGNORE INTO seen (id) VALUES (?)", [(c["id"],) for c in page])
            mirror.set("list_cursor", page.next_cursor)
        log(f"list: {len(page)} contacts, {stored} stored")
        _check(stop)


def run(
    base_url: str,
    api_key: str,
    db_path: str,
    *,
    watch: bool = False,
    interval: float = 5.0,
    page_size: int = 100,
    stop: Optional[threading.Event] = None,
    log: Log = lambda line: None,
) -> None:
    """--once: one sync; --watch: sync, wait ``interval`` seconds, again, until ``stop`` is set."""
    client = WorkspaceApiClient(base_url, api_key)
    mirror = Mirror(db_path)
    stop = stop or threading.Event()
    try:
        while True:
            sync_once(client.v2, mirror, page_size=page_size, log=log, stop=stop)
            if not watch or stop.wait(interval):
                return
    finally:
        mirror.close()


def main(argv: Optional[Iterable[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Mirror a workspace's contacts into SQLite (docs/sync.md).")
    parser.add_argument("--base-url", required=True, help="origin of the API")
    parser.add_argument("--key", help="API key (default: $WORKSPACE_API_KEY, which keeps it out of ps)")
    parser.add_argument("--db", default="./contacts.sqlite", help="the SQLite file (default ./contacts.sqlite)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="bring the copy up to date and exit (default)")
    mode.add_argument("--watch", action="store_true", help="then keep following the feed until SIGTERM/SIGINT")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between reads in --watch")
    parser.add_argument("--page-size", type=int, default=100, help="items per request, 1-100")
    args = parser.parse_args(list(argv) if argv is not None else None)
    api_key = args.key or os.environ.get("WORKSPACE_API_KEY")
    if not api_key:
        parser.error("--key or WORKSPACE_API_KEY is required")

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if stop.is_set():  # a second signal: leave at once (the file is a checkpoint either way)
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def log(line: str) -> None:
        print(f"[python-sync] {line}", flush=True)

    try:
        run(
            args.base_url,
            api_key,
            args.db,
            watch=args.watch,
            interval=args.interval,
            page_size=args.page_size,
            stop=stop,
            log=log,
        )
    except (Stopped, KeyboardInterrupt):
        log("stopped")
        return 0
    except ApiError as error:
        print(f"[python-sync] failed: {error}", file=sys.stderr)
        return 1
    log("stopped" if stop.is_set() else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
