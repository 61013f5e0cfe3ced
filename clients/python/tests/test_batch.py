"""Batch upsert: POST /v2/contacts/batch/upsert, 1–100 items a request, chunked by the client.

The endpoint is being added to the server; these tests are written to its description:
200 ``{"data": [{"result": "created"|"updated"|"unchanged", "contact": Contact}]}`` in input
order, 422 with ``error.details.items`` (each bad item's ``index`` and problems) when any item is
invalid.
"""

from __future__ import annotations

import unittest
import uuid
from typing import ClassVar, List

from support import Key, Server
from workspace_api import BatchUpsertItem, NotFoundError, RepeatedExternalIdsError, ValidationError, WorkspaceApiClient


class BatchUpsertTest(unittest.TestCase):
    server: ClassVar[Server]
    key: ClassVar[Key]
    client: ClassVar[WorkspaceApiClient]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server.get()
        workspace_id = cls.server.create_workspace()
        cls.key = cls.server.create_key(workspace_id, ["contacts:read", "contacts:write"])
        cls.client = WorkspaceApiClient(cls.server.base_url, cls.key.key)

    def items(self, count: int) -> List[BatchUpsertItem]:
        run = uuid.uuid4().hex[:8]
        return [
            {"external_id": f"batch/{run}/{n}", "name": f"Batch {n}", "email": f"b{n}.{run}@example.com"}
            for n in range(count)
        ]

    def test_250_items_go_in_3_requests_and_come_back_in_order(self) -> None:
        items = self.items(250)
        result = self.client.v2.batch_upsert_contacts(items)
        self.assertEqual(len(result.responses), 3)
        self.assertEqual([len(r.data) for r in result.responses], [100, 100, 50])
        keys = [r.idempotency_key for r in result.responses]
        self.assertEqual(len(set(keys)), 3, "each chunk has its own Idempotency-Key")
        self.assertTrue(all(r.status == 200 for r in result.responses))
        self.assertEqual(len(result), 250)
        self.assertEqual([r["contact"]["external_id"] for r in result], [i["external_id"] for i in items])
        self.assertEqual(result.count("created"), 250)

        # The server agrees: every contact is there.
        stored = {c["external_id"]: c for c in self.client.v2.iter_contacts()}
        self.assertTrue(all(i["external_id"] in stored for i in items))

        # Again, one changed: updated, the others unchanged.
        items[120] = {**items[120], "status": "meeting"}
        again = self.client.v2.batch_upsert_contacts(items)
        self.assertEqual(again.count("unchanged"), 249)
        self.assertEqual(again.results[120]["result"], "updated")
        self.assertEqual(again.results[120]["contact"]["status"], "meeting")

    def test_chunk_keys_from_a_run_key_replay(self) -> None:
        items = self.items(30)
        run_key = f"run-{uuid.uuid4()}"
        first = self.client.v2.batch_upsert_contacts(items, chunk_size=10, idempotency_key=run_key)
        self.assertEqual([r.idempotency_key for r in first.responses], [f"{run_key}:{n}" for n in range(3)])
        replay = self.client.v2.batch_upsert_contacts(items, chunk_size=10, idempotency_key=run_key)
        self.assertTrue(all(r.idempotent_replayed for r in replay.responses))
        self.assertEqual(replay.results, first.results)

    def test_an_invalid_item_is_422_with_its_index(self) -> None:
        items = self.items(150)
        items[130] = {**items[130], "email": "not an e-mail"}
        with self.assertRaises(ValidationError) as caught:
            self.client.v2.batch_upsert_contacts(items)
        error = caught.exception
        self.assertEqual((error.status, error.code), (422, "validation_failed"))
        self.assertEqual(error.batch_offset, 100)
        self.assertEqual(len(error.batch_results or []), 100, "the first chunk was written")
        bad = error.details["items"]
        self.assertEqual([item["index"] + (error.batch_offset or 0) for item in bad], [130])

    def test_repeated_external_ids_are_all_named_with_every_place_before_anything_is_sent(self) -> None:
        items = self.items(6)
        for n, source in ((2, 0), (4, 0), (5, 1)):
            items[n] = {**items[n], "external_id": items[source]["external_id"]}
        before = self.client.v2.list_contacts(limit=100).data
        with self.assertRaises(RepeatedExternalIdsError) as caught:
            self.client.v2.batch_upsert_contacts(items)
        self.assertIsInstance(caught.exception, ValueError)
        self.assertEqual(
            caught.exception.repeated,
            {items[0]["external_id"]: [0, 2, 4], items[1]["external_id"]: [1, 5]},
        )
        self.assertEqual(self.client.v2.list_contacts(limit=100).data, before, "nothing was written")

    def test_nothing_to_send_sends_nothing(self) -> None:
        result = self.client.v2.batch_upsert_contacts([])
        self.assertEqual((result.results, result.responses), ([], []))
        with self.assertRaises(ValueError):
            self.client.v2.batch_upsert_contacts(self.items(1), chunk_size=101)


if __name__ == "__main__":
    unittest.main()


class DeleteTest(unittest.TestCase):
    """Deletions: DELETE /v2/contacts/{id}, by external id, and POST /v2/contacts/batch/delete,
    chunked by the client, with a key that may only write."""

    server: ClassVar[Server]
    client: ClassVar[WorkspaceApiClient]
    writer: ClassVar[WorkspaceApiClient]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server.get()
        workspace_id = cls.server.create_workspace()
        cls.client = WorkspaceApiClient(
            cls.server.base_url, cls.server.create_key(workspace_id, ["contacts:read", "contacts:write"]).key
        )
        cls.writer = WorkspaceApiClient(cls.server.base_url, cls.server.create_key(workspace_id, ["contacts:write"]).key)

    def test_one_by_id_and_by_external_id_then_not_found(self) -> None:
        run = uuid.uuid4().hex[:8]
        first = self.client.v2.upsert_contact(f"crm/{run}/1", {"name": "One"}).data
        self.client.v2.upsert_contact(f"crm/{run}/2", {"name": "Two"})
        deleted = self.writer.v2.delete_contact(first["id"], idempotency_key=f"del-{run}")
        self.assertEqual(deleted.status, 204)
        self.assertIsNone(deleted.data)
        replay = self.writer.v2.delete_contact(first["id"], idempotency_key=f"del-{run}")
        self.assertTrue(replay.idempotent_replayed)
        self.assertEqual(self.writer.v2.delete_contact_by_external_id(f"crm/{run}/2").status, 204)
        with self.assertRaises(NotFoundError):
            self.writer.v2.delete_contact(first["id"])
        with self.assertRaises(NotFoundError):
            self.client.v2.get_contact_by_external_id(f"crm/{run}/2")

    def test_150_values_go_in_2_requests_and_come_back_in_order(self) -> None:
        items = BatchUpsertTest.items(self, 150)  # type: ignore[arg-type]
        made = self.client.v2.batch_upsert_contacts(items)
        ids = [r["contact"]["id"] for r in made.results[:60]]
        external_ids = [i["external_id"] for i in items[60:]] + ["never-there"]
        results = self.writer.v2.batch_delete_contacts(ids=ids, external_ids=external_ids)
        self.assertEqual([r["result"] for r in results], ["deleted"] * 150 + ["not_found"])
        self.assertEqual([r["id"] for r in results[:60]], ids)
        self.assertEqual([r["external_id"] for r in results[60:]], external_ids)
        left = [c for c in self.client.v2.iter_contacts() if c["external_id"] in {i["external_id"] for i in items}]
        self.assertEqual(left, [])
        with self.assertRaisesRegex(ValueError, "each value may be sent once"):
            self.writer.v2.batch_delete_contacts(ids=[ids[0], ids[0].upper()])


class LookupTest(unittest.TestCase):
    """GET /v2/contacts?email=&phone=&external_id=: one value or a list, with a read-only key."""

    def test_lookups_by_email_phone_and_external_id(self) -> None:
        server = Server.get()
        workspace_id = server.create_workspace()
        writer = WorkspaceApiClient(server.base_url, server.create_key(workspace_id, ["contacts:write"]).key)
        reader = WorkspaceApiClient(server.base_url, server.create_key(workspace_id, ["contacts:read"]).key)
        run = uuid.uuid4().hex[:8]
        made = writer.v2.batch_upsert_contacts(
            [
                {"external_id": f"look/{run}/{n}", "email": f"Look{n}.{run}@Example.com", "phone": f"+5511955{n:06d}"}
                for n in range(5)
            ]
        )
        ids = [r["contact"]["id"] for r in made]
        by_email = reader.v2.list_contacts(email=[f"look1.{run}@example.com", f"LOOK3.{run}@EXAMPLE.COM"])
        self.assertEqual(sorted(c["id"] for c in by_email.data.data), sorted([ids[1], ids[3]]))
        by_phone = reader.v2.list_contacts(phone="+5511955000002")
        self.assertEqual([c["id"] for c in by_phone.data.data], [ids[2]])
        by_external = list(reader.v2.iter_contacts(external_id=[f"look/{run}/{n}" for n in (0, 4)], limit=1))
        self.assertEqual(sorted(c["id"] for c in by_external), sorted([ids[0], ids[4]]))
