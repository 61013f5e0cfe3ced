"""Every operation of v1 and v2 through the client, against a real server (see support.py)."""

from __future__ import annotations

import concurrent.futures
import email.message
import io
import json
import math
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple

from support import ALL_SCOPES, Key, Server
from workspace_api import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    Contact,
    ContactCreate,
    ContactUpdate,
    IdempotencyKeyReusedError,
    NotFoundError,
    Page,
    PermissionDeniedError,
    RateLimitError,
    RetryEvent,
    RetryPolicy,
    ValidationError,
    WorkspaceApiClient,
    format_datetime,
    pages,
    parse_datetime,
)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class ApiTestCase(unittest.TestCase):
    server: ClassVar[Server]
    workspace_id: ClassVar[str]
    key: ClassVar[Key]
    client: ClassVar[WorkspaceApiClient]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server.get()
        cls.workspace_id = cls.server.create_workspace()
        cls.server.seed(
            cls.workspace_id,
            contacts=7,
            appointments=5,
            catalog_items=5,
            conversations=3,
            messages_per_conversation=4,
            automations=3,
        )
        cls.key = cls.server.create_key(cls.workspace_id, ALL_SCOPES)
        cls.client = cls.make_client(cls.key)

    @classmethod
    def make_client(cls, key: Key, **options: Any) -> WorkspaceApiClient:
        return WorkspaceApiClient(cls.server.base_url, key.key, **options)

    def new_contact(self) -> Contact:
        return self.client.v2.create_contact({"name": "Ana Souza", "email": f"{unique('ana')}@example.com"}).data


class ContactsTest(ApiTestCase):
    def test_v1_create_get_update_upsert_list(self) -> None:
        v1 = self.client.v1
        email = f"{unique('v1')}@example.com"
        created = v1.create_contact({"name": "Bruno Costa", "email": email, "origin": "py-test"})
        self.assertEqual(created.status, 201)
        contact = created.data
        self.assertEqual(contact["email"], email)
        self.assertEqual(contact["status"], "cold_list")
        self.assertEqual(created.location, f"/v1/contacts/{contact['id']}")
        self.assertFalse(created.idempotent_replayed)
        self.assertIsNotNone(created.idempotency_key)
        self.assertTrue(created.request_id and created.request_id.startswith("req_"))
        self.assertEqual(created.rate_limit.limit, 600)
        self.assertIsNotNone(created.rate_limit.remaining)
        self.assertIsNotNone(created.rate_limit.reset)

        got = v1.get_contact(contact["id"])
        self.assertEqual(got.status, 200)
        self.assertEqual(got.data, contact)
        self.assertIsNone(got.idempotency_key)

        updated = v1.update_contact(contact["id"], {"status": "meeting", "origin": None})
        self.assertEqual(updated.data["status"], "meeting")
        self.assertIsNone(updated.data["origin"])
        self.assertGreater(parse_datetime(updated.data["updated_at"]), parse_datetime(contact["updated_at"]))

        external_id = f"hubspot/{uuid.uuid4().hex[:8]}"  # "/" must be percent-encoded
        first = v1.upsert_contact(external_id, {"name": "Carla Lima", "phone": "+5511912345678"})
        self.assertEqual(first.status, 201)
        self.assertEqual(first.data["external_id"], external_id)
        self.assertTrue(first.location and first.location.startswith("/v1/contacts/"))
        second = v1.upsert_contact(external_id, {"status": "talking"})
        self.assertEqual(second.status, 200)
        self.assertEqual(second.data["id"], first.data["id"])
        self.assertEqual(second.data["status"], "talking")

        meeting = list(v1.iter_contacts(status="meeting"))
        self.assertIn(contact["id"], [c["id"] for c in meeting])
        self.assertTrue(all(c["status"] == "meeting" for c in meeting))
        page = v1.list_contacts(limit=1)
        self.assertIsInstance(page.data, Page)
        self.assertEqual(page.data.limit, 1)
        self.assertEqual(len(page.data), 1)

    def test_v2_create_get_update_upsert(self) -> None:
        v2 = self.client.v2
        created = v2.create_contact({"company_name": "Acme Ltda", "whatsapp": "+5511987654321"})
        self.assertEqual(created.status, 201)
        self.assertEqual(created.location, f"/v2/contacts/{created.data['id']}")
        self.assertEqual(v2.get_contact(created.data["id"]).data, created.data)
        patched = v2.update_contact(created.data["id"], {"name": "Diego Rocha"})
        self.assertEqual(patched.data["name"], "Diego Rocha")
        self.assertEqual(patched.data["company_name"], "Acme Ltda")
        external_id = f"crm:{uuid.uuid4().hex[:8]}@sales/eu"
        upserted = v2.upsert_contact(external_id, {"name": "Elena Gomes", "email": "elena@example.com"})
        self.assertEqual(upserted.status, 201)
        # The raw and the percent-encoded path address the same contact: v1 sees it too.
        self.assertEqual(self.client.v1.get_contact(upserted.data["id"]).data["external_id"], external_id)
        again = v2.upsert_contact(external_id, {"name": "Elena Gomes"})
        self.assertEqual((again.status, again.data["id"]), (200, upserted.data["id"]))
        # Found again by the caller's own id ("/" and "@" in it), as GET by id answers it.
        self.assertEqual(v2.get_contact_by_external_id(external_id).data, again.data)
        with self.assertRaises(NotFoundError):
            v2.get_contact_by_external_id(f"nobody-{uuid.uuid4().hex[:8]}")

    def test_updated_after_takes_a_datetime(self) -> None:
        before = self.new_contact()
        after = self.new_contact()
        since = parse_datetime(before["updated_at"])  # aware datetime, sent as …mmmZ
        self.assertEqual(format_datetime(since), before["updated_at"])
        ids = [c["id"] for c in self.client.v2.iter_contacts(updated_after=since)]
        self.assertNotIn(before["id"], ids)  # exclusive
        self.assertIn(after["id"], ids)
        with self.assertRaises(ValueError):
            format_datetime(datetime(2026, 1, 1))  # naive: zone unknown


class PaginationTest(ApiTestCase):
    def test_iterators_walk_every_page(self) -> None:
        for _ in range(3):
            self.new_contact()
        everything = self.client.v2.list_contacts(limit=100).data
        self.assertFalse(everything.has_more)
        self.assertIsNone(everything.next_cursor)
        self.assertGreaterEqual(len(everything), 10)

        walked = list(pages(self.client.v2.list_contacts, limit=3))
        self.assertGreaterEqual(len(walked), 4)
        self.assertTrue(all(r.data.has_more for r in walked[:-1]))
        self.assertFalse(walked[-1].data.has_more)
        self.assertEqual([c["id"] for r in walked for c in r.data], [c["id"] for c in everything])
        self.assertEqual([c["id"] for c in self.client.v2.iter_contacts(limit=3)], [c["id"] for c in everything])

        # Resume a walk at a stored cursor.
        resumed = list(self.client.v2.iter_contacts(limit=3, cursor=walked[1].data.next_cursor))
        self.assertEqual([c["id"] for c in resumed], [c["id"] for r in walked[2:] for c in r.data])

    def test_every_list_has_an_iterator(self) -> None:
        v1, v2 = self.client.v1, self.client.v2
        self.assertEqual(len(list(v1.iter_appointments(limit=2))), 5)
        appointments = list(v2.iter_appointments(limit=2))
        self.assertEqual(len(appointments), 5)
        self.assertEqual(v2.get_appointment(appointments[0]["id"]).data, appointments[0])
        self.assertEqual(len(list(v2.iter_pipeline_stages(limit=3))), 10)
        self.assertEqual(len(list(v2.iter_catalog_items(limit=2))), 5)
        self.assertEqual(len(list(v2.iter_conversations(limit=2))), 3)
        self.assertEqual(len(list(v2.iter_automations(limit=2))), 3)
        conversation = v2.list_conversations(limit=1).data.data[0]
        messages = list(v2.iter_messages(conversation["contact_id"], limit=3))
        self.assertGreaterEqual(len(messages), 4)
        self.assertTrue(all(m["contact_id"] == conversation["contact_id"] for m in messages))


class ReadsTest(ApiTestCase):
    def test_v1_appointments(self) -> None:
        page = self.client.v1.list_appointments(limit=2)
        self.assertEqual(page.data.limit, 2)
        self.assertTrue(page.data.has_more)
        first = page.data.data[0]
        self.assertEqual(self.client.v1.get_appointment(first["id"]).data, first)
        wide = self.client.v1.list_appointments(
            starts_after=datetime(2000, 1, 1, tzinfo=timezone.utc),
            starts_before=datetime.now(timezone.utc) + timedelta(days=3650),
            status=first["status"],
            updated_after="2000-01-01T00:00:00.000Z",
        )
        self.assertTrue(all(a["status"] == first["status"] for a in wide.data))

    def test_v2_workspace_stages_catalog(self) -> None:
        v2 = self.client.v2
        workspace = v2.get_workspace().data
        self.assertEqual(workspace["id"], self.workspace_id)
        self.assertEqual(workspace["status"], "active")
        stages = v2.list_pipeline_stages(updated_after="2000-01-01T00:00:00.000Z").data.data
        self.assertEqual([s["position"] for s in sorted(stages, key=lambda s: s["position"])], list(range(1, 11)))
        self.assertIn("cold_list", [s["id"] for s in stages])

        items = v2.list_catalog_items().data.data
        self.assertEqual(v2.get_catalog_item(items[0]["id"]).data, items[0])
        for kind in ("product", "service"):
            self.assertTrue(all(i["kind"] == kind for i in v2.iter_catalog_items(kind=kind)))
        inactive = list(v2.iter_catalog_items(active=False))  # sent as active=false
        self.assertTrue(all(not i["active"] for i in inactive))
        self.assertEqual(
            len(inactive) + len(list(v2.iter_catalog_items(active=True))), len(items)
        )

    def test_v2_conversations_messages_automations(self) -> None:
        v2 = self.client.v2
        conversations = v2.list_conversations().data.data
        first = conversations[0]
        by_contact = v2.list_conversations(contact_id=first["contact_id"], channel=first["channel"], status=first["status"])
        self.assertIn(first["id"], [c["id"] for c in by_contact.data])
        messages = v2.list_messages(first["contact_id"], conversation_id=first["id"], limit=100).data.data
        self.assertTrue(messages)
        self.assertTrue(all(m["conversation_id"] == first["id"] for m in messages))
        later = v2.list_messages(first["contact_id"], created_after=messages[0]["created_at"]).data.data
        self.assertNotIn(messages[0]["id"], [m["id"] for m in later])

        automations = v2.list_automations().data.data
        self.assertEqual(v2.get_automation(automations[0]["id"]).data, automations[0])
        status = automations[0]["status"]
        self.assertTrue(all(a["status"] == status for a in v2.iter_automations(status=status)))


class IdempotencyTest(ApiTestCase):
    def test_same_key_replays_the_first_answer(self) -> None:
        key = f"py-test:{uuid.uuid4()}"
        body: ContactCreate = {"name": "Felipe Martins", "email": f"{unique('felipe')}@example.com"}
        first = self.client.v2.create_contact(body, idempotency_key=key)
        again = self.client.v2.create_contact(body, idempotency_key=key)
        self.assertFalse(first.idempotent_replayed)
        self.assertTrue(again.idempotent_replayed)
        self.assertEqual((again.status, again.data, again.location), (201, first.data, first.location))
        self.assertEqual(again.idempotency_key, key)

    def test_same_key_other_body_is_409(self) -> None:
        key = f"py-test:{uuid.uuid4()}"
        self.client.v2.create_contact({"name": "Gabriela", "email": f"{unique('g')}@example.com"}, idempotency_key=key)
        with self.assertRaises(IdempotencyKeyReusedError) as caught:
            self.client.v2.create_contact({"name": "Other", "email": f"{unique('o')}@example.com"}, idempotency_key=key)
        error = caught.exception
        self.assertIsInstance(error, ConflictError)
        self.assertEqual((error.status, error.type, error.code), (409, "idempotency_error", "idempotency_key_reused"))

    def test_every_write_gets_its_own_generated_key(self) -> None:
        a = self.client.v2.create_contact({"name": "Hugo", "email": f"{unique('h')}@example.com"})
        b = self.client.v2.create_contact({"name": "Hugo", "email": f"{unique('h')}@example.com"})
        self.assertIsNotNone(a.idempotency_key)
        self.assertNotEqual(a.idempotency_key, b.idempotency_key)
        self.assertEqual(uuid.UUID(str(a.idempotency_key)).version, 4)

    def test_a_write_whose_answer_was_lost_is_retried_with_the_same_key(self) -> None:
        # The first attempt reaches the server and writes; its answer is then lost (the
        # connection drops). The retry must send the same key and get the stored answer.
        sent_keys: List[Optional[str]] = []

        class LosingFirstAnswer(urllib.request.OpenerDirector):
            def __init__(self) -> None:
                super().__init__()
                self.real = urllib.request.build_opener()

            def open(self, fullurl: Any, data: Any = None, timeout: Any = None) -> Any:
                sent_keys.append(fullurl.get_header("Idempotency-key"))
                answer = self.real.open(fullurl, data, timeout)
                if len(sent_keys) == 1:
                    answer.read()
                    answer.close()
                    raise ConnectionResetError("connection reset after the request was written")
                return answer

        retries: List[RetryEvent] = []
        client = self.make_client(
            self.key, opener=LosingFirstAnswer(), on_retry=retries.append, retry=RetryPolicy(backoff_base=0.05)
        )
        email = f"{unique('lost')}@example.com"
        response = client.v2.create_contact({"name": "Isabel", "email": email})
        self.assertEqual(response.attempts, 2)
        self.assertTrue(response.idempotent_replayed)
        self.assertEqual(len(sent_keys), 2)
        self.assertEqual(sent_keys[0], sent_keys[1])
        self.assertEqual(response.idempotency_key, sent_keys[0])
        self.assertEqual([(r.status, r.attempt) for r in retries], [(None, 1)])
        self.assertIsInstance(retries[0].error, ConnectionResetError)
        matching = [c for c in self.client.v2.iter_contacts() if c["email"] == email]
        self.assertEqual(len(matching), 1, "the write took effect once")


class ErrorsTest(ApiTestCase):
    def test_401_invalid_key(self) -> None:
        bad = WorkspaceApiClient(self.server.base_url, "wsk_notavalidkey.nope")
        with self.assertRaises(AuthenticationError) as caught:
            bad.v2.list_contacts()
        error = caught.exception
        self.assertEqual((error.status, error.type, error.code), (401, "authentication_error", "invalid_api_key"))
        self.assertTrue(error.request_id and error.request_id.startswith("req_"))
        self.assertEqual(error.request_id, error.headers["x-request-id"])
        self.assertIn("401 invalid_api_key", str(error))
        self.assertIn(error.message, str(error))
        self.assertIn(f"(request {error.request_id})", str(error))

    def test_403_missing_scope(self) -> None:
        reader = self.server.create_key(self.workspace_id, ["contacts:read"], name="reader")
        client = self.make_client(reader)
        self.assertTrue(client.v2.list_contacts(limit=1).data.data)
        with self.assertRaises(PermissionDeniedError) as caught:
            client.v2.create_contact({"name": "Nope", "email": "nope@example.com"})
        self.assertEqual(caught.exception.code, "insufficient_scope")
        self.assertEqual(caught.exception.details["required_scope"], "contacts:write")
        with self.assertRaises(PermissionDeniedError):
            client.v2.list_messages(str(uuid.uuid4()))

    def test_404_unknown_id(self) -> None:
        with self.assertRaises(NotFoundError) as caught:
            self.client.v2.get_contact(str(uuid.uuid4()))
        self.assertEqual((caught.exception.status, caught.exception.code), (404, "resource_not_found"))
        with self.assertRaises(NotFoundError):
            self.client.v2.update_contact(str(uuid.uuid4()), {"name": "x"})

    def test_422_validation(self) -> None:
        with self.assertRaises(ValidationError) as caught:
            self.client.v2.create_contact({"name": "No channel"})
        error = caught.exception
        self.assertEqual((error.status, error.type, error.code), (422, "validation_error", "validation_failed"))
        self.assertTrue(error.details["errors"])
        with self.assertRaises(ValidationError):
            self.client.v1.update_contact(self.new_contact()["id"], {"phone": "12345"})

    def test_400_limit_and_parameters(self) -> None:
        with self.assertRaises(BadRequestError) as caught:
            self.client.v2.list_contacts(limit=1000)
        error = caught.exception
        self.assertEqual((error.status, error.type, error.code), (400, "invalid_request", "invalid_query_parameter"))
        self.assertIn("100", error.message)
        self.assertEqual(error.details.get("parameter"), "limit")
        with self.assertRaises(BadRequestError) as path_error:
            self.client.v2.get_contact("not-a-uuid")
        self.assertEqual(path_error.exception.code, "invalid_path_parameter")
        with self.assertRaises(BadRequestError) as cursor_error:
            self.client.v2.list_contacts(cursor="forged")
        self.assertEqual(cursor_error.exception.code, "invalid_cursor")

    def test_errors_are_not_retried(self) -> None:
        retries: List[RetryEvent] = []
        client = self.make_client(self.key, on_retry=retries.append)
        for call in (lambda: client.v2.get_contact(str(uuid.uuid4())), lambda: client.v2.list_contacts(limit=0)):
            with self.assertRaises(ApiError):
                call()
        self.assertEqual(retries, [])


class SimulatedAnswers(urllib.request.OpenerDirector):
    """Sends requests to the real server, except those ``answer(n)`` answers itself (the n-th
    request, from 1): it returns (status, headers, body) or None. Records when each was sent."""

    def __init__(self, answer: Callable[[int], Optional[Tuple[int, Dict[str, str], Dict[str, Any]]]]) -> None:
        super().__init__()
        self.real = urllib.request.build_opener()
        self.answer = answer
        self.sent: List[float] = []
        self.lock = threading.Lock()

    def open(self, fullurl: Any, data: Any = None, timeout: Any = None) -> Any:
        with self.lock:
            self.sent.append(time.monotonic())
            n = len(self.sent)
        simulated = self.answer(n)
        if simulated is None:
            return self.real.open(fullurl, data, timeout)
        status, headers, body = simulated
        message = email.message.Message()
        for name, value in {"content-type": "application/json", **headers}.items():
            message[name] = value
        raise urllib.error.HTTPError(
            fullurl.full_url, status, "simulated", message, io.BytesIO(json.dumps(body).encode())
        )


def rate_limited(**headers: str) -> Tuple[int, Dict[str, str], Dict[str, Any]]:
    error = {"type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "simulated", "request_id": "req_x"}
    return 429, headers, {"error": error}


class RateLimitTest(ApiTestCase):
    def test_429_is_waited_out(self) -> None:
        # 20 requests per minute: a burst of 20, then one every 3 s (Retry-After: 3). One client
        # spends the burst; another, which has not seen the quota spent, meets the limit.
        limited = self.server.create_key(self.workspace_id, ["workspace:read"], name="limited", rate_limit="20/min")
        paced: List[RetryEvent] = []
        spender = self.make_client(limited, on_retry=paced.append)
        for _ in range(30):
            if spender.v2.get_workspace().rate_limit.remaining == 0:
                break
        # The spender saw RateLimit-Remaining: 0, so its next call waits for the quota's next
        # request (3 s) instead of being refused.
        started = time.monotonic()
        self.assertEqual(spender.v2.get_workspace().attempts, 1)
        self.assertGreaterEqual(time.monotonic() - started, 2)
        self.assertEqual(paced, [])
        retries: List[RetryEvent] = []
        client = self.make_client(limited, on_retry=retries.append)
        started = time.monotonic()
        response = client.v2.get_workspace()
        elapsed = time.monotonic() - started
        self.assertEqual(response.status, 200)
        self.assertEqual(response.rate_limit.limit, 20)
        self.assertEqual(len(retries), 1)
        retry = retries[0]
        self.assertEqual(retry.status, 429)
        self.assertIsInstance(retry.error, RateLimitError)
        # Retry-After: whole seconds until the next request passes (3 s minus the burst's time,
        # rounded up); the client waited that.
        self.assertIn(retry.wait, (1, 2, 3))
        self.assertEqual(getattr(retry.error, "retry_after"), retry.wait)
        self.assertGreaterEqual(elapsed, retry.wait)
        self.assertEqual(response.attempts, 2)

        # A Retry-After that ends after the deadline is not waited for: raised at once, with retry_after.
        impatient = self.make_client(limited, retry=RetryPolicy(deadline=0.5))
        started = time.monotonic()
        with self.assertRaises(RateLimitError) as caught:
            impatient.v2.get_workspace()
        self.assertLess(time.monotonic() - started, 1)
        self.assertEqual(caught.exception.code, "rate_limit_exceeded")
        self.assertGreaterEqual(caught.exception.retry_after or 0, 1)

    def test_default_deadline_is_well_above_a_minute(self) -> None:
        self.assertGreaterEqual(RetryPolicy().deadline, 120)
        self.assertGreater(RetryPolicy().max_attempts, 1)

    def test_a_429_holds_every_thread_then_releases_them_at_the_key_rate(self) -> None:
        # A key of 120 a minute (one request per 0.5 s), whose first answer is a simulated refusal.
        paced = self.server.create_key(self.workspace_id, ["workspace:read"], name="paced", rate_limit="120/min")
        refused = threading.Event()

        def answer(n: int) -> Optional[Tuple[int, Dict[str, str], Dict[str, Any]]]:
            if n != 1:
                return None
            refused.set()
            return rate_limited(**{"retry-after": "1", "ratelimit-limit": "120", "ratelimit-remaining": "0"})

        opener = SimulatedAnswers(answer)
        client = self.make_client(paced, opener=opener, retry=RetryPolicy(jitter=0))
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            first = pool.submit(client.v2.get_workspace)
            refused.wait(10)
            time.sleep(0.2)  # the client has read the 429 and holds
            # Three more calls start while the first waits: none is sent before the hold ends,
            # and the first call, refused first, is released first.
            others = [pool.submit(client.v2.get_workspace) for _ in range(3)]
            self.assertEqual(first.result().attempts, 2)
            self.assertEqual([f.result().attempts for f in others], [1, 1, 1])
        refused_at, *released = opener.sent
        self.assertEqual(len(released), 4)
        self.assertGreaterEqual(released[0] - refused_at, 0.99)
        for before, after in zip(released, released[1:]):
            self.assertGreaterEqual(after - before, 0.49, "released one per 0.5 s")
        # The key's answers report quota left and no call waits: pacing has ended, two calls in a
        # row are not sent 0.5 s apart (the interval the pacing above kept).
        client.v2.get_workspace()
        client.v2.get_workspace()
        last, after_it = opener.sent[-2:]
        self.assertLess(after_it - last, 0.49, "no longer paced")

    def test_a_429_is_retried_until_the_deadline_not_a_count(self) -> None:
        opener = SimulatedAnswers(lambda n: rate_limited(**{"retry-after": "0"}))
        client = self.make_client(self.key, opener=opener, retry=RetryPolicy(max_attempts=2, deadline=0.3, jitter=0.01))
        with self.assertRaises(RateLimitError):
            client.v2.get_workspace()
        self.assertGreater(len(opener.sent), 2)

    def test_15_parallel_writes_on_a_key_of_10_a_minute_all_succeed(self) -> None:
        # The finest quota a key can have is per minute: a burst of 10 passes, then one per 6 s, so
        # the last of the 15 is written about 30 s after the first. The only slow test here.
        workspace_id = self.server.create_workspace()
        limited = self.server.create_key(workspace_id, ["contacts:read", "contacts:write"], rate_limit="10/min")
        retries: List[RetryEvent] = []
        client = self.make_client(limited, on_retry=retries.append, retry=RetryPolicy(deadline=60))
        external_ids = [unique("burst") for _ in range(15)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=15) as pool:
            body: ContactUpdate = {"name": "Burst", "phone": "+5511912345678"}
            upserts = [pool.submit(client.v2.upsert_contact, e, body) for e in external_ids]
            statuses = [u.result().status for u in upserts]
        self.assertEqual(statuses, [201] * 15)
        refusals = [r for r in retries if r.status == 429]
        self.assertLessEqual(len(refusals), 5, "the released calls were refused again")
        listed = {c["external_id"] for c in client.v2.iter_contacts(limit=100)}
        self.assertEqual(listed, set(external_ids))


class ConfigurationTest(unittest.TestCase):
    def test_bad_settings_fail_at_construction(self) -> None:
        good = "http://127.0.0.1:1"
        refused: List[Tuple[Callable[[], object], type, str]] = [
            (lambda: WorkspaceApiClient(None, "wsk_x"), TypeError, "base_url must be a str"),  # type: ignore[arg-type]
            (lambda: WorkspaceApiClient("", "wsk_x"), ValueError, "base_url must be an http(s) origin"),
            (lambda: WorkspaceApiClient("http://127.0.0.1:3000?x=1", "wsk_x"), ValueError, "no query or fragment"),
            (lambda: WorkspaceApiClient("http://127.0.0.1:3000#f", "wsk_x"), ValueError, "no query or fragment"),
            (lambda: WorkspaceApiClient("http://u:hunter2@127.0.0.1:3000", "wsk_x"), ValueError, "must not carry credentials"),
            (lambda: WorkspaceApiClient("api.example.com", "wsk_x"), ValueError, "not 'api.example.com'"),
            (lambda: WorkspaceApiClient("ftp://api.example.com", "wsk_x"), ValueError, "http(s) origin"),
            (lambda: WorkspaceApiClient(good, 42), TypeError, "api_key must be a str"),  # type: ignore[arg-type]
            (lambda: WorkspaceApiClient(good, None), TypeError, "api_key must be a str"),  # type: ignore[arg-type]
            (lambda: WorkspaceApiClient(good, ""), ValueError, "non-empty string of visible ASCII"),
            (lambda: WorkspaceApiClient(good, "wsk_a\nX: 1"), ValueError, "visible ASCII"),
            (lambda: WorkspaceApiClient(good, "wsk_x", timeout=-1), ValueError, "timeout must be a finite number"),
            (lambda: WorkspaceApiClient(good, "wsk_x", timeout=0), ValueError, "above 0"),
            (lambda: WorkspaceApiClient(good, "wsk_x", timeout="30"), TypeError, "timeout must be a number"),  # type: ignore
            (lambda: WorkspaceApiClient(good, "wsk_x", retry=3), TypeError, "retry must be a RetryPolicy"),  # type: ignore
            (lambda: RetryPolicy(deadline=-1), ValueError, "RetryPolicy.deadline must be a finite number"),
            (lambda: RetryPolicy(deadline=math.inf), ValueError, "RetryPolicy.deadline must be a finite number"),
            (lambda: RetryPolicy(backoff_base=-0.5), ValueError, "RetryPolicy.backoff_base"),
            (lambda: RetryPolicy(max_attempts=0), ValueError, "max_attempts must be 1 or more"),
        ]
        for build, kind, message in refused:
            with self.assertRaises(kind) as caught:
                build()
            self.assertIn(message, str(caught.exception))
        # The key is never part of a message.
        with self.assertRaises(ValueError) as caught:
            WorkspaceApiClient(good, "wsk_secret\n")
        self.assertNotIn("wsk_secret", str(caught.exception))
        WorkspaceApiClient("https://api.example.com/prefix", "wsk_x", retry=RetryPolicy(deadline=0, max_attempts=1))


if __name__ == "__main__":
    unittest.main()
