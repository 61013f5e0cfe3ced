"""The transport: one request with retries, over ``urllib.request``.

What is retried, and how (the same rules as the TypeScript client, plus 5xx):

- ``429 rate_limit_exceeded``, ``503 service_unavailable`` and ``409 idempotency_key_in_use``:
  after ``Retry-After`` (seconds, or an HTTP date). A ``Retry-After`` beyond
  ``RetryPolicy.max_retry_after`` (120 s by default) is not waited for: the error is raised at once,
  with ``retry_after``, so the program decides. Without the header: exponential backoff.
- ``500``, ``502``, ``504`` and network errors (no answer: refused, reset, timeout): exponential
  backoff with jitter.
- Anything else (400, 401, 403, 404, 409 idempotency_key_reused, 410, 413, 415, 422) at once.

A retry is the same request: method, URL, body and ``Idempotency-Key``. Every request the client
sends is safe to repeat — a GET reads, and a write carries its key, so a write whose answer was
lost is answered on retry with the stored answer of the first (``Idempotent-Replayed: true``) and
never takes effect twice.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import random
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
]

T = TypeVar("T")

__version__ = "0.1.0"

#: What a query parameter may be given as; see :func:`_query_value`.
QueryValue = Union[None, str, int, bool, datetime, date, Sequence[str]]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


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

    ``max_attempts`` bounds the attempts of one call, the first included (1 turns retrying off).
    ``max_retry_after`` is the longest ``Retry-After`` honoured (seconds): a key of N requests per
    minute can ask for up to 60/N seconds, so the default of 120 s waits out any quota of one
    request per minute or more; a longer ask raises :class:`~workspace_api.RateLimitError` at once.
    Backoff (no ``Retry-After``): ``backoff_base * 2**n`` seconds, at most ``backoff_max``, the
    second half of it random (jitter).
    """

    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 120.0
    #: statuses retried (after Retry-After when present, else backoff); 409 is retried only for
    #: ``idempotency_key_in_use``
    retry_statuses: FrozenSet[int] = frozenset({429, 500, 502, 503, 504})
    #: retry when no answer came (connection refused or reset, timeout)
    retry_network_errors: bool = True

    def backoff(self, retry: int) -> float:
        ceiling = min(self.backoff_max, self.backoff_base * (2.0**retry))
        return ceiling / 2 + random.random() * (ceiling / 2)


@dataclass(frozen=True)
class RetryEvent:
    """Passed to ``on_retry`` before each wait: what failed and how long the client waits."""

    method: str
    url: str
    #: the attempt that failed, from 1
    attempt: int
    #: seconds the client sleeps before the next attempt
    wait: float
    #: the status of the answer, or None for a network error
    status: Optional[int]
    #: the error the answer would have raised, or the network exception
    error: BaseException
    idempotency_key: Optional[str]


# ----------------------------------------------------------------------------------- transport


class Transport:
    """Sends requests to one service with one key. Thread-safe: it keeps no state between calls."""

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
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http(s) origin such as https://api.example.com, not {base_url!r}")
        if not api_key:
            raise ValueError("api_key is empty")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.user_agent = user_agent or f"workspace-api-python/{__version__}"
        self.on_retry = on_retry
        self._sleep = sleep
        self._opener = opener or urllib.request.build_opener()

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
        attempt = 0
        while True:
            attempt += 1
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                status, response_headers, raw = self._send(request)
            except _NetworkError as failure:
                cause = failure.__cause__ or failure
                if not policy.retry_network_errors or attempt >= policy.max_attempts:
                    raise ApiConnectionError(
                        f"{method} {url}: no answer after {attempt} attempt(s): {cause}",
                        method=method,
                        url=url,
                        attempts=attempt,
                    ) from cause
                self._wait(method, url, attempt, policy.backoff(attempt - 1), None, cause, idempotency_key)
                continue

            parsed = _parse_json(raw)
            if 200 <= status < 300:
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
            wait = self._retry_wait(status, error, retry_after, attempt)
            if wait is None:
                raise error
            self._wait(method, url, attempt, wait, status, error, idempotency_key)

    def _retry_wait(self, status: int, error: ApiError, retry_after: Optional[float], attempt: int) -> Optional[float]:
        """Seconds to wait before retrying after this error answer, or None to raise it."""
        policy = self.retry
        if attempt >= policy.max_attempts:
            return None
        retryable = status in policy.retry_statuses or (status == 409 and error.code == "idempotency_key_in_use")
        if not retryable:
            return None
        if retry_after is None:
            return policy.backoff(attempt - 1)
        if retry_after > policy.max_retry_after:
            return None
        return retry_after

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
        self._sleep(wait)

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

