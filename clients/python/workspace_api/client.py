"""The client: one method per operation of v1 and v2, plus iterators over every list and the feed.

    from workspace_api import WorkspaceApiClient

    client = WorkspaceApiClient("https://api.example.com", api_key)
    contact = client.v2.create_contact({"name": "Ana Souza", "email": "ana@example.com"}).data
    for c in client.v2.iter_contacts(updated_after="2026-01-01T00:00:00.000Z"):
        ...

Every method returns a :class:`~workspace_api.Response` (``.data`` and the headers that matter)
or raises an :class:`~workspace_api.ApiError`; ``iter_*`` methods yield items across pages.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from ._http import Page, QueryValue, Response, RetryEvent, RetryPolicy, Transport, path_segment
from .errors import ApiError
from .importing import ImportReport, import_contacts
from .types import (
    Appointment,
    AppointmentStatus,
    Automation,
    BatchUpsertItem,
    BatchUpsertItemResult,
    CatalogItem,
    Contact,
    ContactCreate,
    ContactDeleteResult,
    ContactStatus,
    ContactUpdate,
    Conversation,
    Event,
    EventsHead,
    Message,
    PipelineStage,
    Workspace,
)

__all__ = [
    "WorkspaceApiClient",
    "V1Api",
    "V2Api",
    "EventPage",
    "BatchUpsertResult",
    "pages",
    "iterate",
    "BATCH_UPSERT_MAX_ITEMS",
]

T = TypeVar("T")

DateTimeLike = Union[str, datetime, date]
#: one value or several (sent comma-separated), e.g. ``resource_type=["contact", "appointment"]``
OneOrMany = Union[str, Sequence[str]]

#: items per ``POST /v2/contacts/batch/upsert`` request, as the server accepts them
BATCH_UPSERT_MAX_ITEMS = 100


# --------------------------------------------------------------------------------- pagination


def pages(list_method: Callable[..., Response[Page[T]]], /, **params: Any) -> Iterator[Response[Page[T]]]:
    """Every page of a list, in order: calls ``list_method(**params, cursor=…)`` following
    ``page.next_cursor`` while ``page.has_more``. Pass ``cursor=`` (a stored ``next_cursor``) to
    resume a walk; every later page is asked with the same filters, as cursors require.

        for response in pages(client.v2.list_contacts, limit=100):
            save(response.data.data, checkpoint=response.data.next_cursor)
    """
    cursor = params.pop("cursor", None)
    while True:
        response = list_method(**params, cursor=cursor)
        yield response
        page = response.data
        if not page.has_more or page.next_cursor is None:
            return
        cursor = page.next_cursor


def iterate(list_method: Callable[..., Response[Page[T]]], /, **params: Any) -> Iterator[T]:
    """Every item of a list across its pages (see :func:`pages`)."""
    for response in pages(list_method, **params):
        yield from response.data.data


@dataclass(frozen=True)
class EventPage:
    """One page of the events feed, with the position to store once it is processed."""

    events: List[Event]
    #: id of the last event up to this page (or the ``after`` the walk started from when there
    #: was none yet): the ``after=`` to come back with once this page is applied
    last_event_id: Optional[str]
    response: Response[Page[Event]]


@dataclass(frozen=True)
class BatchUpsertResult:
    """The combined answer of a batch upsert: one result per item, in input order."""

    results: List[BatchUpsertItemResult] = field(default_factory=list)
    #: one response per request (chunk of at most 100 items), each with its Idempotency-Key
    responses: List[Response[List[BatchUpsertItemResult]]] = field(default_factory=list)

    def __iter__(self) -> Iterator[BatchUpsertItemResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def count(self, result: str) -> int:
        """How many items ended ``created``, ``updated`` or ``unchanged``."""
        return sum(1 for item in self.results if item["result"] == result)


def _as_page(response: Response[Any], body: Dict[str, Any]) -> Response[Any]:
    page = body.get("page") or {}
    return replace(
        response,
        data=Page(
            data=list(body.get("data") or []),
            limit=int(page.get("limit", 0)),
            has_more=bool(page.get("has_more", False)),
            next_cursor=page.get("next_cursor"),
        ),
    )


# ------------------------------------------------------------------------------------ versions


class _Version:
    prefix = ""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def _get(self, path: str, query: Optional[Mapping[str, QueryValue]] = None) -> Response[Any]:
        response, _ = self._transport.request("GET", self.prefix + path, query=query)
        return response

    def _list(self, path: str, query: Mapping[str, QueryValue]) -> Response[Any]:
        response, body = self._transport.request("GET", self.prefix + path, query=query)
        return _as_page(response, body)

    def _write(self, method: str, path: str, body: Any, idempotency_key: Optional[str]) -> Response[Any]:
        response, _ = self._transport.request(method, self.prefix + path, body=body, idempotency_key=idempotency_key)
        return response

    # -------------------------------------------------------------------------------- contacts

    def list_contacts(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[ContactStatus] = None,
    ) -> Response[Page[Contact]]:
        """``GET /contacts`` — one page, ordered by ``(updated_at, id)``; ``updated_after`` is exclusive."""
        return self._list(
            "/contacts", {"limit": limit, "cursor": cursor, "updated_after": updated_after, "status": status}
        )

    def iter_contacts(
        self,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[ContactStatus] = None,
    ) -> Iterator[Contact]:
        """Every contact of ``GET /contacts`` across pages (``cursor``: resume a stored walk)."""
        return iterate(self.list_contacts, limit=limit, cursor=cursor, updated_after=updated_after, status=status)

    def get_contact(self, id: str) -> Response[Contact]:
        """``GET /contacts/{id}``."""
        return self._get(f"/contacts/{path_segment(id)}")

    def create_contact(self, contact: ContactCreate, *, idempotency_key: Optional[str] = None) -> Response[Contact]:
        """``POST /contacts`` (201, ``location`` set). An ``Idempotency-Key`` is generated when
        none is given; retries of this call reuse it."""
        return self._write("POST", "/contacts", contact, idempotency_key)

    def update_contact(
        self, id: str, changes: ContactUpdate, *, idempotency_key: Optional[str] = None
    ) -> Response[Contact]:
        """``PATCH /contacts/{id}``: only the properties given change; ``None`` clears one."""
        return self._write("PATCH", f"/contacts/{path_segment(id)}", changes, idempotency_key)

    def upsert_contact(
        self, external_id: str, changes: ContactUpdate, *, idempotency_key: Optional[str] = None
    ) -> Response[Contact]:
        """``PUT /contacts/external/{external_id}``: 201 when it created the contact, 200 when it
        updated it. ``external_id`` is percent-encoded (``/`` included)."""
        return self._write("PUT", f"/contacts/external/{path_segment(external_id)}", changes, idempotency_key)

    # ---------------------------------------------------------------------------- appointments

    def list_appointments(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[AppointmentStatus] = None,
        starts_after: Optional[DateTimeLike] = None,
        starts_before: Optional[DateTimeLike] = None,
    ) -> Response[Page[Appointment]]:
        """``GET /appointments``; ``starts_after``/``starts_before`` are inclusive and leave out
        appointments without a start."""
        return self._list(
            "/appointments",
            {
                "limit": limit,
                "cursor": cursor,
                "updated_after": updated_after,
                "status": status,
                "starts_after": starts_after,
                "starts_before": starts_before,
            },
        )

    def iter_appointments(
        self,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[AppointmentStatus] = None,
        starts_after: Optional[DateTimeLike] = None,
        starts_before: Optional[DateTimeLike] = None,
    ) -> Iterator[Appointment]:
        return iterate(
            self.list_appointments,
            limit=limit,
            cursor=cursor,
            updated_after=updated_after,
            status=status,
            starts_after=starts_after,
            starts_before=starts_before,
        )

    def get_appointment(self, id: str) -> Response[Appointment]:
        """``GET /appointments/{id}``."""
        return self._get(f"/appointments/{path_segment(id)}")


class V1Api(_Version):
    """``/v1``: contacts (list, get, create, update, upsert) and appointments (list, get)."""

    prefix = "/v1"


class V2Api(_Version):
    """``/v2``: everything of v1, plus the workspace, pipeline stages, the catalog, conversations,
    messages, automations, the events feed, the batch upsert and delete, the lookup and the
    deletion by external id."""

    prefix = "/v2"

    def list_contacts(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[ContactStatus] = None,
        email: Optional[OneOrMany] = None,
        phone: Optional[OneOrMany] = None,
        external_id: Optional[OneOrMany] = None,
    ) -> Response[Page[Contact]]:
        """``GET /v2/contacts`` — one page, ordered by ``(updated_at, id)``. ``email`` (any case),
        ``phone`` (E.164) and ``external_id`` find the contacts with one of the values given: one
        value or a list of up to 100 (sent comma-separated), e.g. before creating a contact, or
        the contacts of a chunk of a sync in one call."""
        return self._list(
            "/contacts",
            {
                "limit": limit,
                "cursor": cursor,
                "updated_after": updated_after,
                "status": status,
                "email": email,
                "phone": phone,
                "external_id": external_id,
            },
        )

    def iter_contacts(
        self,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[ContactStatus] = None,
        email: Optional[OneOrMany] = None,
        phone: Optional[OneOrMany] = None,
        external_id: Optional[OneOrMany] = None,
    ) -> Iterator[Contact]:
        """Every contact of ``GET /v2/contacts`` across pages, with its filters and lookups."""
        return iterate(
            self.list_contacts,
            limit=limit,
            cursor=cursor,
            updated_after=updated_after,
            status=status,
            email=email,
            phone=phone,
            external_id=external_id,
        )

    def get_workspace(self) -> Response[Workspace]:
        """``GET /v2/workspace`` (scope ``workspace:read``)."""
        return self._get("/workspace")

    def delete_contact(self, id: str, *, idempotency_key: Optional[str] = None) -> Response[None]:
        """``DELETE /v2/contacts/{id}`` (scope ``contacts:write``): deletes the contact as the
        product does (its conversations and messages with it; its appointments stay without it).
        ``data`` is ``None`` (204). :class:`NotFoundError` when the workspace has no such contact —
        never had it, or it is deleted already."""
        return self._write("DELETE", f"/contacts/{path_segment(id)}", None, idempotency_key)

    def delete_contact_by_external_id(
        self, external_id: str, *, idempotency_key: Optional[str] = None
    ) -> Response[None]:
        """``DELETE /v2/contacts/external/{external_id}``: :meth:`delete_contact` for the contact
        with your identifier."""
        return self._write("DELETE", f"/contacts/external/{path_segment(external_id)}", None, idempotency_key)

    def get_contact_by_external_id(self, external_id: str) -> Response[Contact]:
        """``GET /v2/contacts/external/{external_id}`` (scope ``contacts:read``): the contact with
        your identifier; :class:`NotFoundError` when the workspace has none. ``external_id`` is
        percent-encoded (``/`` included)."""
        return self._get(f"/contacts/external/{path_segment(external_id)}")

    # ------------------------------------------------------------------------ pipeline stages

    def list_pipeline_stages(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
    ) -> Response[Page[PipelineStage]]:
        """``GET /v2/pipeline/stages`` (scope ``contacts:read``)."""
        return self._list("/pipeline/stages", {"limit": limit, "cursor": cursor, "updated_after": updated_after})

    def iter_pipeline_stages(
        self, *, limit: int = 100, cursor: Optional[str] = None, updated_after: Optional[DateTimeLike] = None
    ) -> Iterator[PipelineStage]:
        return iterate(self.list_pipeline_stages, limit=limit, cursor=cursor, updated_after=updated_after)

    # -------------------------------------------------------------------------------- catalog

    def list_catalog_items(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        kind: Optional[str] = None,
        active: Optional[bool] = None,
    ) -> Response[Page[CatalogItem]]:
        """``GET /v2/catalog/items`` (scope ``catalog:read``); ``kind``: product or service."""
        return self._list(
            "/catalog/items",
            {"limit": limit, "cursor": cursor, "updated_after": updated_after, "kind": kind, "active": active},
        )

    def iter_catalog_items(
        self,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        kind: Optional[str] = None,
        active: Optional[bool] = None,
    ) -> Iterator[CatalogItem]:
        return iterate(
            self.list_catalog_items, limit=limit, cursor=cursor, updated_after=updated_after, kind=kind, active=active
        )

    def get_catalog_item(self, id: str) -> Response[CatalogItem]:
        """``GET /v2/catalog/items/{id}``."""
        return self._get(f"/catalog/items/{path_segment(id)}")

    # -------------------------------------------------------------------------- conversations

    def list_conversations(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        contact_id: Optional[str] = None,
        channel: Optional[str] = None,
        status: Optional[str] = None,
    ) -> Response[Page[Conversation]]:
        """``GET /v2/conversations`` (scope ``conversations:read``)."""
        return self._list(
            "/conversations",
            {
                "limit": limit,
                "cursor": cursor,
                "updated_after": updated_after,
                "contact_id": contact_id,
                "channel": channel,
                "status": status,
            },
        )

    def iter_conversations(
        self,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        contact_id: Optional[str] = None,
        channel: Optional[str] = None,
        status: Optional[str] = None,
    ) -> Iterator[Conversation]:
        return iterate(
            self.list_conversations,
            limit=limit,
            cursor=cursor,
            updated_after=updated_after,
            contact_id=contact_id,
            channel=channel,
            status=status,
        )

    def list_messages(
        self,
        contact_id: str,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        created_after: Optional[DateTimeLike] = None,
        conversation_id: Optional[str] = None,
    ) -> Response[Page[Message]]:
        """``GET /v2/conversations/{contact_id}/messages`` (scope ``messages:read``), ordered by
        ``(created_at, id)``."""
        return self._list(
            f"/conversations/{path_segment(contact_id)}/messages",
            {"limit": limit, "cursor": cursor, "created_after": created_after, "conversation_id": conversation_id},
        )

    def iter_messages(
        self,
        contact_id: str,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        created_after: Optional[DateTimeLike] = None,
        conversation_id: Optional[str] = None,
    ) -> Iterator[Message]:
        def one_page(**params: Any) -> Response[Page[Message]]:
            return self.list_messages(contact_id, **params)

        return iterate(
            one_page, limit=limit, cursor=cursor, created_after=created_after, conversation_id=conversation_id
        )

    # ---------------------------------------------------------------------------- automations

    def list_automations(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[str] = None,
    ) -> Response[Page[Automation]]:
        """``GET /v2/automations`` (scope ``automations:read``)."""
        return self._list(
            "/automations", {"limit": limit, "cursor": cursor, "updated_after": updated_after, "status": status}
        )

    def iter_automations(
        self,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        updated_after: Optional[DateTimeLike] = None,
        status: Optional[str] = None,
    ) -> Iterator[Automation]:
        return iterate(self.list_automations, limit=limit, cursor=cursor, updated_after=updated_after, status=status)

    def get_automation(self, id: str) -> Response[Automation]:
        """``GET /v2/automations/{id}``."""
        return self._get(f"/automations/{path_segment(id)}")

    # ---------------------------------------------------------------------------------- feed

    def get_events_head(self) -> Response[EventsHead]:
        """``GET /v2/events/head``: the feed's current end. ``after=`` it returns every change
        made from now on — step one of a synchronization."""
        return self._get("/events/head")

    def list_events(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        after: Optional[str] = None,
        type: Optional[OneOrMany] = None,
        resource_type: Optional[OneOrMany] = None,
        resource_id: Optional[str] = None,
    ) -> Response[Page[Event]]:
        """``GET /v2/events`` (scope ``events:read``): one page. ``after`` and ``cursor`` are not
        sent together; ``type`` and ``resource_type`` take one value or several."""
        if after is not None and cursor is not None:
            raise ValueError("after and cursor are not sent together: the cursor continues the walk after began")
        return self._list(
            "/events",
            {
                "limit": limit,
                "cursor": cursor,
                "after": after,
                "type": type,
                "resource_type": resource_type,
                "resource_id": resource_id,
            },
        )

    def event_pages(
        self,
        *,
        after: Optional[str] = None,
        cursor: Optional[str] = None,
        limit: int = 100,
        type: Optional[OneOrMany] = None,
        resource_type: Optional[OneOrMany] = None,
        resource_id: Optional[str] = None,
    ) -> Iterator[EventPage]:
        """The feed after ``after`` (from its start without it) up to its current end, one page at
        a time: the first request carries ``after``, the next ones the page's cursor (with the same
        filters). Store ``page.last_event_id`` once a page is applied and come back later with it
        as ``after``. ``cursor`` resumes a walk at a stored ``next_cursor`` instead.
        Raises :class:`~workspace_api.EventsExpiredError` (410) when the position is older than
        retention kept: resynchronize."""
        if after is not None and cursor is not None:
            raise ValueError("pass after or cursor, not both")
        filters: Dict[str, Any] = {"limit": limit, "type": type, "resource_type": resource_type, "resource_id": resource_id}
        last_event_id = after
        response = self.list_events(after=after, cursor=cursor, **filters)
        while True:
            events = response.data.data
            if events:
                last_event_id = events[-1]["id"]
            yield EventPage(events=events, last_event_id=last_event_id, response=response)
            page = response.data
            if not page.has_more or page.next_cursor is None:
                return
            response = self.list_events(cursor=page.next_cursor, **filters)

    def iter_events(
        self,
        *,
        after: Optional[str] = None,
        limit: int = 100,
        type: Optional[OneOrMany] = None,
        resource_type: Optional[OneOrMany] = None,
        resource_id: Optional[str] = None,
    ) -> Iterator[Event]:
        """Every event after ``after`` up to the feed's current end, in order (see :meth:`event_pages`)."""
        for page in self.event_pages(
            after=after, limit=limit, type=type, resource_type=resource_type, resource_id=resource_id
        ):
            yield from page.events

    # ---------------------------------------------------------------------------------- batch

    def batch_upsert_contacts(
        self,
        items: Iterable[BatchUpsertItem],
        *,
        chunk_size: int = BATCH_UPSERT_MAX_ITEMS,
        idempotency_key: Optional[str] = None,
    ) -> BatchUpsertResult:
        """Upserts any number of contacts by ``external_id`` through ``POST /v2/contacts/batch/upsert``,
        in requests of at most 100 items (``chunk_size``), in order; returns every item's result
        (``created``, ``updated`` or ``unchanged``, and the contact) in input order.

        Each request has its own ``Idempotency-Key``: a random one, or ``f"{idempotency_key}:{n}"``
        for the n-th chunk (from 0) when ``idempotency_key`` is given — so a resumed run that sends
        the same items with the same key replays the chunks already written.

        An ``external_id`` given by more than one item raises :class:`RepeatedExternalIdsError`
        before anything is sent, naming every such ``external_id`` with all its places: within one
        request the service refuses it too, and across requests the later item would silently win.

        Chunks are separate requests: when one fails (a 422 lists the bad items in
        ``details["items"]``, each with its ``index`` within that chunk), the chunks before it stay
        written. The exception carries ``batch_offset`` (the position in ``items`` of the failed
        chunk's first item, to add to those indexes) and ``batch_results`` (the results so far).
        """
        if not 1 <= chunk_size <= BATCH_UPSERT_MAX_ITEMS:
            raise ValueError(f"chunk_size must be from 1 to {BATCH_UPSERT_MAX_ITEMS}")
        all_items = list(items)
        repeated = repeated_external_ids(all_items)
        if repeated:
            raise RepeatedExternalIdsError(repeated)
        result = BatchUpsertResult()
        for number, offset in enumerate(range(0, len(all_items), chunk_size)):
            chunk = all_items[offset : offset + chunk_size]
            key = f"{idempotency_key}:{number}" if idempotency_key is not None else None
            try:
                response: Response[List[BatchUpsertItemResult]] = self._write(
                    "POST", "/contacts/batch/upsert", {"items": chunk}, key
                )
            except ApiError as error:
                error.batch_offset = offset
                error.batch_results = list(result.results)
                raise
            result.responses.append(response)
            result.results.extend(response.data)
        return result

    def import_contacts(
        self,
        rows: Sequence[Mapping[str, Any]],
        *,
        lines: Optional[Sequence[int]] = None,
        idempotency_key: Optional[str] = None,
    ) -> ImportReport:
        """Imports any number of contacts by ``external_id``, 100 per request in partial mode, in
        row order, and reports every row (``report.rows``): created, updated or unchanged with its
        contact, or invalid with its problems; ``report.problems`` are the invalid ones and
        ``report.counts`` how many had each result. An ``external_id`` given by several rows makes
        every one of them invalid, and those rows are not sent. ``lines[i]`` (from
        :func:`read_contacts_csv`) is reported as the line of row i.

        Each request has its own ``Idempotency-Key``: a random one, or ``f"{idempotency_key}:{n}"``
        for the n-th (``idempotency_key``: 6 to 100 visible ASCII characters, else ``ValueError``
        before anything is sent), so rerunning an interrupted import with the same key replays the
        requests already made. An error that is not about rows (401, 403, a 429 past the retries) stops the
        import and is raised.
        """
        return import_contacts(self, rows, lines=lines, idempotency_key=idempotency_key)

    def batch_delete_contacts(
        self,
        *,
        ids: Iterable[str] = (),
        external_ids: Iterable[str] = (),
        idempotency_key: Optional[str] = None,
    ) -> List[ContactDeleteResult]:
        """Deletes any number of contacts by id and by ``external_id`` through
        ``POST /v2/contacts/batch/delete``, 100 values per request (the ids first, then the
        external ids, in order); returns one result per value in that order: ``deleted``, or
        ``not_found`` when the workspace had no such contact (never had it, or it is gone already:
        a sync pushing its deletions may count both as done).

        Each request has its own ``Idempotency-Key``: a random one, or ``f"{idempotency_key}:{n}"``
        for the n-th request when ``idempotency_key`` is given, so a rerun replays the requests
        already made. A value given twice raises ``ValueError`` before anything is sent. A failing
        request raises its ``ApiError``, with ``batch_offset`` (the place among the values, ids
        first, of its first value) and ``batch_results`` (the results so far): the requests before
        it stay done.
        """
        values: List[Tuple[str, str]] = [("ids", v.lower()) for v in ids] + [("external_ids", v) for v in external_ids]
        repeated = [
            f"{name[:-1]} {value!r} at {', '.join(map(str, at))}"
            for name in ("ids", "external_ids")
            for value, at in repeated_values([v for n, v in values if n == name]).items()
        ]
        if repeated:
            raise ValueError(f"each value may be sent once: {'; '.join(repeated)}")
        results: List[ContactDeleteResult] = []
        for number, offset in enumerate(range(0, len(values), BATCH_UPSERT_MAX_ITEMS)):
            body: Dict[str, List[str]] = {}
            for name, value in values[offset : offset + BATCH_UPSERT_MAX_ITEMS]:
                body.setdefault(name, []).append(value)
            key = f"{idempotency_key}:{number}" if idempotency_key is not None else None
            try:
                response: Response[List[ContactDeleteResult]] = self._write(
                    "POST", "/contacts/batch/delete", body, key
                )
            except ApiError as error:
                error.batch_offset = offset
                error.batch_results = list(results)
                raise
            results.extend(response.data)
        return results


def repeated_values(values: Iterable[str]) -> Dict[str, List[int]]:
    """Every value of ``values`` given more than once, with all its places."""
    places: Dict[str, List[int]] = {}
    for index, value in enumerate(values):
        places.setdefault(value, []).append(index)
    return {value: at for value, at in places.items() if len(at) > 1}


def repeated_external_ids(items: Iterable[Mapping[str, Any]]) -> Dict[str, List[int]]:
    """Every ``external_id`` of ``items`` sent more than once, with all its places, in order of first
    appearance."""
    places: Dict[str, List[int]] = {}
    for index, item in enumerate(items):
        places.setdefault(item["external_id"], []).append(index)
    return {external_id: at for external_id, at in places.items() if len(at) > 1}


class RepeatedExternalIdsError(ValueError):
    """Items that send one ``external_id`` more than once, found before anything is sent.
    ``repeated`` maps each such ``external_id`` to all its places in the caller's items."""

    def __init__(self, repeated: Dict[str, List[int]]) -> None:
        self.repeated = repeated
        listed = "; ".join(
            f"{external_id!r} at items {', '.join(map(str, at))}" for external_id, at in repeated.items()
        )
        super().__init__(f"each external_id may be sent once: {listed}")


# -------------------------------------------------------------------------------------- client


class WorkspaceApiClient:
    """A client of one service with one workspace API key.

    Args:
        base_url: origin of the service (``https://api.example.com``); paths carry /v1 and /v2.
        api_key: a workspace API key (``wsk_…``). It is sent only in the Authorization header and
            never shown by ``repr``.
        timeout: seconds each attempt may take (connect and each read).
        retry: a :class:`RetryPolicy` (default: 429 retried for up to 120 s, other retries up to 5
            attempts). The threads that share the client share its waits: a 429 holds them all.
        on_retry: called with a :class:`RetryEvent` before each wait (logging, metrics).
        user_agent: the User-Agent header.
        opener: a ``urllib.request.OpenerDirector`` (proxies, custom TLS contexts).
        sleep: what waits out a backoff or a jitter (default ``time.sleep``).
        read_your_writes: on deployments with read replicas, keep the greatest
            ``Consistency-Position`` of the answers and send it on every later request, so reads
            reflect this client's writes (default True; False: tokens are neither kept nor sent).

    A bad setting (a missing or relative ``base_url``, a key that is not a string, a negative
    timeout) raises ``TypeError`` or ``ValueError`` here rather than at the first call.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retry: Optional[RetryPolicy] = None,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
        user_agent: Optional[str] = None,
        opener: Any = None,
        sleep: Optional[Callable[[float], None]] = None,
        read_your_writes: bool = True,
    ) -> None:
        kwargs: Dict[str, Any] = {}
        if sleep is not None:
            kwargs["sleep"] = sleep
        self.transport = Transport(
            base_url,
            api_key,
            timeout=timeout,
            retry=retry,
            user_agent=user_agent,
            on_retry=on_retry,
            opener=opener,
            read_your_writes=read_your_writes,
            **kwargs,
        )
        self.v1 = V1Api(self.transport)
        self.v2 = V2Api(self.transport)

    def __repr__(self) -> str:
        return f"WorkspaceApiClient(base_url={self.transport.base_url!r})"

    @property
    def consistency_position(self) -> Optional[str]:
        """The greatest ``Consistency-Position`` this client has received (None when none), sent
        with every request it makes. Hand it to another client or process
        (``other.consistency_position = client.consistency_position``) so that its reads see this
        client's writes. Setting it replaces it (None clears it); a value that is not a token
        (``1.`` and 16 lowercase hex digits) raises ``TypeError`` or ``ValueError``. Always None,
        and setting it has no effect, with ``read_your_writes=False``."""
        return self.transport.consistency_position

    @consistency_position.setter
    def consistency_position(self, value: Optional[str]) -> None:
        self.transport.consistency_position = value

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, QueryValue]] = None,
        body: Any = None,
        idempotency_key: Optional[str] = None,
    ) -> Response[Any]:
        """Any request (``path`` from the origin, e.g. ``/v2/contacts``), with the same headers,
        retries and errors; ``data`` is the body's ``data`` and ``headers`` everything else."""
        response, _ = self.transport.request(method, path, query=query, body=body, idempotency_key=idempotency_key)
        return response
