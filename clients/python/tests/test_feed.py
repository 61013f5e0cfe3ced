"""The events feed and its head: after=, cursors across pages, filters, tombstones, scopes."""

from __future__ import annotations

import unittest
import uuid
from typing import ClassVar, List

from support import ALL_SCOPES, Key, Server
from workspace_api import BadRequestError, Event, WorkspaceApiClient


class FeedTest(unittest.TestCase):
    server: ClassVar[Server]
    workspace_id: ClassVar[str]
    key: ClassVar[Key]
    client: ClassVar[WorkspaceApiClient]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server.get()
        cls.workspace_id = cls.server.create_workspace()
        cls.key = cls.server.create_key(cls.workspace_id, ALL_SCOPES)
        cls.client = WorkspaceApiClient(cls.server.base_url, cls.key.key)

    def test_head_then_every_change_after_it(self) -> None:
        v2 = self.client.v2
        head = v2.get_events_head()
        self.assertEqual(head.status, 200)
        position = head.data["position"]
        self.assertTrue(position.startswith("evt_"))
        self.assertTrue(head.data["taken_at"].endswith("Z"))
        self.assertEqual(list(v2.iter_events(after=position)), [])

        external_id = f"feed/{uuid.uuid4().hex[:8]}"
        contact = v2.upsert_contact(external_id, {"name": "Karina Lima", "email": "karina@example.com"}).data
        v2.update_contact(contact["id"], {"status": "talking"})
        other = v2.create_contact({"name": "Lucas", "phone": "+5511900001111"}).data
        self.server.delete_contact(contact["id"])

        events = list(v2.iter_events(after=position, resource_type="contact"))
        mine = [(e["type"], e["resource_id"]) for e in events]
        self.assertEqual(
            mine,
            [
                ("contact.created", contact["id"]),
                ("contact.updated", contact["id"]),
                ("contact.created", other["id"]),
                ("contact.deleted", contact["id"]),
            ],
        )
        # The deletion's tombstone keeps the external id; earlier events of the deleted contact
        # keep only the tombstone.
        self.assertEqual(events[-1]["data"], {"id": contact["id"], "external_id": external_id})
        self.assertEqual(events[0]["data"], {"id": contact["id"], "external_id": external_id})
        self.assertEqual(events[2]["data"]["name"], "Lucas")
        self.assertTrue(events[2]["request_id"] and events[2]["request_id"].startswith("req_"))
        self.assertIsNone(events[-1]["request_id"])  # the owner CLI deleted it

        # Page by page (one event a page): the same events; each page's last id resumes after it.
        walked: List[Event] = []
        page_count = 0
        for page in v2.event_pages(after=position, resource_type=["contact"], limit=1):
            page_count += 1
            walked.extend(page.events)
            if page.events:
                self.assertEqual(page.last_event_id, page.events[-1]["id"])
                rest = [e["id"] for e in v2.iter_events(after=page.last_event_id, resource_type="contact")]
                self.assertEqual(rest, [e["id"] for e in events[len(walked):]])
        self.assertGreaterEqual(page_count, 4)
        self.assertEqual([e["id"] for e in walked], [e["id"] for e in events])

        # Filters: several types at once (a list is sent comma-separated), one resource.
        typed = list(v2.iter_events(after=position, type=["contact.deleted", "contact.updated"]))
        self.assertEqual([e["type"] for e in typed], ["contact.updated", "contact.deleted"])
        one = list(v2.iter_events(after=position, resource_id=other["id"]))
        self.assertEqual([e["type"] for e in one], ["contact.created"])

        # Nothing after the last event; the head has moved to (at least) it.
        self.assertEqual(list(v2.iter_events(after=events[-1]["id"], resource_type="contact")), [])
        self.assertNotEqual(v2.get_events_head().data["position"], position)

    def test_the_feed_from_its_start_and_with_a_cursor(self) -> None:
        v2 = self.client.v2
        for n in range(3):
            v2.create_contact({"name": f"Start {n}", "email": f"start{n}.{uuid.uuid4().hex[:6]}@example.com"})
        first = v2.list_events(limit=2)
        self.assertEqual(len(first.data), 2)
        self.assertTrue(first.data.has_more)
        everything = [e["id"] for e in v2.iter_events()]
        with_cursor = [e["id"] for page in v2.event_pages(cursor=first.data.next_cursor) for e in page.events]
        self.assertEqual([e["id"] for e in first.data] + with_cursor, everything)
        with self.assertRaises(ValueError):
            v2.list_events(after=everything[0], cursor=first.data.next_cursor)

    def test_a_foreign_position_is_refused(self) -> None:
        other_workspace = self.server.create_workspace()
        other_key = self.server.create_key(other_workspace, ["events:read", "contacts:read"])
        foreign = WorkspaceApiClient(self.server.base_url, other_key.key).v2.get_events_head().data["position"]
        with self.assertRaises(BadRequestError) as caught:
            list(self.client.v2.iter_events(after=foreign))
        self.assertEqual(caught.exception.code, "invalid_query_parameter")


if __name__ == "__main__":
    unittest.main()
