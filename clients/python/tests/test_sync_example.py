"""examples/python-sync end to end: a first sync, changes of every kind (API creates, updates,
upserts; owner deletions), a second sync — and the copy equals the server's contacts each time."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import pathlib
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from types import ModuleType
from typing import Any, ClassVar, Dict, List

from support import Key, Server
from workspace_api import WorkspaceApiClient

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "examples" / "python-sync" / "sync.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("python_sync_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SyncExampleTest(unittest.TestCase):
    server: ClassVar[Server]
    reader: ClassVar[Key]
    writer: ClassVar[WorkspaceApiClient]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server.get()
        workspace_id = cls.server.create_workspace()
        cls.server.seed(workspace_id, contacts=23)
        # The example needs only contacts:read and events:read; the test writes with another key.
        cls.reader = cls.server.create_key(workspace_id, ["contacts:read", "events:read"], name="sync")
        writer = cls.server.create_key(workspace_id, ["contacts:read", "contacts:write"], name="writer")
        cls.writer = WorkspaceApiClient(cls.server.base_url, writer.key)

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="py-sync-")
        self.db = os.path.join(self.tmp.name, "contacts.sqlite")

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def run_example(self, *extra: str) -> str:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), "--base-url", self.server.base_url, "--db", self.db, "--page-size", "7", *extra],
            env={**os.environ, "WORKSPACE_API_KEY": self.reader.key},
            capture_output=True,
            timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return done.stdout.decode()

    def copy(self) -> Dict[str, Any]:
        with contextlib.closing(sqlite3.connect(self.db)) as db:
            return {row[0]: json.loads(row[1]) for row in db.execute("SELECT id, data FROM contacts")}

    def server_contacts(self) -> Dict[str, Any]:
        return {c["id"]: c for c in self.writer.v2.iter_contacts()}

    def test_first_sync_then_changes_then_again(self) -> None:
        output = self.run_example("--once")
        self.assertIn("head: evt_", output)
        self.assertIn("list: 7 contacts", output)  # several pages of 7
        self.assertIn("up to date", output)
        self.assertEqual(self.copy(), self.server_contacts())
        self.assertGreaterEqual(len(self.copy()), 23)

        v2 = self.writer.v2
        contacts = list(self.server_contacts().values())
        created = v2.create_contact({"name": "New One", "email": f"new.{uuid.uuid4().hex[:6]}@example.com"}).data
        v2.update_contact(contacts[0]["id"], {"status": "customer_confirmed"})
        v2.upsert_contact(f"crm/{uuid.uuid4().hex[:6]}", {"name": "Upserted", "phone": "+5511955554444"})
        doomed: List[str] = [contacts[1]["id"], contacts[2]["id"], created["id"]]
        v2.update_contact(contacts[1]["id"], {"name": "Changed, then deleted"})
        for contact_id in doomed:
            self.server.delete_contact(contact_id)

        output = self.run_example("--once")
        self.assertIn("follow:", output)
        copy = self.copy()
        self.assertEqual(copy, self.server_contacts())
        self.assertEqual(copy[contacts[0]["id"]]["status"], "customer_confirmed")
        for contact_id in doomed:
            self.assertNotIn(contact_id, copy)

        # Nothing new: a third run changes nothing.
        self.run_example("--once")
        self.assertEqual(self.copy(), copy)

    def test_watch_follows_changes_and_stops_on_sigterm(self) -> None:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLE), "--base-url", self.server.base_url, "--db", self.db, "--watch",
             "--interval", "0.2"],
            env={**os.environ, "WORKSPACE_API_KEY": self.reader.key},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            created = None
            while time.monotonic() < deadline:
                copy = self.copy() if os.path.exists(self.db) else {}
                if created is None and copy:
                    created = self.writer.v2.create_contact({"name": "Watched", "phone": "+5511933332222"}).data
                if created is not None and created["id"] in copy:
                    break
                time.sleep(0.2)
            self.assertIsNotNone(created)
            assert created is not None
            self.assertIn(created["id"], self.copy(), "--watch applied a change made after its first sync")
            process.send_signal(signal.SIGTERM)
            stdout, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        self.assertEqual(process.returncode, 0, stderr.decode())
        self.assertIn("stopped", stdout.decode())
        self.assertEqual(self.copy(), self.server_contacts())

    def test_an_interrupted_list_walk_resumes_at_its_cursor(self) -> None:
        sync = load_example()
        client = WorkspaceApiClient(self.server.base_url, self.reader.key)
        mirror = sync.Mirror(self.db)
        # Stop the walk after two pages, as a crash would (the checkpoint is per page).
        pages_seen: List[str] = []

        def log(line: str) -> None:
            pages_seen.append(line)
            if line.startswith("list:") and len(pages_seen) == 3:  # head, page 1, page 2
                raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            sync.sync_once(client.v2, mirror, page_size=5, log=log)
        self.assertEqual(mirror.phase, "list")
        self.assertIsNotNone(mirror.get("list_cursor"))
        self.assertEqual(len(mirror.contacts()), 10)
        mirror.close()

        lines: List[str] = []
        mirror = sync.Mirror(self.db)
        sync.sync_once(client.v2, mirror, page_size=5, log=lines.append)
        self.assertFalse(any(line.startswith("head:") for line in lines), "resumed, not restarted")
        self.assertEqual(mirror.phase, "follow")
        self.assertEqual(mirror.contacts(), self.server_contacts())
        mirror.close()


if __name__ == "__main__":
    unittest.main()
