"""Read-your-writes: the greatest ``Consistency-Position`` of the answers is kept and sent on every later
request (retries included), garbage and older tokens are ignored, ``consistency_position`` can be read,
set and handed to another client, and ``read_your_writes=False`` turns it all off.

A fake API (``http.server`` in a thread, on a free port of 127.0.0.1) plays a deployment with read
replicas: these tests need no real server, ``BASE_URL`` or not.
"""

from __future__ import annotations

import concurrent.futures
import http.server
import json
import threading
import time
import unittest
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Optional

from workspace_api import RetryPolicy, WorkspaceApiClient, is_consistency_position

WRITES = {"POST", "PUT", "PATCH", "DELETE"}


def token(n: int) -> str:
    """The token of the n-th write, as the service formats them: ``1.`` and 16 lowercase hex digits."""
    return f"1.{n:016x}"


@dataclass
class Answer:
    """One scripted answer; without one, writes get the next token and reads none."""

    status: int = 200
    #: the Consistency-Position header of the answer; "auto": the next token for a 2xx write; None: none
    token: Optional[str] = "auto"
    headers: Dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    #: the Consistency-Position header the request carried (None: none)
    token: Optional[str]


class Fake:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: List[Seen] = []
        self.script: List[Answer] = []
        self.writes = 0

    def next_answer(self) -> Answer:
        with self.lock:
            return self.script.pop(0) if self.script else Answer()

    def next_token(self) -> str:
        with self.lock:
            self.writes += 1
            return token(self.writes)


class FakeApi(http.server.BaseHTTPRequestHandler):
    fake: ClassVar[Fake]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        path = urllib.parse.urlsplit(self.path).path
        with self.fake.lock:
            self.fake.seen.append(Seen(self.command, path, self.headers.get("Consistency-Position")))
        answer = self.fake.next_answer()
        given = answer.token
        if given == "auto":
            given = self.fake.next_token() if self.command in WRITES and answer.status < 300 else None
        if answer.status >= 300:
            body: Dict[str, Any] = {
                "error": {"type": "api_error", "code": "service_unavailable", "message": "simulated", "request_id": "r"}
            }
        elif self.command == "GET" and path == "/v2/contacts":
            body = {"data": [], "page": {"limit": 10, "has_more": False, "next_cursor": None}}
        else:
            body = {"data": {"id": "c1", "name": "Ana"}}
        raw = json.dumps(body).encode()
        if answer.delay:
            time.sleep(answer.delay)
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if given is not None:
            self.send_header("Consistency-Position", given)
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer


class ConsistencyTest(unittest.TestCase):
    server: ClassVar[http.server.ThreadingHTTPServer]
    thread: ClassVar[threading.Thread]
    base_url: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
        cls.server.daemon_threads = True
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.base_url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.shutdown()
        cls.server.server_close()
        cls.thread.join(timeout=10)

    def setUp(self) -> None:
        self.fake = Fake()
        FakeApi.fake = self.fake

    def client(self, **options: Any) -> WorkspaceApiClient:
        # No proxy from the environment: the fake is on 127.0.0.1.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        retry = RetryPolicy(jitter=0, backoff_base=0.01)
        return WorkspaceApiClient(self.base_url, "wsk_test.key", retry=retry, opener=opener, **options)

    def sent(self) -> List[Optional[str]]:
        return [seen.token for seen in self.fake.seen]

    @staticmethod
    def list(client: WorkspaceApiClient) -> None:
        client.v2.list_contacts(limit=10)

    @staticmethod
    def create(client: WorkspaceApiClient) -> None:
        client.v2.create_contact({"name": "Ana", "email": "ana@example.com"})

    @staticmethod
    def update(client: WorkspaceApiClient) -> None:
        client.v2.update_contact("c1", {"name": "Ana Souza"})

    @staticmethod
    def delete(client: WorkspaceApiClient) -> None:
        client.v2.delete_contact("c1")

    def test_the_greatest_token_received_is_sent_on_every_later_request(self) -> None:
        self.fake.writes = 0x16B3740
        client = self.client()
        self.assertIsNone(client.consistency_position)
        self.list(client)  # nothing received yet: no header
        self.create(client)  # …41
        self.list(client)
        self.update(client)  # …42
        self.fake.script.append(Answer(token=token(0x16B3700)))  # an older write's token, answered late
        self.create(client)
        self.list(client)
        self.delete(client)  # …43
        self.list(client)
        self.assertEqual(
            self.sent(),
            [
                None,
                None,
                token(0x16B3741),
                token(0x16B3741),
                token(0x16B3742),
                token(0x16B3742),  # the older token did not lower it
                token(0x16B3742),
                token(0x16B3743),
            ],
        )
        self.assertEqual(client.consistency_position, "1.00000000016b3743")

    def test_malformed_tokens_in_answers_are_ignored(self) -> None:
        self.fake.writes = 10
        client = self.client()
        self.create(client)  # token(11)
        garbage = [
            "garbage",
            "2.0000000000000000",  # another format compares greater: still ignored
            "1.FFFFFFFFFFFFFFFF",  # upper case
            "1.ffffffffffffffff0",  # 17 digits
            "1.fffffffffffffff",  # 15 digits
            "1.ffffffffffffffff, 1.ffffffffffffffff",
            "",
        ]
        for value in garbage:
            self.fake.script.append(Answer(token=value))
            self.create(client)
        self.list(client)
        self.assertEqual(client.consistency_position, token(11))
        self.assertEqual(self.sent(), [None] + [token(11)] * len(garbage) + [token(11)])

    def test_threads_at_once_keep_the_greatest_token(self) -> None:
        client = self.client()
        # Answers arrive in another order than their tokens: the greatest comes back first.
        self.fake.script.extend(
            [
                Answer(token=token(0x300), delay=0.05),
                Answer(token=token(0x500), delay=0.0),
                Answer(token=token(0x100), delay=0.15),
                Answer(token=token(0x200), delay=0.1),
            ]
        )
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for future in [pool.submit(self.create, client) for _ in range(4)]:
                future.result()
        self.assertEqual(client.consistency_position, token(0x500))
        self.list(client)
        self.assertEqual(self.fake.seen[-1].token, token(0x500))

    def test_a_retried_request_carries_the_token(self) -> None:
        self.fake.writes = 0x20
        client = self.client()
        self.create(client)  # token(0x21)
        # A read answered 503 once (Retry-After: 0), then 200: both attempts carry the token.
        self.fake.script.append(Answer(status=503, headers={"Retry-After": "0"}))
        self.assertEqual(client.v2.list_contacts(limit=10).attempts, 2)
        # A write answered 503 once: its retry carries the token, and the retry's token is kept.
        self.fake.script.append(Answer(status=503, headers={"Retry-After": "0"}))
        self.assertEqual(client.v2.update_contact("c1", {"name": "Ana Souza"}).attempts, 2)
        self.list(client)
        self.assertEqual(
            [f"{seen.method} {seen.token}" for seen in self.fake.seen],
            [
                "POST None",
                f"GET {token(0x21)}",
                f"GET {token(0x21)}",  # the retry
                f"PATCH {token(0x21)}",
                f"PATCH {token(0x21)}",  # the retry
                f"GET {token(0x22)}",
            ],
        )

    def test_consistency_position_can_be_read_set_cleared_and_handed_over(self) -> None:
        self.fake.writes = 0x16B3747
        writer = self.client()
        self.create(writer)
        self.assertEqual(writer.consistency_position, "1.00000000016b3748")

        # Another client (another process, say) reads after the writer's writes.
        reader = self.client()
        reader.consistency_position = writer.consistency_position
        self.assertEqual(reader.consistency_position, "1.00000000016b3748")
        self.list(reader)
        self.assertEqual(self.fake.seen[-1].token, "1.00000000016b3748")

        # Setting replaces; None clears.
        reader.consistency_position = token(5)
        self.list(reader)
        self.assertEqual(self.fake.seen[-1].token, token(5))
        reader.consistency_position = None
        self.assertIsNone(reader.consistency_position)
        self.list(reader)
        self.assertIsNone(self.fake.seen[-1].token)

        # A malformed value raises and changes nothing.
        for bad in ["", "garbage", "1.00000000016B3748", "1.00000000016b374", "1.00000000016b3748\n"]:
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(ValueError, "consistency_position must be a Consistency-Position"):
                    writer.consistency_position = bad
        for wrong in [42, b"1.00000000016b3748"]:
            with self.subTest(wrong=wrong):
                with self.assertRaisesRegex(TypeError, "consistency_position must be a str or None"):
                    writer.consistency_position = wrong  # type: ignore[assignment]
        self.assertEqual(writer.consistency_position, "1.00000000016b3748")
        self.assertTrue(is_consistency_position("1.00000000016b3748"))
        self.assertFalse(is_consistency_position("1.00000000016b3748\n"))

    def test_read_your_writes_false_neither_keeps_nor_sends_tokens(self) -> None:
        self.fake.writes = 0x40
        client = self.client(read_your_writes=False)
        self.create(client)
        self.list(client)
        self.update(client)
        self.list(client)
        self.assertEqual(self.sent(), [None, None, None, None])
        self.assertIsNone(client.consistency_position)
        client.consistency_position = token(7)  # checked, but not kept
        self.assertIsNone(client.consistency_position)
        self.list(client)
        self.assertIsNone(self.fake.seen[-1].token)
        with self.assertRaises(ValueError):
            client.consistency_position = "garbage"

        # True is the default, and can be said.
        on = self.client(read_your_writes=True)
        self.create(on)
        self.list(on)
        self.assertEqual(self.fake.seen[-1].token, token(0x43))

    def test_read_your_writes_is_checked_when_the_client_is_built(self) -> None:
        for value in ["false", 0, 1, None]:
            with self.subTest(value=value):
                with self.assertRaisesRegex(TypeError, "read_your_writes must be a bool"):
                    self.client(read_your_writes=value)


if __name__ == "__main__":
    unittest.main()
