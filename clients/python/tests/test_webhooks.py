"""verify_webhook against vectors signed and judged by the official `standardwebhooks` npm package
(fixtures/webhook_vectors.json, made by fixtures/make_webhook_vectors.mjs)."""

from __future__ import annotations

import json
import pathlib
import unittest
from typing import Any, Dict

from workspace_api import WebhookVerificationError, sign_webhook, verify_webhook

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "webhook_vectors.json"


def load_vectors() -> Dict[str, Dict[str, Any]]:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return {vector["name"]: vector for vector in data["vectors"]}


class WebhookVectorsTest(unittest.TestCase):
    vectors = load_vectors()

    def verify(self, vector: Dict[str, Any], payload: Any = None, **overrides: Any) -> Dict[str, Any]:
        return verify_webhook(
            vector["payload"] if payload is None else payload,
            vector["headers"],
            overrides.get("secret", vector["secret"]),
            vector["tolerance_seconds"],
            now=overrides.get("now", vector["now"]),
        )

    def test_every_vector_gets_the_reference_verdict(self) -> None:
        self.assertGreaterEqual(len(self.vectors), 10)
        for name, vector in self.vectors.items():
            with self.subTest(name):
                expected = vector["expected"]
                if expected["valid"]:
                    self.assertEqual(self.verify(vector), expected["payload"])
                else:
                    with self.assertRaises(WebhookVerificationError):
                        self.verify(vector)

    def test_the_cases_the_brief_names_are_there(self) -> None:
        for name, valid in [
            ("valid", True),
            ("tampered_body", False),
            ("wrong_secret", False),
            ("old_timestamp", False),
            ("multiple_signatures_one_valid", True),
            ("multiple_signatures_rotation", True),
            ("multiple_signatures_none_valid", False),
        ]:
            self.assertEqual(self.vectors[name]["expected"]["valid"], valid, name)

    def test_bytes_and_str_payloads_verify_alike(self) -> None:
        vector = self.vectors["valid_unicode_body"]
        as_bytes = self.verify(vector, payload=vector["payload"].encode("utf-8"))
        self.assertEqual(as_bytes, self.verify(vector))
        self.assertIn("São Paulo", as_bytes["data"]["name"])

    def test_header_names_in_any_case(self) -> None:
        vector = self.vectors["valid"]
        headers = {name.title(): value for name, value in vector["headers"].items()}
        self.assertEqual(verify_webhook(vector["payload"], headers, vector["secret"], now=vector["now"]),
                         vector["expected"]["payload"])

    def test_the_tolerance_is_a_parameter(self) -> None:
        old = self.vectors["old_timestamp"]
        with self.assertRaisesRegex(WebhookVerificationError, "too old"):
            self.verify(old)
        # The same message with a wider tolerance verifies: only the timestamp was refused.
        self.assertTrue(verify_webhook(old["payload"], old["headers"], old["secret"], 400, now=old["now"]))
        # … and the valid one is refused once the clock moves past the tolerance.
        with self.assertRaisesRegex(WebhookVerificationError, "too old"):
            self.verify(self.vectors["valid"], now=self.vectors["valid"]["now"] + 301)

    def test_a_bad_secret_is_refused(self) -> None:
        with self.assertRaises(WebhookVerificationError):
            self.verify(self.vectors["valid"], secret="whsec_not base64!")

    def test_sign_webhook_matches_the_reference_signature(self) -> None:
        vector = self.vectors["valid"]
        headers = sign_webhook(vector["payload"], vector["secret"], vector["headers"]["webhook-id"],
                               int(vector["headers"]["webhook-timestamp"]))
        self.assertEqual(headers, vector["headers"])


if __name__ == "__main__":
    unittest.main()
