"""Resource and request shapes of the Workspace Public API, as TypedDicts.

They follow the published interface descriptions (docs/openapi/v1.json and v2.json): responses are
plain JSON objects, so a ``Contact`` is the ``dict`` the server sent, typed for the checker. Every
property of a response object is always present; nullable ones are ``Optional``.
"""

from __future__ import annotations

from typing import Any, Dict, Literal, Optional, TypedDict

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
    "ErrorBody",
    "EventType",
    "ResourceType",
    "JSONObject",
]

JSONObject = Dict[str, Any]

ContactStatus = Literal[
    "cold_list",
    "prospecting_started",
    "talking",
    "qualified_conversation",
    "nurturing",
    "scheduled",
    "meeting",
    "post_meeting",
    "customer_confirmed",
    "lost",
]

AppointmentStatus = Literal["scheduled", "confirmed", "cancelled", "rescheduled", "completed", "no_show"]

ResourceType = Literal[
    "workspace",
    "contact",
    "pipeline_stage",
    "appointment",
    "catalog_item",
    "conversation",
    "message",
    "automation",
]

#: ``<resource_type>.created|updated|deleted``; a plain string, since the combinations are many.
EventType = str


class Contact(TypedDict):
    id: str
    external_id: Optional[str]
    name: Optional[str]
    company_name: Optional[str]
    email: Optional[str]
    phone: Optional[str]
    whatsapp: Optional[str]
    origin: Optional[str]
    status: ContactStatus
    created_at: str
    updated_at: str


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


class Appointment(TypedDict):
    id: str
    contact_id: Optional[str]
    starts_at: Optional[str]
    ends_at: Optional[str]
    timezone: str
    status: AppointmentStatus
    source: Optional[str]
    created_at: str
    updated_at: str


class Workspace(TypedDict):
    id: str
    name: str
    status: Literal["active", "suspended"]
    timezone: str
    created_at: str
    updated_at: str


class PipelineStage(TypedDict):
    id: ContactStatus
    name: str
    position: int
    created_at: str
    updated_at: str


class CatalogItem(TypedDict):
    id: str
    kind: Literal["product", "service"]
    name: str
    description: Optional[str]
    price_amount: Optional[int]
    currency: Optional[str]
    duration_minutes: Optional[int]
    active: bool
    created_at: str
    updated_at: str


class Conversation(TypedDict):
    id: str
    contact_id: str
    channel: Literal["whatsapp", "email", "instagram", "sms", "webchat"]
    status: Literal["open", "closed"]
    last_message_at: Optional[str]
    created_at: str
    updated_at: str


class Message(TypedDict):
    id: str
    conversation_id: str
    contact_id: str
    direction: Literal["inbound", "outbound"]
    kind: Literal["text", "image", "audio", "video", "document", "template"]
    text: Optional[str]
    sent_at: Optional[str]
    created_at: str
    updated_at: str


class Automation(TypedDict):
    id: str
    name: str
    status: Literal["active", "paused", "draft"]
    trigger_kind: str
    last_run_at: Optional[str]
    run_count: int
    success_count: int
    failure_count: int
    created_at: str
    updated_at: str


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

