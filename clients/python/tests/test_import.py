"""import_contacts and read_contacts_csv: a CSV with bad rows is imported in partial batches, every
problem comes back at its row and line, and only the valid rows are written."""

from __future__ import annotations

import unittest
import uuid
from typing import ClassVar

from support import Server
from workspace_api import WorkspaceApiClient, problems_csv, read_contacts_csv


class ImportTest(unittest.TestCase):
    server: ClassVar[Server]
    writer: ClassVar[WorkspaceApiClient]
    reader: ClassVar[WorkspaceApiClient]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server.get()
        workspace_id = cls.server.create_workspace()
        cls.writer = WorkspaceApiClient(cls.server.base_url, cls.server.create_key(workspace_id, ["contacts:write"]).key)
        cls.reader = WorkspaceApiClient(cls.server.base_url, cls.server.create_key(workspace_id, ["contacts:read"]).key)

    def test_a_csv_with_bad_rows_maps_every_problem_to_its_line(self) -> None:
        r = uuid.uuid4().hex[:8]
        text = "\n".join(
            [
                "external_id,name,email,phone,status",  # 1
                f"imp-{r}-1,Ana,ana.{r}@example.com,+5511912345678,",  # 2
                f"imp-{r}-2,Bruno,not-an-email,,",  # 3: bad e-mail
                f'imp-{r}-3,"Carla, Lima",carla.{r}@example.com,,talking',  # 4
                f",No Id,noid.{r}@example.com,,",  # 5: no external_id
                f"imp-{r}-1,Ana again,ana2.{r}@example.com,,",  # 6: repeats line 2
                f'imp-{r}-6,"Dora',  # 7
                f'Two Lines",dora.{r}@example.com,,',  # 8
                "",  # 9
                f"imp-{r}-7,Eva,eva.{r}@example.com,+12,",  # 10: bad phone
                f"imp-{r}-8,Fabio,fabio.{r}@example.com,,unknown_stage",  # 11: bad status
                f"imp-{r}-9,Gil,gil.{r}@example.com,,lost",  # 12
            ]
        )
        rows, lines = read_contacts_csv(text)
        self.assertEqual(lines, [2, 3, 4, 5, 6, 7, 10, 11, 12])
        report = self.writer.v2.import_contacts(rows, lines=lines)
        self.assertEqual(
            [(p.line, p.row, p.external_id, [e["field"] for e in p.errors]) for p in report.problems],
            [
                (2, 0, f"imp-{r}-1", ["external_id"]),
                (3, 1, f"imp-{r}-2", ["email"]),
                (5, 3, None, ["external_id"]),
                (6, 4, f"imp-{r}-1", ["external_id"]),
                (10, 6, f"imp-{r}-7", ["phone"]),
                (11, 7, f"imp-{r}-8", ["status"]),
            ],
        )
        self.assertIn("2 rows send this external_id (line 2, line 6)", report.problems[0].errors[0]["message"])
        self.assertEqual(report.counts, {"created": 3, "updated": 0, "unchanged": 0, "invalid": 6})
        written = self.reader.v2.list_contacts(external_id=[f"imp-{r}-{n}" for n in (1, 2, 3, 6, 7, 8, 9)])
        self.assertEqual(sorted(c["name"] or "" for c in written.data.data), ["Carla, Lima", "Dora\nTwo Lines", "Gil"])

        errors = problems_csv(report).splitlines()
        self.assertEqual(errors[0], "line,row,external_id,field,message")
        self.assertEqual(len(errors), 1 + 6)
        self.assertTrue(errors[2].startswith(f"3,1,imp-{r}-2,email,"), errors[2])

    def test_201_rows_three_requests_and_a_chunk_without_a_valid_row(self) -> None:
        r = uuid.uuid4().hex[:8]
        rows = [{"external_id": f"bulk-{r}-{i}", "name": f"Bulk {i}"} for i in range(201)]
        rows[120] = {"external_id": f"bulk-{r}-120", "email": "broken"}
        rows[200] = {"external_id": f"bulk-{r}-200", "status": "nope"}  # alone in the third request: a 422
        report = self.writer.v2.import_contacts(rows, idempotency_key=f"import-{r}")
        self.assertEqual(
            [(p.row, p.line, p.external_id, p.errors[0]["field"]) for p in report.problems],
            [(120, None, f"bulk-{r}-120", "email"), (200, None, f"bulk-{r}-200", "status")],
        )
        self.assertEqual(report.counts, {"created": 199, "updated": 0, "unchanged": 0, "invalid": 2})
        again = self.writer.v2.import_contacts(rows)
        self.assertEqual(again.counts, {"created": 0, "updated": 0, "unchanged": 199, "invalid": 2})

    def test_every_row_of_a_chunk_invalid_each_with_its_problems(self) -> None:
        r = uuid.uuid4().hex[:8]
        rows = [{"external_id": f"nt-{r}-{i}", "name": f"N {i}", "notes": "vip"} for i in range(130)]
        report = self.writer.v2.import_contacts(rows)
        self.assertEqual(len(report.rows), 130)
        self.assertEqual([p.row for p in report.problems], list(range(130)))
        self.assertTrue(all([e["field"] for e in p.errors] == ["notes"] for p in report.problems))
        self.assertEqual(report.problems[5].external_id, f"nt-{r}-5")

    def test_csv_values_trimmed_and_an_open_quote_refused(self) -> None:
        rows, lines = read_contacts_csv('external_id,email\n a , " ana@example.com "\nb,z\n')
        self.assertEqual(rows, [{"external_id": "a", "email": "ana@example.com"}, {"external_id": "b", "email": "z"}])
        self.assertEqual(lines, [2, 3])
        with self.assertRaisesRegex(ValueError, "line 2"):
            read_contacts_csv('external_id,name\nun-1,"Ana,ana@example.com\nun-2,Bo\n')
