"""Webhook signatures per Standard Webhooks (https://www.standardwebhooks.com/).

A webhook request carries three headers:

- ``webhook-id``: the message id (the same on every delivery attempt of one message: use it to
  drop duplicates);
- ``webhook-timestamp``: Unix seconds when it was signed;
- ``webhook-signature``: one or more space-separated ``v1,<base64 signature>`` entries (several
  while a secret is being rotated); any one that matches passes.

The signature is HMAC-SHA256, keyed by the secret (``whsec_`` + base64 of the key bytes), of
``f"{webhook_id}.{webhook_timestamp}.{body}"``, base64-encoded. Verify the raw body exactly as
received — before any JSON parsing or re-encoding.

    from workspace_api import verify_webhook, WebhookVerificationError

    try:
        event = verify_webhook(request.body, request.headers, secret)
    except WebhookVerificationError:
        return 400
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Dict, Mapping, Optional, Union

from .errors import WebhookVerificationError

__all__ = ["verify_webhook", "sign_webhook", "DEFAULT_TOLERANCE_SECONDS"]

#: how far (seconds) a timestamp may be from now, either way (Standard Webhooks: 5 minutes)
DEFAULT_TOLERANCE_SECONDS = 300

_SECRET_PREFIX = "whsec_"


def _key(secret: str) -> bytes:
    encoded = secret[len(_SECRET_PREFIX) :] if secret.startswith(_SECRET_PREFIX) else secret
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as error:
        raise WebhookVerificationError("the webhook secret is not whsec_ followed by base64") from error
    if not key:
        raise WebhookVerificationError("the webhook secret is empty")
    return key


def _as_bytes(payload: Union[bytes, bytearray, memoryview, str]) -> bytes:
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return bytes(payload)


def _signature(key: bytes, msg_id: str, timestamp: str, payload: bytes) -> str:
    signed = msg_id.encode("utf-8") + b"." + timestamp.encode("utf-8") + b"." + payload
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def sign_webhook(
    payload: Union[bytes, str], secret: str, msg_id: str, timestamp: Optional[int] = None
) -> Dict[str, str]:
    """The three headers of a webhook signed with ``secret`` — for testing a receiver."""
    ts = str(int(time.time()) if timestamp is None else int(timestamp))
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + _signature(_key(secret), msg_id, ts, _as_bytes(payload)),
    }


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    value = headers.get(name)
    if value is not None:
        return value
    for key, candidate in headers.items():  # any case: Webhook-Id, WEBHOOK-ID, …
        if key.lower() == name:
            return candidate
    return None


def verify_webhook(
    payload: Union[bytes, str],
    headers: Mapping[str, str],
    secret: str,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    *,
    now: Optional[float] = None,
) -> Dict[str, Any]:
    """Verifies a webhook and returns its JSON body; raises :class:`WebhookVerificationError`.

    Args:
        payload: the raw request body (bytes as received; a str is encoded as UTF-8).
        headers: the request headers (any mapping; names in any case).
        secret: the endpoint's secret, ``whsec_…``.
        tolerance_seconds: how far the timestamp may be from now, either way (replay protection).
        now: the current Unix time (tests); default ``time.time()``.
    """
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")

    key = _key(secret)
    timestamp = timestamp.strip()
    if not timestamp.isdigit():
        raise WebhookVerificationError("invalid webhook-timestamp")
    current = time.time() if now is None else now
    if current - int(timestamp) > tolerance_seconds:
        raise WebhookVerificationError("webhook timestamp too old")
    if int(timestamp) - current > tolerance_seconds:
        raise WebhookVerificationError("webhook timestamp too new")

    body = _as_bytes(payload)
    expected = _signature(key, msg_id, timestamp, body).encode("ascii")
    matched = False
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version != "v1" or not signature:
            continue  # other schemes (v1a: asymmetric) are not ours to check
        # Constant-time, and every entry is compared (no early exit on the match).
        if hmac.compare_digest(signature.encode("ascii", "replace"), expected):
            matched = True
    if not matched:
        raise WebhookVerificationError("no matching webhook signature")

    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise WebhookVerificationError("the webhook body is not JSON") from error
    if not isinstance(parsed, dict):
        raise WebhookVerificationError("the webhook body is not a JSON object")
    return parsed
