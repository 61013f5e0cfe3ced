"""The client against the published interface descriptions (docs/openapi/v1.json and v2.json):
every operation has a method, and every list method takes exactly the query parameters its
operation declares — so a parameter or an operation added to the server fails here until the
client has it."""

from __future__ import annotations

import inspect
import json
import pathlib
import unittest
from typing import Any, Dict, List, Set, Tuple

from workspace_api import V1Api, V2Api

DOCS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "openapi"

# (method, path without the version) → client method name, the same on V1Api and V2Api.
METHODS: Dict[Tuple[str, str], str] = {
    ("GET", "/contacts"): "list_contacts",
    ("POST", "/contacts"): "create_contact",
    ("GET", "/contacts/{id}"): "get_contact",
    ("PATCH", "/contacts/{id}"): "update_contact",
    ("PUT", "/contacts/external/{external_id}"): "upsert_contact",
    ("GET", "/contacts/external/{external_id}"): "get_contact_by_external_id",
    ("POST", "/contacts/batch/upsert"): "batch_upsert_contacts",
    ("DELETE", "/contacts/{id}"): "delete_contact",
    ("DELETE", "/contacts/external/{external_id}"): "delete_contact_by_external_id",
    ("POST", "/contacts/batch/delete"): "batch_delete_contacts",
    ("GET", "/appointments"): "list_appointments",
    ("GET", "/appointments/{id}"): "get_appointment",
    ("GET", "/workspace"): "get_workspace",
    ("GET", "/pipeline/stages"): "list_pipeline_stages",
    ("GET", "/catalog/items"): "list_catalog_items",
    ("GET", "/catalog/items/{id}"): "get_catalog_item",
    ("GET", "/conversations"): "list_conversations",
    ("GET", "/conversations/{contact_id}/messages"): "list_messages",
    ("GET", "/automations"): "list_automations",
    ("GET", "/automations/{id}"): "get_automation",
    ("GET", "/events"): "list_events",
    ("GET", "/events/head"): "get_events_head",
}


def operations(version: str) -> List[Tuple[str, str, Dict[str, Any]]]:
    document = json.loads((DOCS / f"{version}.json").read_text(encoding="utf-8"))
    components = document.get("components", {}).get("parameters", {})
    found = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            params = []
            for param in [*item.get("parameters", []), *operation.get("parameters", [])]:
                if "$ref" in param:
                    param = components[param["$ref"].rsplit("/", 1)[1]]
                params.append(param)
            found.append((method.upper(), path[len(f"/{version}"):], {"params": params}))
    return found


def signature_params(function: Any) -> Tuple[Set[str], Set[str]]:
    positional, keyword = set(), set()
    for name, param in inspect.signature(function).parameters.items():
        if name == "self":
            continue
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            keyword.add(name)
        elif param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            positional.add(name)
    return positional, keyword


class OpenApiCoverageTest(unittest.TestCase):
    def check(self, version: str, api: type) -> int:
        checked = 0
        for method, path, operation in operations(version):
            with self.subTest(f"{method} /{version}{path}"):
                self.assertIn((method, path), METHODS, "an operation of the document has no client method")
                function = getattr(api, METHODS[(method, path)], None)
                self.assertIsNotNone(function, f"{api.__name__} lacks {METHODS[(method, path)]}")
                positional, keyword = signature_params(function)
                declared_path = {p["name"] for p in operation["params"] if p["in"] == "path"}
                declared_query = {p["name"] for p in operation["params"] if p["in"] == "query"}
                self.assertEqual(declared_path, positional & declared_path)
                self.assertLessEqual(declared_path, positional)
                if method == "GET":
                    self.assertEqual(keyword, declared_query, "query parameters")
                    iterator = getattr(api, METHODS[(method, path)].replace("list_", "iter_"), None)
                    if METHODS[(method, path)].startswith("list_"):
                        self.assertIsNotNone(iterator, "every list has an iter_ method")
                        _, iter_keyword = signature_params(iterator)
                        self.assertLessEqual(declared_query - {"cursor"}, iter_keyword)
                else:
                    self.assertIn("idempotency_key", keyword, "writes take idempotency_key=")
                checked += 1
        return checked

    def test_v1(self) -> None:
        self.assertEqual(self.check("v1", V1Api), 7)

    def test_v2(self) -> None:
        self.assertEqual(self.check("v2", V2Api), 22)


if __name__ == "__main__":
    unittest.main()
