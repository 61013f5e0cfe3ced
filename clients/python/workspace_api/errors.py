"""Exceptions of the client.

Every error answer of the API (any status outside 2xx) raises an :class:`ApiError` subclass chosen
by status (and, for a few, by ``error.code``), carrying the fields of the error body::

    {"error": {"type", "code", "message", "request_id", "details"?}}

A request that never got an answer (connection refused, reset, timeout) after the retries raises
:class:`ApiConnectionError`. A webhook that fails verification raises
:class:`WebhookVerificationError`. All three derive from :class:`WorkspaceApiException`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Type

__all__ = [
    "WorkspaceApiException",
    "ApiError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "IdempotencyKeyReusedError",
    "IdempotencyKeyInUseError",
    "GoneError",
    "EventsExpiredError",
    "PayloadTooLargeError",
    "UnsupportedMediaTypeError",
    "ValidationError",
    "RateLimitError",
    "ServerError",
    "ServiceUnavailableError",
    "ApiConnectionError",
    "WebhookVerificationError",
    "error_from_response",
]


class WorkspaceApiException(Exception):
    """Root of every exception this package raises."""


class ApiError(WorkspaceApiException):
    """An error answer of the API.

    Attributes:
        status: the HTTP status.
        type: ``error.type`` — ``invalid_request``, ``authentication_error``, ``permission_error``,
            ``not_found``, ``idempotency_error``, ``validation_error``, ``rate_limit_error``,
            ``api_error``.
        code: ``error.code``, stable and machine-readable (``resource_not_found``, …).
        message: ``error.message``, safe to show.
        request_id: ``error.request_id`` (= the ``X-Request-Id`` header): quote it to support.
        details: ``error.details`` (``errors`` of a 422, ``parameter`` of a 400,
            ``required_scope`` of a 403, ``items`` of a batch 422…), ``{}`` when absent.
        retry_after: the ``Retry-After`` header in seconds, when the answer had one.
        headers: the response headers, names in lower case.
        method, url: the request that got this answer.
        batch_offset, batch_results: set by ``batch_upsert_contacts`` when a chunk fails — the
            index (in the caller's items) of the failed chunk's first item, and the results of the
            chunks written before it.
    """

    status: int
    type: str
    code: str
    message: str
    request_id: Optional[str]
    details: Dict[str, Any]
    retry_after: Optional[float]
    headers: Dict[str, str]
    method: Optional[str]
    url: Optional[str]
    batch_offset: Optional[int]
    batch_results: Optional[List[Any]]

    def __init__(
        self,
        status: int,
        type: str,
        code: str,
        message: str,
        request_id: Optional[str] = None,
        details: Optional[Mapping[str, Any]] = None,
        *,
        retry_after: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
        method: Optional[str] = None,
        url: Optional[str] = None,
    ) -> None:
        self.status = status
        self.type = type
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details = dict(details or {})
        self.retry_after = retry_after
        self.headers = dict(headers or {})
        self.method = method
        self.url = url
        self.batch_offset = None
        self.batch_results = None
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.status} {self.code}: {self.message}"
        if self.request_id:
            text += f" (request {self.request_id})"
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, type={self.type!r}, code={self.code!r}, "
            f"message={self.message!r}, request_id={self.request_id!r})"
        )

    def __reduce__(self) -> Any:  # keep the fields when pickled (multiprocessing, logging queues)
        return (
            _rebuild,
            (type(self), self.status, self.type, self.code, self.message, self.request_id, self.details),
        )


def _rebuild(
    cls: Type[ApiError], status: int, type: str, code: str, message: str, request_id: Optional[str], details: Any
) -> ApiError:
    return cls(status, type, code, message, request_id, details)


class BadRequestError(ApiError):
    """400: a bad query or path parameter, cursor, JSON body, header or Idempotency-Key."""


class AuthenticationError(ApiError):
    """401 invalid_api_key: any problem with the key (missing, malformed, unknown, revoked, expired)."""


class PermissionDeniedError(ApiError):
    """403: ``insufficient_scope`` (``details.required_scope``) or ``workspace_suspended``."""


class NotFoundError(ApiError):
    """404: ``resource_not_found`` (also another workspace's id) or ``route_not_found``."""


class ConflictError(ApiError):
    """409."""


class IdempotencyKeyReusedError(ConflictError):
    """409 idempotency_key_reused: the key was used before with a different request."""


class IdempotencyKeyInUseError(ConflictError):
    """409 idempotency_key_in_use: the first request with this key is still running (retried)."""


class GoneError(ApiError):
    """410."""


class EventsExpiredError(GoneError):
    """410 events_expired: the feed position is older than retention kept — resynchronize."""


class PayloadTooLargeError(ApiError):
    """413 payload_too_large."""


class UnsupportedMediaTypeError(ApiError):
    """415 unsupported_media_type."""


class ValidationError(ApiError):
    """422 validation_failed: ``details.errors`` lists ``{field, message}``; a batch's ``details.items``."""


class RateLimitError(ApiError):
    """429 rate_limit_exceeded that outlasted the retries, or asked for a wait beyond the cap."""


class ServerError(ApiError):
    """5xx."""


class ServiceUnavailableError(ServerError):
    """503 service_unavailable."""


class ApiConnectionError(WorkspaceApiException):
    """No answer (connection refused or reset, timeout, TLS failure) after every attempt. The
    underlying exception is ``__cause__``; ``attempts`` says how many were made."""

    def __init__(self, message: str, *, method: str, url: str, attempts: int) -> None:
        super().__init__(message)
        self.method = method
        self.url = url
        self.attempts = attempts


class WebhookVerificationError(WorkspaceApiException):
    """A webhook whose headers, signature or timestamp do not verify."""


_BY_CODE: Dict[str, Type[ApiError]] = {
    "idempotency_key_reused": IdempotencyKeyReusedError,
    "idempotency_key_in_use": IdempotencyKeyInUseError,
    "events_expired": EventsExpiredError,
}

_BY_STATUS: Dict[int, Type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: ValidationError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_class(status: int, code: str) -> Type[ApiError]:
    """The exception class for an answer's status and ``error.code``."""
    if status in _BY_STATUS:
        by_status = _BY_STATUS[status]
    elif status >= 500:
        by_status = ServerError
    elif status == 431:  # headers_too_large: a bad request like the others
        by_status = BadRequestError
    else:
        by_status = ApiError
    by_code = _BY_CODE.get(code)
    # A code-specific class only where it refines its status' class (a 409 code on a 409).
    if by_code is not None and issubclass(by_code, by_status):
        return by_code
    return by_status


def error_from_response(
    status: int,
    body: Any,
    headers: Mapping[str, str],
    *,
    retry_after: Optional[float] = None,
    method: Optional[str] = None,
    url: Optional[str] = None,
) -> ApiError:
    """Builds the exception for an error answer. A body without the error envelope (a proxy's HTML
    page, say) gives ``type="api_error"``, ``code="unexpected_response"``."""
    error = body.get("error") if isinstance(body, dict) else None
    if not (isinstance(error, dict) and isinstance(error.get("code"), str) and isinstance(error.get("message"), str)):
        error = {
            "type": "api_error",
            "code": "unexpected_response",
            "message": f"HTTP {status} without an error body",
        }
    code = str(error.get("code"))
    request_id = error.get("request_id") or headers.get("x-request-id")
    details = error.get("details")
    cls = error_class(status, code)
    return cls(
        status,
        str(error.get("type", "api_error")),
        code,
        str(error.get("message")),
        str(request_id) if request_id else None,
        details if isinstance(details, dict) else None,
        retry_after=retry_after,
        headers=headers,
        method=method,
        url=url,
    )
