"""The transport: one request with retries, over ``urllib.request``.

What is retried, and how (the same rules as the TypeScript client, plus 5xx):

- ``429 rate_limit_exceeded`` and ``503``: after ``Retry-After`` (seconds, or an HTTP date), for
  every call of the client at once (see :class:`_Limiter`); 429 until the call's deadline
  (``RetryPolicy.deadline``, 120 s by default), 503 at most ``max_attempts`` times. A wait that
  would end after the deadline is not begun: the error is raised at once, with ``retry_after``.
- ``429 concurrency_limit_exceeded`` (until the deadline) and ``409 idempotency_key_in_use`` (at
  most ``max_attempts`` times): after ``Retry-After``, for that call only.
- ``500``, ``502``, ``504`` and network errors (no answer: refused, reset, timeout): exponential
  backoff with jitter.
- Anything else (400, 401, 403, 404, 409 idempotency_key_reused, 410, 413, 415, 422) at once.

Read-your-writes: unless built with ``read_your_writes=False``, the transport keeps the greatest
``Consistency-Position`` of the answers it got (a deployment with read replicas sends one on every
successful write) and sends it on every later request, retries included, so that a replica serves
a read only once it has applied this client's writes.

A retry is the same request: method, URL, body and ``Idempotency-Key``. Every request the client
sends is safe to repeat — a GET reads, and a write carries its key, so a write whose answer was
lost is answered on retry with the stored answer of the first (``Idempotent-Replayed: true``) and
never takes effect twice.
"""

from __future__ import annotations

import collections
import email.utils
import http.client
import json
import math
import random
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, Callable, Dict, FrozenSet, Generic, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from .errors import ApiConnectionError, ApiError, error_from_response

__all__ = [
    "Response",
    "Page",
    "RateLimit",
    "RetryPolicy",
    "RetryEvent",
    "Transport",
    "QueryValue",
    "format_datetime",
    "parse_datetime",
    "is_consistency_position",
]

T = TypeVar("T")

__version__ = "0.1.0"

#: What a query parameter may be given as; see :func:`_query_value`.
QueryValue = Union[None, str, int, bool, datetime, date, Sequence[str]]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: the form of a ``Consistency-Position``: ``1.`` and 16 lowercase hex digits (opaque otherwise)
_CONSISTENCY_POSITION = re.compile(r"1\.[0-9a-f]{16}")


def is_consistency_position(value: Any) -> bool:
    """True for a well-formed ``Consistency-Position`` (anything else an answer carries is ignored)."""
    return isinstance(value, str) and _CONSISTENCY_POSITION.fullmatch(value) is not None


def _check_consistency_position(value: Any) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"consistency_position must be a str or None, not {type(value).__name__}")
    if not is_consistency_position(value):
        raise ValueError(
            f"consistency_position must be a Consistency-Position ('1.' and 16 lowercase hex digits), not {value[:100]!r}"
        )
    return value


# ------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class RateLimit:
    """The ``RateLimit-*`` headers of an answer (``None`` when absent, e.g. ``/healthz``)."""

    #: requests per minute of the key
    limit: Optional[int]
    #: requests that would pass right now, after this one
    remaining: Optional[int]
    #: RFC 3339 instant at which the whole quota is available again
    reset: Optional[str]

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> "RateLimit":
        return cls(
            limit=_int_or_none(headers.get("ratelimit-limit")),
            remaining=_int_or_none(headers.get("ratelimit-remaining")),
            reset=headers.get("ratelimit-reset"),
        )


@dataclass(frozen=True)
class Response(Generic[T]):
    """A successful answer: ``data`` and what the headers said about it."""

    #: HTTP status (200, or 201 for a create / an upsert that created)
    status: int
    #: the ``data`` of the body (a resource, a :class:`Page`, a list of batch results)
    data: T
    #: every response header, names in lower case
    headers: Dict[str, str]
    #: ``X-Request-Id``: quote it when asking for support
    request_id: Optional[str]
    #: ``Idempotent-Replayed: true``: the stored answer of an earlier request with the same key
    idempotent_replayed: bool
    #: the ``Idempotency-Key`` sent (writes only): the one every attempt of this call used
    idempotency_key: Optional[str]
    rate_limit: RateLimit
    #: ``Location`` of a 201: the path of the created resource
    location: Optional[str]
    #: how many attempts the call took (1 when it was not retried)
    attempts: int = 1


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its items and the page envelope (``page.limit``, ``page.has_more``,
    ``page.next_cursor``). Iterating a page iterates its items."""

    data: List[T]
    limit: int
    has_more: bool
    #: pass it as ``cursor=`` (with the same filters) for the next page; ``None`` at the end
    next_cursor: Optional[str]

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


# ------------------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long the client waits before sending a request again.

    ``deadline`` is the time budget of one call, in seconds from its start: a 429 is retried
    until then, and a wait that would end after it is not
    begun (the error is raised at once, with ``retry_after``). The default of 120 s is twice the
    longest ``Retry-After`` the service sends (60 s, a key of one request per minute).
    ``max_attempts`` bounds the attempts of one call for the other retried answers (5xx, 409
    ``idempotency_key_in_use``) and network errors, the first attempt included (1 turns those
    retries off); a 429 is retried until the deadline.
    Backoff (no ``Retry-After``): ``backoff_base * 2**n`` seconds, at most ``backoff_max``, the
    second half of it random. ``jitter``: a random 0 to ``jitter`` seconds added to every wait
    before a retry and to every release from a hold.
    """

    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    deadline: float = 120.0
    jitter: float = 0.5
    #: statuses retried (after Retry-After when present, else backoff); 409 is retried only for
    #: ``idempotency_key_in_use``
    retry_statuses: FrozenSet[int] = frozenset({429, 500, 502, 503, 504})
    #: retry when no answer came (connection refused or reset, timeout)
    retry_network_errors: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise TypeError(f"RetryPolicy.max_attempts must be an int, not {type(self.max_attempts).__name__}")
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be 1 or more, not {self.max_attempts}")
        for name in ("backoff_base", "backoff_max", "deadline", "jitter"):
            _check_seconds(f"RetryPolicy.{name}", getattr(self, name), allow_zero=True)

    def backoff(self, retry: int) -> float:
        ceiling = min(self.backoff_max, self.backoff_base * (2.0**retry))
        return ceiling / 2 + random.random() * (ceiling / 2)


def _check_seconds(name: str, value: Any, *, allow_zero: bool) -> None:
    """A duration from configuration: a finite number of seconds, 0 or more (or above 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = "0 or more" if allow_zero else "above 0"
        raise ValueError(f"{name} must be a finite number of seconds {bound}, not {value!r}")


@dataclass(frozen=True)
class RetryEvent:
    """Passed to ``on_retry`` before each wait: what failed and how long the client waits."""

    method: str
    url: str
    #: the attempt that failed, from 1
    attempt: int
    #: seconds the client waits before the next attempt: ``Retry-After`` or the backoff (a held
    #: call may wait longer, for its turn)
    wait: float
    #: the status of the answer, or None for a network error
    status: Optional[int]
    #: the error the answer would have raised, or the network exception
    error: BaseException
    idempotency_key: Optional[str]


# ----------------------------------------------------------------------------------- transport


class Transport:
    """Sends requests to one service with one key. Thread-safe: the threads that share it share
    one :class:`_Limiter`, so that when one call is told to wait, they all wait."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retry: Optional[RetryPolicy] = None,
        user_agent: Optional[str] = None,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
        sleep: Callable[[float], None] = time.sleep,
        opener: Optional[urllib.request.OpenerDirector] = None,
        read_your_writes: bool = True,
    ) -> None:
        # Checked here, so a bad setting fails at construction rather than at the first call.
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be a str such as 'https://api.example.com', not {type(base_url).__name__}")
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.username is not None or parsed.password is not None:
            # Not shown: the URL carries a secret.
            raise ValueError("base_url must not carry credentials (user:password@): the API key is the only credential")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http(s) origin such as https://api.example.com, not {base_url!r}")
        # Paths are appended to it: a query or a fragment would swallow every one of them.
        if parsed.query or parsed.fragment or base_url.endswith(("?", "#")):
            raise ValueError(f"base_url must have no query or fragment, not {base_url!r}")
        if not isinstance(api_key, str):
            raise TypeError(f"api_key must be a str (a workspace API key, wsk_…), not {type(api_key).__name__}")
        # The key travels in a header: only visible ASCII can (the key itself is never shown).
        if not api_key or not all("!" <= char <= "~" for char in api_key):
            raise ValueError("api_key must be a non-empty string of visible ASCII characters")
        _check_seconds("timeout", timeout, allow_zero=False)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        for name, function in (("on_retry", on_retry), ("sleep", sleep)):
            if function is not None and not callable(function):
                raise TypeError(f"{name} must be callable, not {type(function).__name__}")
        if not isinstance(read_your_writes, bool):
            raise TypeError(f"read_your_writes must be a bool, not {type(read_your_writes).__name__}")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.user_agent = user_agent or f"workspace-api-python/{__version__}"
        self.on_retry = on_retry
        self._sleep = sleep
        self._opener = opener or urllib.request.build_opener()
        self._limiter = _Limiter(self.retry.jitter, sleep)
        self.read_your_writes = read_your_writes
        self._consistency_lock = threading.Lock()
        self._consistency_position: Optional[str] = None

    @property
    def consistency_position(self) -> Optional[str]:
        """The greatest ``Consistency-Position`` received (None when none), sent as the
        ``Consistency-Position`` header of every request. Setting it replaces it (None clears it);
        a value that is not a token raises ``TypeError`` / ``ValueError``. Always None, and setting
        it has no effect, with ``read_your_writes=False``."""
        return self._consistency_position

    @consistency_position.setter
    def consistency_position(self, value: Optional[str]) -> None:
        token = _check_consistency_position(value)
        if self.read_your_writes:
            with self._consistency_lock:
                self._consistency_position = token

    def _observe_consistency_position(self, value: Optional[str]) -> None:
        """What an answer (of any status) says: a greater valid token replaces the one kept
        (tokens of one deployment have a fixed width: the later write's is the greater string)."""
        if not self.read_your_writes or value is None or not is_consistency_position(value):
            return
        with self._consistency_lock:
            if self._consistency_position is None or value > self._consistency_position:
                self._consistency_position = value

    def __repr__(self) -> str:  # never shows the key
        return f"Transport(base_url={self.base_url!r})"

    def url(self, path: str, query: Optional[Mapping[str, QueryValue]] = None) -> str:
        encoded = encode_query(query or {})
        return f"{self.base_url}{path}" + (f"?{encoded}" if encoded else "")

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, QueryValue]] = None,
        body: Any = None,
        idempotency_key: Optional[str] = None,
    ) -> Tuple[Response[Any], Any]:
        """Sends the request, retrying per the policy; returns the response and the parsed body.
        Raises :class:`ApiError` for an error answer, :class:`ApiConnectionError` for no answer."""
        method = method.upper()
        url = self.url(path, query)
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        data: Optional[bytes] = None
        if body is not None:
            # UTF-8 JSON (RFC 8259); NaN and lone surrogates fail here rather than at the server.
            data = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if method in WRITE_METHODS:
            # One key per call, generated once: every retry below sends the same one.
            if idempotency_key is None:
                idempotency_key = str(uuid.uuid4())
            headers["Idempotency-Key"] = idempotency_key
        else:
            idempotency_key = None

        policy = self.retry
        deadline = time.monotonic() + policy.deadline
        attempt = 0
        #: retries counted against max_attempts (every one but those of a 429)
        counted = 0
        last: Optional[BaseException] = None

        def connection_error(cause: BaseException) -> ApiConnectionError:
            error = ApiConnectionError(
                f"{method} {url}: no answer after {attempt} attempt(s): {cause}",
                method=method,
                url=url,
                attempts=attempt,
            )
            error.__cause__ = cause
            return error

        while True:
            # The first attempt is sent even when the limiter holds it past the deadline: every
            # call gets one answer of its own.
            if not self._limiter.acquire(deadline) and last is not None:
                raise last
            attempt += 1
            attempt_headers = headers
            # The greatest token known when this attempt is sent (other threads may have raised it).
            token = self._consistency_position
            if token is not None and self.read_your_writes:
                attempt_headers = {**headers, "Consistency-Position": token}
            request = urllib.request.Request(url, data=data, headers=attempt_headers, method=method)
            sent_at = time.monotonic()
            try:
                status, response_headers, raw = self._send(request)
            except _NetworkError as failure:
                cause = failure.__cause__ or failure
                wait = policy.backoff(counted)
                if (
                    not policy.retry_network_errors
                    or counted + 1 >= policy.max_attempts
                    or time.monotonic() + wait > deadline
                ):
                    raise connection_error(cause) from cause
                counted += 1
                last = connection_error(cause)
                self._wait(method, url, attempt, wait, None, cause, idempotency_key)
                continue

            self._limiter.observe(status, response_headers, sent_at)
            self._observe_consistency_position(response_headers.get("consistency-position"))
            parsed = _parse_json(raw)
            if 200 <= status < 300:
                # A deletion answers 204 without a body: its data is None.
                if status == 204 and not raw:
                    parsed = {}
                if not isinstance(parsed, dict):
                    raise error_from_response(status, None, response_headers, method=method, url=url)
                return (
                    Response(
                        status=status,
                        data=parsed.get("data"),
                        headers=response_headers,
                        request_id=response_headers.get("x-request-id"),
                        idempotent_replayed=response_headers.get("idempotent-replayed", "").lower() == "true",
                        idempotency_key=idempotency_key,
                        rate_limit=RateLimit.from_headers(response_headers),
                        location=response_headers.get("location"),
                        attempts=attempt,
                    ),
                    parsed,
                )

            retry_after = retry_after_seconds(response_headers.get("retry-after"))
            error = error_from_response(
                status, parsed, response_headers, retry_after=retry_after, method=method, url=url
            )
            kind = self._retry_kind(status, error)
            if kind is None:
                raise error
            wait = policy.backoff(counted) if retry_after is None else retry_after
            # 429 is retried until the deadline; the rest at most max_attempts times.
            if status != 429 and counted + 1 >= policy.max_attempts:
                raise error
            if time.monotonic() + wait > deadline:
                raise error
            if status != 429:
                counted += 1
            last = error
            if kind in ("rate_limit", "unavailable"):
                # The whole client waits; the next acquire() releases this call in its turn.
                limit = _int_or_none(response_headers.get("ratelimit-limit")) if kind == "rate_limit" else None
                if self.on_retry is not None:
                    self.on_retry(RetryEvent(method, url, attempt, wait, status, error, idempotency_key))
                self._limiter.hold(wait, limit)
            else:
                self._wait(method, url, attempt, wait, status, error, idempotency_key)

    def _retry_kind(self, status: int, error: ApiError) -> Optional[str]:
        """How an error answer is retried: ``rate_limit`` and ``unavailable`` hold the whole
        client, ``own_wait`` only this call; None: raised at once."""
        if status == 409:
            return "own_wait" if error.code == "idempotency_key_in_use" else None
        if status not in self.retry.retry_statuses:
            return None
        if status == 429:
            # Requests in flight, not the rate: only the call refused waits.
            return "own_wait" if error.code == "concurrency_limit_exceeded" else "rate_limit"
        return "unavailable" if status == 503 else "own_wait"

    def _wait(
        self,
        method: str,
        url: str,
        attempt: int,
        wait: float,
        status: Optional[int],
        error: BaseException,
        idempotency_key: Optional[str],
    ) -> None:
        if self.on_retry is not None:
            self.on_retry(RetryEvent(method, url, attempt, wait, status, error, idempotency_key))
        self._sleep(wait + random.random() * self.retry.jitter)

    def _send(self, request: urllib.request.Request) -> Tuple[int, Dict[str, str], bytes]:
        """One attempt: (status, headers with lower-case names, body); _NetworkError when no
        complete answer came."""
        try:
            with self._opener.open(request, timeout=self.timeout) as answer:
                return answer.status, _headers(answer.headers), answer.read()
        except urllib.error.HTTPError as answer:  # a status outside 2xx: still an answer
            try:
                raw = answer.read()
            except (OSError, http.client.HTTPException) as failure:
                raise _NetworkError(str(failure)) from failure
            finally:
                answer.close()
            return answer.code, _headers(answer.headers), raw
        except (urllib.error.URLError, http.client.HTTPException, OSError) as failure:
            # URLError (refused, DNS, TLS), RemoteDisconnected / ConnectionResetError, timeouts,
            # IncompleteRead: no (complete) answer.
            raise _NetworkError(str(failure)) from failure


class _NetworkError(Exception):
    pass


class _Limiter:
    """The queue every attempt of one transport passes, so that parallel calls do not stampede.

    - A hold (:meth:`hold`): after a 429 or 503, no attempt is sent before its ``Retry-After``
      has passed.
    - Pacing: once the key's quota is spent (a 429, or an answer with ``RateLimit-Remaining: 0``),
      attempts are released one per 60/N s, N being ``RateLimit-Limit``: the quota refills one
      request per 60/N s (GCRA, docs/api-conventions.md), so each of them passes. Pacing ends
      once an answer to a request sent after the last hold reports ``RateLimit-Remaining`` above 0
      while no one waits.
    - Waiters are released in arrival order, each after a random 0 to ``jitter`` seconds, so that
      clients of other processes on the same key do not all send at the same instant. Delaying a
      paced request never costs it its turn: the quota counts from the slot, not from the send.
    """

    def __init__(self, jitter: float, sleep: Callable[[float], None]) -> None:
        self._jitter = jitter
        self._sleep = sleep
        self._condition = threading.Condition()
        self._queue: "collections.deque[object]" = collections.deque()
        self._resume_at = 0.0
        #: seconds between releases while pacing; 0 when not pacing
        self._interval = 0.0
        self._last_release = -math.inf
        self._held_at = -math.inf

    def _ready_at(self) -> float:
        return max(self._resume_at, self._last_release + self._interval if self._interval > 0 else 0.0)

    def acquire(self, deadline: float) -> bool:
        """Blocks until the caller may send (True), or until the deadline (False); False at once
        when its turn would come after the deadline."""
        with self._condition:
            now = time.monotonic()
            if not self._queue and self._ready_at() <= now:
                self._last_release = now
                return True
            if self._ready_at() + len(self._queue) * self._interval > deadline:
                return False
            me = object()
            self._queue.append(me)
            while True:
                now = time.monotonic()
                if self._queue[0] is me and self._ready_at() <= now:
                    self._queue.popleft()
                    self._last_release = now
                    self._condition.notify_all()
                    break
                if now >= deadline:
                    self._queue.remove(me)
                    self._condition.notify_all()
                    return False
                wake = min(self._ready_at(), deadline) if self._queue[0] is me else deadline
                self._condition.wait(max(0.0, wake - now))
        if self._jitter > 0:
            self._sleep(random.random() * self._jitter)
        return True

    def hold(self, seconds: float, limit_per_minute: Optional[int]) -> None:
        """Holds every caller for ``seconds``; with the key's limit per minute, paces them after it."""
        with self._condition:
            now = time.monotonic()
            self._held_at = now
            self._resume_at = max(self._resume_at, now + seconds)
            if limit_per_minute:
                self._interval = 60.0 / limit_per_minute
            self._condition.notify_all()

    def observe(self, status: int, headers: Mapping[str, str], sent_at: float) -> None:
        """What an answer says of the key's quota: starts pacing when it is spent, ends it when it refilled."""
        limit = _int_or_none(headers.get("ratelimit-limit"))
        remaining = _int_or_none(headers.get("ratelimit-remaining"))
        if not limit or remaining is None or status == 429:
            return
        with self._condition:
            if remaining == 0:
                if self._interval == 0:
                    self._last_release = max(self._last_release, time.monotonic())
                self._interval = 60.0 / limit
            elif self._interval > 0:
                self._interval = 0.0 if sent_at > self._held_at and not self._queue else 60.0 / limit
            self._condition.notify_all()


def _headers(message: Any) -> Dict[str, str]:
    return {str(name).lower(): str(value) for name, value in message.items()}


def _parse_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _int_or_none(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` as seconds: delta-seconds, or an HTTP date (RFC 9110, 10.2.3)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


# --------------------------------------------------------------------------------- query values


def format_datetime(value: Union[datetime, date, str]) -> str:
    """The API's date-time format: UTC, exactly milliseconds (``2026-11-22T06:05:43.123Z``).
    A string is sent as it is (a value read from the API can be sent back unchanged); a naive
    datetime is refused, since its zone is unknown."""
    if isinstance(value, str):
        return value
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("a naive datetime has no time zone: pass an aware one (e.g. tzinfo=timezone.utc)")
    utc = value.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_datetime(value: str) -> datetime:
    """An API date-time (``…Z``) as an aware datetime (``fromisoformat`` of Python < 3.11 refuses Z)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text)


def _query_value(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bool):  # before int: bool is an int
        return "true" if value else "false"
    if isinstance(value, (datetime, date)):
        return format_datetime(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
        return ",".join(str(item) for item in items)
    return str(value)


def encode_query(query: Mapping[str, Any]) -> str:
    pairs = [(name, text) for name, text in ((n, _query_value(v)) for n, v in query.items()) if text is not None]
    return urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)


def path_segment(value: str) -> str:
    """One path segment, percent-encoded, ``/`` included (an external id ``hubspot/42``)."""
    if not isinstance(value, str) or value == "":
        raise ValueError("a path parameter must be a non-empty string")
    return urllib.parse.quote(value, safe="")

