"""Resource and request shapes of the Workspace Public API, as TypedDicts.

They follow the published interface descriptions (docs/openapi/v1.json and v2.json): responses are
plain JSON objects, so a ``Contact`` is the ``dict`` the server sent, typed for the checker. Every
property of a response object is always present; nullable ones are ``Optional``. The resources
themselves are generated from the service's schemas (``resources.py``).
"""

from __future__ import annotations

from typing import Any, Dict, Literal, Optional, TypedDict

from .resources import (
    Appointment,
    AppointmentStatus,
    Automation,
    CatalogItem,
    Contact,
    ContactStatus,
    Conversation,
    Message,
    PipelineStage,
    ResourceType,
    Workspace,
)

__all__ = [
    "ContactStatus",
    "AppointmentStatus",
    "Contact",
    "ContactCreate",
    "ContactUpdate",
    "Appointment",
    "Workspace",
    "PipelineStage",
    "CatalogItem",
    "Conversation",
    "Message",
    "Automation",
    "Event",
    "EventsHead",
    "BatchUpsertItem",
    "BatchUpsertItemResult",
    "ContactDeleteResult",
    "ErrorBody",
    "EventType",
    "ResourceType",
    "JSONObject",
]

JSONObject = Dict[str, Any]

#: ``<resource_type>.created|updated|deleted``; a plain string, since the combinations are many.
EventType = str


class ContactCreate(TypedDict, total=False):
    """Body of a create. The server also requires ``name`` or ``company_name``, and at least one of
    ``email``, ``phone``, ``whatsapp`` (a 422 otherwise): a TypedDict cannot say that."""

    name: Optional[str]
    company_name: Optional[str]
    email: Optional[str]
    phone: Optional[str]
    whatsapp: Optional[str]
    origin: Optional[str]
    status: ContactStatus


class ContactUpdate(TypedDict, total=False):
    """Body of an update or upsert: only the properties sent change; ``None`` clears one (not
    ``status``). At least one property."""

    name: Optional[str]
    company_name: Optional[str]
    email: Optional[str]
    phone: Optional[str]
    whatsapp: Optional[str]
    origin: Optional[str]
    status: ContactStatus


class _BatchUpsertItemRequired(TypedDict):
    external_id: str


class BatchUpsertItem(_BatchUpsertItemRequired, total=False):
    """One item of ``POST /v2/contacts/batch/upsert``: ``external_id`` plus ContactUpdate properties."""

    name: Optional[str]
    company_name: Optional[str]
    email: Optional[str]
    phone: Optional[str]
    whatsapp: Optional[str]
    origin: Optional[str]
    status: ContactStatus


class BatchUpsertItemResult(TypedDict):
    result: Literal["created", "updated", "unchanged"]
    contact: Contact


class ContactDeleteResult(TypedDict):
    #: ``deleted``: this request deleted the contact; ``not_found``: the workspace has no such
    #: contact (never had it, or it was deleted before)
    result: Literal["deleted", "not_found"]
    id: Optional[str]
    external_id: Optional[str]


class Event(TypedDict):
    id: str
    type: EventType
    resource_type: ResourceType
    resource_id: str
    occurred_at: str
    request_id: Optional[str]
    #: the resource after the change, as GET returns it; for a deletion a tombstone
    #: ``{"id": …}`` (a contact's also has ``external_id``)
    data: JSONObject


class EventsHead(TypedDict):
    position: str
    taken_at: str


class ErrorBody(TypedDict, total=False):
    type: str
    code: str
    message: str
    request_id: str
    details: JSONObject

