// generated — do not edit. Source: docs/openapi/v2.json (the published v2 interface description).
// Regenerate with: node --import tsx clients/typescript/generate.ts
export interface paths {
  '/v2/appointments': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List appointments
     * @description Appointments ordered by (updated_at, id) ascending. starts_after and starts_before bound starts_at inclusively and leave out appointments without a start. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listAppointments'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/appointments/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Get an appointment
     * @description The appointment with this id; 404 when the workspace of the key has none. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['getAppointment'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/automations': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List automations
     * @description List automations, ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last item you stored as updated_after. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listAutomations'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/automations/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Get an automation
     * @description The automation with this id; 404 when the workspace of the key has none. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['getAutomation'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/catalog/items': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List catalog items
     * @description List catalog items, ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last item you stored as updated_after. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listCatalogItems'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/catalog/items/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Get a catalog item
     * @description The catalog item with this id; 404 when the workspace of the key has none. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['getCatalogItem'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/contacts': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List contacts
     * @description Contacts ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last contact you stored as updated_after. email, phone and external_id find the contacts with one of the values given (up to 100 each, comma-separated; several filters: all must hold), e.g. before creating one, or the contacts of a chunk of a sync in one call. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listContacts'];
    put?: never;
    /**
     * Create a contact
     * @description Without status, the contact starts as cold_list. The 201 carries Location: the path of the new contact.
     */
    post: operations['createContact'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/contacts/batch/delete': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Delete up to 100 contacts
     * @description Deletes the contacts named by ids and by external_ids (100 values at most in all), in one transaction, each as DELETE /v2/contacts/{id} does. A value that names no contact of the workspace is not an error: its entry says not_found, so a sync can resend a batch whose contacts are partly gone. The answer has one entry per value sent, the ids first then the external_ids, each in the order sent; a contact named by both its id and its external_id is deleted once and both entries say deleted. Counts as one request per 10 values (started) against the rate limit.
     */
    post: operations['batchDeleteContacts'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/contacts/batch/upsert': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Create or update up to 100 contacts by external identifier
     * @description Each item is what PUT /v2/contacts/external/{external_id} takes, with its external_id: it creates the contact (with the properties sent; status cold_list when none is sent) or changes only the properties sent. 1 to 100 items; an external_id sent by several items makes every one of them invalid, and its problem names them all. mode all_or_nothing (the default): when any item is invalid the answer is 422 with details.items (each bad item's index and its problems) and nothing is written. mode partial: the valid items are written, and each invalid one is answered in its place with result invalid, its index, the external_id it sent and its problems (207 when there is at least one; 422 as above when no item is valid). The items written go in one transaction, and the answer lists, in item order, what happened to each (created, updated, unchanged, invalid) with the contact, and counts says how many had each result. An unchanged contact is not written (no updated_at move, no event); the others produce one event each, in item order. Counts as one request per 10 items (started) against the rate limit: a batch of 100 counts as 10.
     */
    post: operations['batchUpsertContacts'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/contacts/external/{external_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Get a contact by external identifier
     * @description The contact of this workspace with this external_id (set through the upsert); 404 when there is none. An external_id containing "/" may be sent raw or percent-encoded (%2F). A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['getContactByExternalId'];
    /**
     * Create or update a contact by external identifier
     * @description 201 (with Location) when no contact of this workspace had the external_id and one was created; 200 when the existing contact was updated. Concurrent upserts of one external_id end in one contact. An external_id containing "/" may be sent raw or percent-encoded (%2F): both address the same contact.
     */
    put: operations['upsertContactByExternalId'];
    post?: never;
    /**
     * Delete a contact by external identifier
     * @description Deletes the contact with this external_id as the product deletes one: its conversations and their messages are deleted first, its appointments stay without it, the feed shows each of these and then contact.deleted, and the contact's earlier events and the stored answers of writes that carried it are erased. 204 when this request deleted it; 404 when the workspace has no such contact (never had it, or it is deleted already: a sync may count that as done). A retry with the same Idempotency-Key answers 204 again, replayed. An external_id containing "/" may be sent raw or percent-encoded (%2F).
     */
    delete: operations['deleteContactByExternalId'];
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/contacts/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Get a contact
     * @description The contact with this id; 404 when the workspace of the key has none. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['getContact'];
    put?: never;
    post?: never;
    /**
     * Delete a contact
     * @description Deletes the contact with this id as the product deletes one: its conversations and their messages are deleted first, its appointments stay without it, the feed shows each of these and then contact.deleted, and the contact's earlier events and the stored answers of writes that carried it are erased. 204 when this request deleted it; 404 when the workspace has no such contact (never had it, or it is deleted already: a sync may count that as done). A retry with the same Idempotency-Key answers 204 again, replayed.
     */
    delete: operations['deleteContact'];
    options?: never;
    head?: never;
    /**
     * Update a contact
     * @description Changes only the properties sent; updated_at moves only when a value changes.
     */
    patch: operations['updateContact'];
    trace?: never;
  };
  '/v2/conversations': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List conversations
     * @description List conversations, ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last item you stored as updated_after. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listConversations'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/conversations/{contact_id}/messages': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List a contact's messages
     * @description Messages of every conversation of the contact, ordered by (created_at, id). For incremental sync pass the created_at of the last message you stored as created_after. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listMessages'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/events': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List changes (events feed)
     * @description Every change to a contact, appointment, pipeline stage, catalog item, conversation, message, automation or the workspace, whoever made it, in a stable order: an event is visible once its change is committed, and a reader that follows the cursor (or resumes with after=) never misses one. A key sees the events of the resource types its scopes read on their own routes (messages need messages:read) and nothing of the others. When a resource is deleted, its earlier events keep their place but their data becomes its tombstone. Events are kept for 30 days (EVENTS_RETENTION_DAYS); a position from before what retention kept answers 410 events_expired, never a silent gap. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listEvents'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/events/head': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Current end of the events feed
     * @description The position after which every future change appears, without reading the feed. To start a sync: take this position, export the lists, then read the feed with after=<position> (docs/sync.md). A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['getEventsHead'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/pipeline/stages': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List pipeline stages
     * @description Ordered by (updated_at, id) like every list; sort by position to show them in pipeline order. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['listPipelineStages'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v2/workspace': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Get the workspace of this API key
     * @description Identity, status and time zone of the workspace the API key belongs to. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
     */
    get: operations['getWorkspace'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export interface webhooks {
  event: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * A change of the feed, pushed to a webhook endpoint
     * @description POSTed to the endpoint's URL for every event of the types its scopes read (and its --events), in feed order per resource. The body is the event exactly as GET /v2/events lists it, built when the attempt is made: an event of a resource deleted meanwhile carries its tombstone.
     *
     *     Signed per Standard Webhooks (https://www.standardwebhooks.com): verify the signature over the raw bytes received (never JSON parsed and written again), refuse a webhook-timestamp more than five minutes from now, and skip a webhook-id already applied. No API key is sent: the signature authenticates the sender.
     */
    post: operations['deliverEvent'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  'webhook.test': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * A test message, sent by the owner
     * @description POSTed once by `workspace-api webhooks test ID`, from the process that runs the command, signed like any delivery. The command prints the outcome and exits with status 1 unless the receiver answered 2xx; a test message is not queued and never retried.
     *
     *     Signed per Standard Webhooks (https://www.standardwebhooks.com): verify the signature over the raw bytes received (never JSON parsed and written again), refuse a webhook-timestamp more than five minutes from now, and skip a webhook-id already applied. No API key is sent: the signature authenticates the sender.
     */
    post: operations['deliverWebhookTest'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export interface components {
  schemas: {
    Appointment: {
      /** Format: uuid */
      contact_id: string | null;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /** Format: date-time */
      ends_at: string | null;
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
      /**
       * @description Where the appointment was booked.
       * @example website
       */
      source: string | null;
      /** Format: date-time */
      starts_at: string | null;
      status: components['schemas']['AppointmentStatus'];
      /**
       * @description IANA time zone the appointment was booked in.
       * @example America/Sao_Paulo
       */
      timezone: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
    };
    /** @description A appointment deleted: data is its Tombstone. */
    AppointmentDeletedEvent: {
      data: components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'appointment';
      /** @enum {string} */
      type: 'appointment.deleted';
    };
    /** @description A appointment created or updated: data is the Appointment after the change, or its Tombstone once the appointment was deleted. */
    AppointmentEvent: {
      data: components['schemas']['Appointment'] | components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'appointment';
      /** @enum {string} */
      type: 'appointment.created' | 'appointment.updated';
    };
    AppointmentPage: {
      data: components['schemas']['Appointment'][];
      page: components['schemas']['PageInfo'];
    };
    AppointmentResult: {
      data: components['schemas']['Appointment'];
    };
    /** @enum {string} */
    AppointmentStatus: 'scheduled' | 'confirmed' | 'cancelled' | 'rescheduled' | 'completed' | 'no_show';
    Automation: {
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /** Format: int64 */
      failure_count: number;
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
      /** Format: date-time */
      last_run_at: string | null;
      /** @example Confirm appointments the day before */
      name: string;
      /** Format: int64 */
      run_count: number;
      /** @enum {string} */
      status: 'active' | 'paused' | 'draft';
      /** Format: int64 */
      success_count: number;
      /**
       * @description What starts a run.
       * @enum {string}
       */
      trigger_kind:
        | 'contact_created'
        | 'contact_status_changed'
        | 'appointment_scheduled'
        | 'appointment_status_changed'
        | 'message_received'
        | 'schedule';
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
    };
    /** @description A automation deleted: data is its Tombstone. */
    AutomationDeletedEvent: {
      data: components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'automation';
      /** @enum {string} */
      type: 'automation.deleted';
    };
    /** @description A automation created or updated: data is the Automation after the change, or its Tombstone once the automation was deleted. */
    AutomationEvent: {
      data: components['schemas']['Automation'] | components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'automation';
      /** @enum {string} */
      type: 'automation.created' | 'automation.updated';
    };
    AutomationPage: {
      data: components['schemas']['Automation'][];
      page: components['schemas']['PageInfo'];
    };
    AutomationResult: {
      data: components['schemas']['Automation'];
    };
    CatalogItem: {
      /** @description Whether the item is currently offered. */
      active: boolean;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /**
       * @description ISO 4217 code.
       * @example BRL
       */
      currency: string | null;
      description: string | null;
      /**
       * Format: int32
       * @description Length of a service, when it has one.
       */
      duration_minutes: number | null;
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
      /** @enum {string} */
      kind: 'product' | 'service';
      /** @example Initial consultation */
      name: string;
      /**
       * Format: int64
       * @description Price in the minor unit of the currency (cents); null when the item has no list price.
       * @example 15000
       */
      price_amount: number | null;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
    };
    /** @description A catalog item deleted: data is its Tombstone. */
    CatalogItemDeletedEvent: {
      data: components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'catalog_item';
      /** @enum {string} */
      type: 'catalog_item.deleted';
    };
    /** @description A catalog item created or updated: data is the CatalogItem after the change, or its Tombstone once the catalog item was deleted. */
    CatalogItemEvent: {
      data: components['schemas']['CatalogItem'] | components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'catalog_item';
      /** @enum {string} */
      type: 'catalog_item.created' | 'catalog_item.updated';
    };
    CatalogItemPage: {
      data: components['schemas']['CatalogItem'][];
      page: components['schemas']['PageInfo'];
    };
    CatalogItemResult: {
      data: components['schemas']['CatalogItem'];
    };
    Contact: {
      company_name: string | null;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /** Format: email */
      email: string | null;
      /** @description Identifier chosen by the caller (set through the upsert). */
      external_id: string | null;
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
      name: string | null;
      origin: string | null;
      /** @example +5511912345678 */
      phone: string | null;
      /** @description Pipeline stage of the contact. */
      status: components['schemas']['ContactStatus'];
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
      /** @example +5511987654321 */
      whatsapp: string | null;
    };
    /** @description How many items had each result. */
    ContactBatchCounts: {
      /** Format: int32 */
      created: number;
      /**
       * Format: int32
       * @description Items not written (partial mode only; 0 otherwise).
       */
      invalid: number;
      /** Format: int32 */
      unchanged: number;
      /** Format: int32 */
      updated: number;
    };
    /** @description ids, external_ids or both: 1 to 100 values in all, each at most once in its list. */
    ContactBatchDelete: {
      /** @description Contacts to delete, by external_id; each at most once. */
      external_ids?: string[];
      /** @description Contacts to delete, by id (in either case); each at most once. */
      ids?: string[];
    } & (
      | {
          ids: unknown;
        }
      | {
          external_ids: unknown;
        }
    );
    /** @description How many values had each result. */
    ContactBatchDeleteCounts: {
      /** Format: int32 */
      deleted: number;
      /** Format: int32 */
      not_found: number;
    };
    ContactBatchDeleteResult: {
      counts: components['schemas']['ContactBatchDeleteCounts'];
      /** @description One entry per value sent: the ids in their order, then the external_ids in theirs. */
      data: components['schemas']['ContactDeleteResult'][];
    };
    ContactBatchInvalid: {
      /** @description The item's problems, the first 5. */
      errors: components['schemas']['ItemProblem'][];
      /** @description The external_id the item sent, when it sent a string (cut after 120 characters, with …); otherwise null. */
      external_id: string | null;
      /**
       * Format: int32
       * @description The item's place in items.
       */
      index: number;
      /**
       * Format: int32
       * @description How many problems errors leaves out.
       */
      more_errors?: number;
      /**
       * @description The item was not written.
       * @enum {string}
       */
      result: 'invalid';
    };
    /** @description external_id and at least one ContactUpdate property. Creates the contact with the properties sent (status cold_list when none is sent) or changes only the properties sent: the rules of PUT /v2/contacts/external/{external_id}. */
    ContactBatchItem: {
      company_name?: string | null;
      /** Format: email */
      email?: string | null;
      /** @description Identifier of the contact in the calling system: the contact this item creates or updates. */
      external_id: string;
      name?: string | null;
      origin?: string | null;
      /** @description E.164: plus sign, then 8 to 15 digits. */
      phone?: string | null;
      /** @description Pipeline stage of the contact. */
      status?: components['schemas']['ContactStatus'];
      /** @description E.164: plus sign, then 8 to 15 digits. */
      whatsapp?: string | null;
    } & (
      | {
          name: unknown;
        }
      | {
          company_name: unknown;
        }
      | {
          email: unknown;
        }
      | {
          phone: unknown;
        }
      | {
          whatsapp: unknown;
        }
      | {
          origin: unknown;
        }
      | {
          status: unknown;
        }
    );
    ContactBatchResult: {
      contact: components['schemas']['Contact'];
      /**
       * @description created: no contact had the external_id; updated: a stored value changed; unchanged: every value sent was already stored (updated_at did not move, no event).
       * @enum {string}
       */
      result: 'created' | 'updated' | 'unchanged';
    };
    ContactBatchUpsert: {
      /** @description 1 to 100 contacts, each external_id at most once. */
      items: components['schemas']['ContactBatchItem'][];
      /**
       * @description all_or_nothing (the default): any invalid item refuses the whole batch with 422 and nothing is written. partial: the valid items are written in one transaction and each invalid one comes back in the answer (result invalid, its index, external_id and problems), with 207 when there is one; 422 when no item is valid.
       * @enum {string}
       */
      mode?: 'all_or_nothing' | 'partial';
    };
    ContactBatchUpsertPartialResult: {
      counts: components['schemas']['ContactBatchCounts'];
      /** @description One entry per item, in item order: what was written, or why the item was not. */
      data: (components['schemas']['ContactBatchResult'] | components['schemas']['ContactBatchInvalid'])[];
    };
    ContactBatchUpsertResult: {
      counts: components['schemas']['ContactBatchCounts'];
      /** @description One entry per item, in item order. */
      data: components['schemas']['ContactBatchResult'][];
    };
    /** @description Carries the key name or company_name, and at least one of the keys email, phone, whatsapp. */
    ContactCreate: {
      company_name?: string | null;
      /** Format: email */
      email?: string | null;
      name?: string | null;
      origin?: string | null;
      /** @description E.164: plus sign, then 8 to 15 digits. */
      phone?: string | null;
      /** @description Pipeline stage of the contact. */
      status?: components['schemas']['ContactStatus'];
      /** @description E.164: plus sign, then 8 to 15 digits. */
      whatsapp?: string | null;
    } & ((
      | {
          name: unknown;
        }
      | {
          company_name: unknown;
        }
    ) &
      (
        | {
            email: unknown;
          }
        | {
            phone: unknown;
          }
        | {
            whatsapp: unknown;
          }
      ));
    ContactDeleteResult: {
      /** @description The external_id sent, or the one the contact deleted by its id had; null for an id not found, or a contact without one. */
      external_id: string | null;
      /**
       * Format: uuid
       * @description The id sent, or the id of the contact deleted by its external_id; null for an external_id not found.
       */
      id: string | null;
      /**
       * @description deleted: this request deleted the contact; not_found: the workspace has no such contact (never had it, or it was deleted before).
       * @enum {string}
       */
      result: 'deleted' | 'not_found';
    };
    /** @description A contact deleted: data is its ContactTombstone. */
    ContactDeletedEvent: {
      data: components['schemas']['ContactTombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'contact';
      /** @enum {string} */
      type: 'contact.deleted';
    };
    /** @description A contact created or updated: data is the Contact after the change, or its ContactTombstone once the contact was deleted. */
    ContactEvent: {
      data: components['schemas']['Contact'] | components['schemas']['ContactTombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'contact';
      /** @enum {string} */
      type: 'contact.created' | 'contact.updated';
    };
    ContactPage: {
      data: components['schemas']['Contact'][];
      page: components['schemas']['PageInfo'];
    };
    ContactResult: {
      data: components['schemas']['Contact'];
    };
    /** @enum {string} */
    ContactStatus:
      | 'cold_list'
      | 'prospecting_started'
      | 'talking'
      | 'qualified_conversation'
      | 'nurturing'
      | 'scheduled'
      | 'meeting'
      | 'post_meeting'
      | 'customer_confirmed'
      | 'lost';
    ContactTombstone: {
      /** @description The external_id the contact had; null when it had none. */
      external_id: string | null;
      /**
       * Format: uuid
       * @description Id of the deleted contact.
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
    };
    /** @description Only the properties sent are changed; send null to clear a nullable property. */
    ContactUpdate: {
      company_name?: string | null;
      /** Format: email */
      email?: string | null;
      name?: string | null;
      origin?: string | null;
      /** @description E.164: plus sign, then 8 to 15 digits. */
      phone?: string | null;
      /** @description Pipeline stage of the contact. */
      status?: components['schemas']['ContactStatus'];
      /** @description E.164: plus sign, then 8 to 15 digits. */
      whatsapp?: string | null;
    } & (
      | {
          name: unknown;
        }
      | {
          company_name: unknown;
        }
      | {
          email: unknown;
        }
      | {
          phone: unknown;
        }
      | {
          whatsapp: unknown;
        }
      | {
          origin: unknown;
        }
      | {
          status: unknown;
        }
    );
    Conversation: {
      /** @enum {string} */
      channel: 'whatsapp' | 'email' | 'instagram' | 'sms' | 'webchat';
      /**
       * Format: uuid
       * @description The contact; list the messages at /v2/conversations/{contact_id}/messages.
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      contact_id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
      /** Format: date-time */
      last_message_at: string | null;
      /** @enum {string} */
      status: 'open' | 'closed';
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
    };
    /** @description A conversation deleted: data is its Tombstone. */
    ConversationDeletedEvent: {
      data: components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'conversation';
      /** @enum {string} */
      type: 'conversation.deleted';
    };
    /** @description A conversation created or updated: data is the Conversation after the change, or its Tombstone once the conversation was deleted. */
    ConversationEvent: {
      data: components['schemas']['Conversation'] | components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'conversation';
      /** @enum {string} */
      type: 'conversation.created' | 'conversation.updated';
    };
    ConversationPage: {
      data: components['schemas']['Conversation'][];
      page: components['schemas']['PageInfo'];
    };
    Error: {
      error: {
        /** @description Stable machine-readable code; see the error catalog in the service description. */
        code: string;
        details?: {
          [key: string]: unknown;
        };
        /** @description Human-readable explanation; safe to show, never contains secrets. */
        message: string;
        /** @description Equals the X-Request-Id header of the same response. */
        request_id: string;
        /**
         * @description Error class: invalid_request, authentication_error, permission_error, not_found, idempotency_error, validation_error, rate_limit_error or api_error.
         * @enum {string}
         */
        type:
          | 'invalid_request'
          | 'authentication_error'
          | 'permission_error'
          | 'not_found'
          | 'idempotency_error'
          | 'validation_error'
          | 'rate_limit_error'
          | 'api_error';
      };
    };
    /** @description A change: type is <resource_type>.created, .updated or .deleted. data is the resource after the change, exactly as GET returns it; for a deletion, and for every earlier event of a resource since deleted, its tombstone ({"id": ...}, and for a contact also its "external_id"). */
    Event:
      | components['schemas']['WorkspaceEvent']
      | components['schemas']['ContactEvent']
      | components['schemas']['ContactDeletedEvent']
      | components['schemas']['PipelineStageEvent']
      | components['schemas']['PipelineStageDeletedEvent']
      | components['schemas']['AppointmentEvent']
      | components['schemas']['AppointmentDeletedEvent']
      | components['schemas']['CatalogItemEvent']
      | components['schemas']['CatalogItemDeletedEvent']
      | components['schemas']['ConversationEvent']
      | components['schemas']['ConversationDeletedEvent']
      | components['schemas']['MessageEvent']
      | components['schemas']['MessageDeletedEvent']
      | components['schemas']['AutomationEvent']
      | components['schemas']['AutomationDeletedEvent'];
    EventPage: {
      data: components['schemas']['Event'][];
      page: components['schemas']['PageInfo'];
    };
    EventsHead: {
      /**
       * @description The current end of the feed: pass it as after= to receive every change made from now on, and nothing before.
       * @example evt_Vh3kq8XwP0aZr5Ld2NcT7g
       */
      position: string;
      /**
       * Format: date-time
       * @description When the position was taken.
       * @example 2026-11-22T06:05:43.123Z
       */
      taken_at: string;
    };
    EventsHeadResult: {
      data: components['schemas']['EventsHead'];
    };
    ItemProblem: {
      /** @description The property of the item (a path within it); null: the item itself. */
      field: string | null;
      message: string;
    };
    Message: {
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      contact_id: string;
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      conversation_id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /**
       * @description inbound: from the contact.
       * @enum {string}
       */
      direction: 'inbound' | 'outbound';
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
      /** @enum {string} */
      kind: 'text' | 'image' | 'audio' | 'video' | 'document' | 'template';
      /** Format: date-time */
      sent_at: string | null;
      /** @description Text of the message, or the caption of a media message. */
      text: string | null;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
    };
    /** @description A message deleted: data is its Tombstone. */
    MessageDeletedEvent: {
      data: components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'message';
      /** @enum {string} */
      type: 'message.deleted';
    };
    /** @description A message created or updated: data is the Message after the change, or its Tombstone once the message was deleted. */
    MessageEvent: {
      data: components['schemas']['Message'] | components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'message';
      /** @enum {string} */
      type: 'message.created' | 'message.updated';
    };
    MessagePage: {
      data: components['schemas']['Message'][];
      page: components['schemas']['PageInfo'];
    };
    PageInfo: {
      /** @description Whether a further page exists. */
      has_more: boolean;
      /**
       * Format: int32
       * @description The page size applied.
       */
      limit: number;
      next_cursor: string | null;
    };
    PipelineStage: {
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /** @description The contact status this stage stands for. */
      id: components['schemas']['ContactStatus'];
      /** @example Qualified conversation */
      name: string;
      /**
       * Format: int32
       * @description Order of the stage in the pipeline, from 1.
       */
      position: number;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
    };
    /** @description A pipeline stage deleted: data is its Tombstone. */
    PipelineStageDeletedEvent: {
      data: components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'pipeline_stage';
      /** @enum {string} */
      type: 'pipeline_stage.deleted';
    };
    /** @description A pipeline stage created or updated: data is the PipelineStage after the change, or its Tombstone once the pipeline stage was deleted. */
    PipelineStageEvent: {
      data: components['schemas']['PipelineStage'] | components['schemas']['Tombstone'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'pipeline_stage';
      /** @enum {string} */
      type: 'pipeline_stage.created' | 'pipeline_stage.updated';
    };
    PipelineStagePage: {
      data: components['schemas']['PipelineStage'][];
      page: components['schemas']['PageInfo'];
    };
    Tombstone: {
      /** @description Id of the deleted resource. */
      id: string;
    };
    /** @description The message `webhooks test` sends: not an event of the feed, never queued, never retried. */
    WebhookTest: {
      data: {
        /**
         * Format: uuid
         * @description The endpoint the test was sent to.
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        endpoint_id: string;
        message: string;
      };
      /** @description Also the webhook-id. */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @enum {string} */
      type: 'webhook.test';
    };
    Workspace: {
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      created_at: string;
      /**
       * Format: uuid
       * @description UUID
       * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
       */
      id: string;
      /** @example Clínica Vida */
      name: string;
      /** @enum {string} */
      status: 'active' | 'suspended';
      /**
       * @description IANA time zone of the workspace.
       * @example America/Sao_Paulo
       */
      timezone: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      updated_at: string;
    };
    /** @description The workspace created or updated: data is the Workspace after the change. */
    WorkspaceEvent: {
      data: components['schemas']['Workspace'];
      /**
       * @description Identifier and position of the event in the feed: opaque (it reveals nothing about when or how often anything happened); pass it as after= to continue right after it.
       * @example evt_q2Xc0Lw9RkT1mHb7YpZs4A
       */
      id: string;
      /**
       * Format: date-time
       * @example 2026-11-22T06:05:43.123Z
       */
      occurred_at: string;
      /** @description X-Request-Id of the API request that caused the change; null for changes made in the product. */
      request_id: string | null;
      /** @description Id of the resource the event is about. */
      resource_id: string;
      /** @enum {string} */
      resource_type: 'workspace';
      /** @enum {string} */
      type: 'workspace.created' | 'workspace.updated';
    };
    WorkspaceResult: {
      data: components['schemas']['Workspace'];
    };
  };
  responses: {
    /**
     * @description The request body is too large. error.code is one of:
     *     - `payload_too_large`: the body is over the size limit; refused before it is read
     */
    BodyTooLarge: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "payload_too_large",
         *         "message": "The request body is too large.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The Idempotency-Key cannot be used for this request now. error.code is one of:
     *     - `idempotency_key_reused`: the Idempotency-Key was used with a different request
     *     - `idempotency_key_in_use`: a request with this Idempotency-Key is still running; see Retry-After
     */
    Conflict: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'Retry-After': components['headers']['Retry-After-Optional'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "idempotency_key_reused",
         *         "message": "This Idempotency-Key was already used with a different request.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "idempotency_error"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The key may not do this. error.code is one of:
     *     - `insufficient_scope`: the key lacks the scope the operation (or a filter of it) needs; details.required_scope
     *     - `workspace_suspended`: the workspace of the key is suspended
     */
    Forbidden: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'WWW-Authenticate': components['headers']['WWW-Authenticate-Optional'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "insufficient_scope",
         *         "message": "The API key lacks the scope this operation requires.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "permission_error"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request is invalid. error.code is one of:
     *     - `invalid_query_parameter`: a query parameter is invalid, or is not one this operation takes (unknown query parameter: "Unknown parameter <name>."); details.parameter names it
     *     - `invalid_path_parameter`: a path parameter breaks its schema (e.g. an id that is not a UUID)
     *     - `invalid_header`: a header is refused: an HTTP/1.1 request without Host, a header value with a line break or control character (details.header names it), Content-Length with Transfer-Encoding
     *     - `malformed_request`: the HTTP parser cannot read the request; the connection is closed
     */
    GetBadRequest: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "invalid_query_parameter",
         *         "message": "A query parameter is invalid.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The position is no longer in the feed. error.code is one of:
     *     - `events_expired`: retention deleted events after this position; resynchronize (docs/sync.md)
     */
    Gone: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "events_expired",
         *         "message": "Events after this position were deleted by retention: resynchronize (export the lists, then follow the feed from GET /v2/events/head).",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description Request header fields too large. error.code is one of:
     *     - `headers_too_large`: the request headers or URL are too large for the HTTP parser; the connection is closed
     */
    HeadersTooLarge: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "headers_too_large",
         *         "message": "The request headers or URL are too large.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request is invalid. error.code is one of:
     *     - `invalid_query_parameter`: a query parameter is invalid, or is not one this operation takes (unknown query parameter: "Unknown parameter <name>."); details.parameter names it
     *     - `invalid_cursor`: the cursor was not issued for this workspace, list and filters
     *     - `invalid_header`: a header is refused: an HTTP/1.1 request without Host, a header value with a line break or control character (details.header names it), Content-Length with Transfer-Encoding
     *     - `malformed_request`: the HTTP parser cannot read the request; the connection is closed
     */
    ListBadRequest: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "invalid_query_parameter",
         *         "message": "A query parameter is invalid.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request is invalid. error.code is one of:
     *     - `invalid_query_parameter`: a query parameter is invalid, or is not one this operation takes (unknown query parameter: "Unknown parameter <name>."); details.parameter names it
     *     - `invalid_path_parameter`: a path parameter breaks its schema (e.g. an id that is not a UUID)
     *     - `invalid_cursor`: the cursor was not issued for this workspace, list and filters
     *     - `invalid_header`: a header is refused: an HTTP/1.1 request without Host, a header value with a line break or control character (details.header names it), Content-Length with Transfer-Encoding
     *     - `malformed_request`: the HTTP parser cannot read the request; the connection is closed
     */
    NestedListBadRequest: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "invalid_query_parameter",
         *         "message": "A query parameter is invalid.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description No such resource. error.code is one of:
     *     - `resource_not_found`: no such resource in the workspace of the key
     */
    NotFound: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "resource_not_found",
         *         "message": "No such resource.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "not_found"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request is invalid. error.code is one of:
     *     - `invalid_query_parameter`: a query parameter is invalid, or is not one this operation takes (unknown query parameter: "Unknown parameter <name>."); details.parameter names it
     *     - `invalid_header`: a header is refused: an HTTP/1.1 request without Host, a header value with a line break or control character (details.header names it), Content-Length with Transfer-Encoding
     *     - `malformed_request`: the HTTP parser cannot read the request; the connection is closed
     */
    ReadBadRequest: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "invalid_query_parameter",
         *         "message": "A query parameter is invalid.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description Unexpected error. error.code is one of:
     *     - `internal_error`: an unexpected error, logged with the request id
     */
    ServerError: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "internal_error",
         *         "message": "An unexpected error occurred; it has been logged.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "api_error"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description Service temporarily unavailable; retry after Retry-After. error.code is one of:
     *     - `service_unavailable`: the store cannot be reached or gave up; see Retry-After
     *     - `server_overloaded`: the process is saturated and this key's workspace holds the most of it; see Retry-After
     */
    ServiceUnavailable: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'Retry-After': components['headers']['Retry-After'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "service_unavailable",
         *         "message": "The service is temporarily unavailable; retry after the time in Retry-After.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "api_error"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description Too many requests; nothing was done. error.code is one of:
     *     - `rate_limit_exceeded`: the key is past its rate limit; see Retry-After
     *     - `concurrency_limit_exceeded`: the key already has its number of requests in progress; see Retry-After
     *     - `address_rate_limit_exceeded`: requests without a valid key from this address are past their limit; see Retry-After
     */
    TooManyRequests: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'Retry-After': components['headers']['Retry-After'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "rate_limit_exceeded",
         *         "message": "Too many requests for this API key; retry after the time in Retry-After.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "rate_limit_error"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description No valid API key. error.code is one of:
     *     - `invalid_api_key`: the API key is missing, malformed, unknown, expired or revoked
     */
    Unauthorized: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'WWW-Authenticate': components['headers']['WWW-Authenticate'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "invalid_api_key",
         *         "message": "The API key is missing, malformed, unknown, expired or revoked.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "authentication_error"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request body is invalid. error.code is one of:
     *     - `validation_failed`: the body breaks its schema or a cross-field rule; details.errors lists the problems
     */
    UnprocessableEntity: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "validation_failed",
         *         "message": "The request body is invalid.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "validation_error"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request body is not JSON. error.code is one of:
     *     - `unsupported_media_type`: the body is not application/json
     */
    UnsupportedMediaType: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "unsupported_media_type",
         *         "message": "The request body must be sent with Content-Type: application/json.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request is invalid. error.code is one of:
     *     - `invalid_json`: the body is not JSON: malformed, empty, invalid UTF-8, a lone surrogate
     *     - `idempotency_key_missing`: no Idempotency-Key header
     *     - `idempotency_key_invalid`: Idempotency-Key is not 8 to 128 visible ASCII characters
     *     - `invalid_header`: a header is refused: an HTTP/1.1 request without Host, a header value with a line break or control character (details.header names it), Content-Length with Transfer-Encoding
     *     - `malformed_request`: the HTTP parser cannot read the request; the connection is closed
     */
    WriteBadRequest: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "invalid_json",
         *         "message": "The request body is not valid JSON.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
    /**
     * @description The request is invalid. error.code is one of:
     *     - `invalid_path_parameter`: a path parameter breaks its schema (e.g. an id that is not a UUID)
     *     - `invalid_json`: the body is not JSON: malformed, empty, invalid UTF-8, a lone surrogate
     *     - `idempotency_key_missing`: no Idempotency-Key header
     *     - `idempotency_key_invalid`: Idempotency-Key is not 8 to 128 visible ASCII characters
     *     - `invalid_header`: a header is refused: an HTTP/1.1 request without Host, a header value with a line break or control character (details.header names it), Content-Length with Transfer-Encoding
     *     - `malformed_request`: the HTTP parser cannot read the request; the connection is closed
     */
    WriteByIdBadRequest: {
      headers: {
        'RateLimit-Limit': components['headers']['RateLimit-Limit'];
        'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
        'RateLimit-Reset': components['headers']['RateLimit-Reset'];
        'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
        'X-Request-Id': components['headers']['X-Request-Id'];
        [name: string]: unknown;
      };
      content: {
        /**
         * @example {
         *       "error": {
         *         "code": "invalid_path_parameter",
         *         "message": "A path parameter is invalid.",
         *         "request_id": "req_3kTq9xVb2mR8LwZp",
         *         "type": "invalid_request"
         *       }
         *     }
         */
        'application/json': components['schemas']['Error'];
      };
    };
  };
  parameters: {
    /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
    ConsistencyPosition: string;
    /** @description The opaque page.next_cursor of the previous page, with the same filters. */
    Cursor: string;
    /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
    IdempotencyKey: string;
    /** @description Page size, an integer from 1 to 100 (default 50). */
    Limit: number;
  };
  requestBodies: never;
  headers: {
    /** @description On deployments that serve reads from replicas: this write's position. Send it as the Consistency-Position header of a later read to see this write there (of two tokens, the later write's is the greater string). */
    'Consistency-Position': string;
    /** @description Present and true when this response is the stored response of an earlier request with the same Idempotency-Key. */
    'Idempotent-Replayed': 'true';
    /** @description Path of the created resource (e.g. /v2/contacts/{id}); sent on every 201, replays included. */
    Location: string;
    /** @description The quota: requests per minute of this API key (or, without a valid key, of the client address). */
    'RateLimit-Limit': number;
    /** @description Requests that would pass right now, after this one (the quota refills continuously, one request every 60/limit seconds). */
    'RateLimit-Remaining': number;
    /** @description When the whole quota is available again if no request comes meanwhile (RFC 3339 date-time). */
    'RateLimit-Reset': string;
    /** @description Seconds to wait before retrying: on 429, until the next request passes (rounded up). */
    'Retry-After': number;
    /** @description Seconds to wait before retrying: on 429, until the next request passes (rounded up). */
    'Retry-After-Optional': number;
    /** @description RFC 6750 challenge: Bearer realm="workspace-api", with error="invalid_token" once a key was presented (401), or error="insufficient_scope" and the scope needed (403 for a scope). */
    'WWW-Authenticate': string;
    /** @description RFC 6750 challenge: Bearer realm="workspace-api", with error="invalid_token" once a key was presented (401), or error="insufficient_scope" and the scope needed (403 for a scope). */
    'WWW-Authenticate-Optional': string;
    /** @description Always nosniff: the body is what Content-Type says. */
    'X-Content-Type-Options': 'nosniff';
    /** @description Identifier of this request; equals error.request_id on errors. */
    'X-Request-Id': string;
  };
  pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
  listAppointments: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /**
         * @description Only appointments updated strictly after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        updated_after?: string;
        status?: components['schemas']['AppointmentStatus'];
        /**
         * @description Only appointments starting at or after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        starts_after?: string;
        /**
         * @description Only appointments starting at or before this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        starts_before?: string;
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "contact_id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "created_at": "2026-11-22T06:05:43.123Z",
           *           "ends_at": "2026-11-22T06:05:43.123Z",
           *           "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "source": "website",
           *           "starts_at": "2026-11-22T06:05:43.123Z",
           *           "status": "scheduled",
           *           "timezone": "America/Sao_Paulo",
           *           "updated_at": "2026-11-22T06:05:43.123Z"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['AppointmentPage'];
        };
      };
      400: components['responses']['ListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  getAppointment: {
    parameters: {
      query?: never;
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path: {
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "contact_id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "ends_at": "2026-11-22T06:05:43.123Z",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "source": "website",
           *         "starts_at": "2026-11-22T06:05:43.123Z",
           *         "status": "scheduled",
           *         "timezone": "America/Sao_Paulo",
           *         "updated_at": "2026-11-22T06:05:43.123Z"
           *       }
           *     }
           */
          'application/json': components['schemas']['AppointmentResult'];
        };
      };
      400: components['responses']['GetBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  listAutomations: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /**
         * @description Only items updated strictly after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        updated_after?: string;
        status?: 'active' | 'paused' | 'draft';
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "created_at": "2026-11-22T06:05:43.123Z",
           *           "failure_count": 1,
           *           "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "last_run_at": "2026-11-22T06:05:43.123Z",
           *           "name": "Confirm appointments the day before",
           *           "run_count": 1,
           *           "status": "active",
           *           "success_count": 1,
           *           "trigger_kind": "contact_created",
           *           "updated_at": "2026-11-22T06:05:43.123Z"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['AutomationPage'];
        };
      };
      400: components['responses']['ListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  getAutomation: {
    parameters: {
      query?: never;
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path: {
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "failure_count": 1,
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "last_run_at": "2026-11-22T06:05:43.123Z",
           *         "name": "Confirm appointments the day before",
           *         "run_count": 1,
           *         "status": "active",
           *         "success_count": 1,
           *         "trigger_kind": "contact_created",
           *         "updated_at": "2026-11-22T06:05:43.123Z"
           *       }
           *     }
           */
          'application/json': components['schemas']['AutomationResult'];
        };
      };
      400: components['responses']['GetBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  listCatalogItems: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /**
         * @description Only items updated strictly after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        updated_after?: string;
        kind?: 'product' | 'service';
        /** @description true: only items on offer; false: only retired ones. */
        active?: boolean;
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "active": true,
           *           "created_at": "2026-11-22T06:05:43.123Z",
           *           "currency": "BRL",
           *           "description": "string",
           *           "duration_minutes": 1,
           *           "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "kind": "product",
           *           "name": "Initial consultation",
           *           "price_amount": 15000,
           *           "updated_at": "2026-11-22T06:05:43.123Z"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['CatalogItemPage'];
        };
      };
      400: components['responses']['ListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  getCatalogItem: {
    parameters: {
      query?: never;
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path: {
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "active": true,
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "currency": "BRL",
           *         "description": "string",
           *         "duration_minutes": 1,
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "kind": "product",
           *         "name": "Initial consultation",
           *         "price_amount": 15000,
           *         "updated_at": "2026-11-22T06:05:43.123Z"
           *       }
           *     }
           */
          'application/json': components['schemas']['CatalogItemResult'];
        };
      };
      400: components['responses']['GetBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  listContacts: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /**
         * @description Only contacts updated strictly after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        updated_after?: string;
        /** @description Pipeline stage of the contact. */
        status?: components['schemas']['ContactStatus'];
        /** @description Only contacts with one of these e-mail addresses (up to 100, comma-separated), compared without regard to case. */
        email?: string;
        /** @description Only contacts with one of these phone numbers (E.164, up to 100, comma-separated), compared exactly; send + as %2B. */
        phone?: string;
        /** @description Only contacts with one of these external_id values (up to 100, comma-separated): the contacts of one chunk of a sync in one call. */
        external_id?: string;
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "company_name": "string",
           *           "created_at": "2026-11-22T06:05:43.123Z",
           *           "email": "ana.souza@example.com",
           *           "external_id": "string",
           *           "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "name": "string",
           *           "origin": "string",
           *           "phone": "+5511912345678",
           *           "status": "cold_list",
           *           "updated_at": "2026-11-22T06:05:43.123Z",
           *           "whatsapp": "+5511987654321"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['ContactPage'];
        };
      };
      400: components['responses']['ListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  createContact: {
    parameters: {
      query?: never;
      header: {
        /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
        'Idempotency-Key': components['parameters']['IdempotencyKey'];
      };
      path?: never;
      cookie?: never;
    };
    /** @description Carries the key name or company_name, and at least one of the keys email, phone, whatsapp. */
    requestBody: {
      content: {
        'application/json': components['schemas']['ContactCreate'];
      };
    };
    responses: {
      /** @description Default Response */
      201: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          Location: components['headers']['Location'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "company_name": "string",
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "email": "ana.souza@example.com",
           *         "external_id": "string",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "name": "string",
           *         "origin": "string",
           *         "phone": "+5511912345678",
           *         "status": "cold_list",
           *         "updated_at": "2026-11-22T06:05:43.123Z",
           *         "whatsapp": "+5511987654321"
           *       }
           *     }
           */
          'application/json': components['schemas']['ContactResult'];
        };
      };
      400: components['responses']['WriteBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      409: components['responses']['Conflict'];
      413: components['responses']['BodyTooLarge'];
      415: components['responses']['UnsupportedMediaType'];
      422: components['responses']['UnprocessableEntity'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  batchDeleteContacts: {
    parameters: {
      query?: never;
      header: {
        /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
        'Idempotency-Key': components['parameters']['IdempotencyKey'];
      };
      path?: never;
      cookie?: never;
    };
    /** @description ids, external_ids or both: 1 to 100 values in all, each at most once in its list. */
    requestBody: {
      content: {
        'application/json': components['schemas']['ContactBatchDelete'];
      };
    };
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "counts": {
           *         "deleted": 1,
           *         "not_found": 1
           *       },
           *       "data": [
           *         {
           *           "external_id": "string",
           *           "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "result": "deleted"
           *         }
           *       ]
           *     }
           */
          'application/json': components['schemas']['ContactBatchDeleteResult'];
        };
      };
      400: components['responses']['WriteBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      409: components['responses']['Conflict'];
      413: components['responses']['BodyTooLarge'];
      415: components['responses']['UnsupportedMediaType'];
      422: components['responses']['UnprocessableEntity'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  batchUpsertContacts: {
    parameters: {
      query?: never;
      header: {
        /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
        'Idempotency-Key': components['parameters']['IdempotencyKey'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['ContactBatchUpsert'];
      };
    };
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "counts": {
           *         "created": 1,
           *         "invalid": 1,
           *         "unchanged": 1,
           *         "updated": 1
           *       },
           *       "data": [
           *         {
           *           "contact": {
           *             "company_name": "string",
           *             "created_at": "2026-11-22T06:05:43.123Z",
           *             "email": "ana.souza@example.com",
           *             "external_id": "string",
           *             "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *             "name": "string",
           *             "origin": "string",
           *             "phone": "+5511912345678",
           *             "status": "cold_list",
           *             "updated_at": "2026-11-22T06:05:43.123Z",
           *             "whatsapp": "+5511987654321"
           *           },
           *           "result": "created"
           *         }
           *       ]
           *     }
           */
          'application/json': components['schemas']['ContactBatchUpsertResult'];
        };
      };
      /** @description Default Response */
      207: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "counts": {
           *         "created": 1,
           *         "invalid": 1,
           *         "unchanged": 1,
           *         "updated": 1
           *       },
           *       "data": [
           *         {
           *           "contact": {
           *             "company_name": "string",
           *             "created_at": "2026-11-22T06:05:43.123Z",
           *             "email": "ana.souza@example.com",
           *             "external_id": "string",
           *             "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *             "name": "string",
           *             "origin": "string",
           *             "phone": "+5511912345678",
           *             "status": "cold_list",
           *             "updated_at": "2026-11-22T06:05:43.123Z",
           *             "whatsapp": "+5511987654321"
           *           },
           *           "result": "created"
           *         }
           *       ]
           *     }
           */
          'application/json': components['schemas']['ContactBatchUpsertPartialResult'];
        };
      };
      400: components['responses']['WriteBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      409: components['responses']['Conflict'];
      413: components['responses']['BodyTooLarge'];
      415: components['responses']['UnsupportedMediaType'];
      422: components['responses']['UnprocessableEntity'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  getContactByExternalId: {
    parameters: {
      query?: never;
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path: {
        /** @description Identifier of the contact in the calling system; a "/" in it may be sent raw or as %2F. */
        external_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "company_name": "string",
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "email": "ana.souza@example.com",
           *         "external_id": "string",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "name": "string",
           *         "origin": "string",
           *         "phone": "+5511912345678",
           *         "status": "cold_list",
           *         "updated_at": "2026-11-22T06:05:43.123Z",
           *         "whatsapp": "+5511987654321"
           *       }
           *     }
           */
          'application/json': components['schemas']['ContactResult'];
        };
      };
      400: components['responses']['GetBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  upsertContactByExternalId: {
    parameters: {
      query?: never;
      header: {
        /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
        'Idempotency-Key': components['parameters']['IdempotencyKey'];
      };
      path: {
        /** @description Identifier of the contact in the calling system; a "/" in it may be sent raw or as %2F. */
        external_id: string;
      };
      cookie?: never;
    };
    /** @description Only the properties sent are changed; send null to clear a nullable property. */
    requestBody: {
      content: {
        'application/json': components['schemas']['ContactUpdate'];
      };
    };
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "company_name": "string",
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "email": "ana.souza@example.com",
           *         "external_id": "string",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "name": "string",
           *         "origin": "string",
           *         "phone": "+5511912345678",
           *         "status": "cold_list",
           *         "updated_at": "2026-11-22T06:05:43.123Z",
           *         "whatsapp": "+5511987654321"
           *       }
           *     }
           */
          'application/json': components['schemas']['ContactResult'];
        };
      };
      /** @description Default Response */
      201: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          Location: components['headers']['Location'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "company_name": "string",
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "email": "ana.souza@example.com",
           *         "external_id": "string",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "name": "string",
           *         "origin": "string",
           *         "phone": "+5511912345678",
           *         "status": "cold_list",
           *         "updated_at": "2026-11-22T06:05:43.123Z",
           *         "whatsapp": "+5511987654321"
           *       }
           *     }
           */
          'application/json': components['schemas']['ContactResult'];
        };
      };
      400: components['responses']['WriteByIdBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      409: components['responses']['Conflict'];
      413: components['responses']['BodyTooLarge'];
      415: components['responses']['UnsupportedMediaType'];
      422: components['responses']['UnprocessableEntity'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  deleteContactByExternalId: {
    parameters: {
      query?: never;
      header: {
        /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
        'Idempotency-Key': components['parameters']['IdempotencyKey'];
      };
      path: {
        /** @description Identifier of the contact in the calling system; a "/" in it may be sent raw or as %2F. */
        external_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Deleted: no body. */
      204: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content?: never;
      };
      400: components['responses']['WriteByIdBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      409: components['responses']['Conflict'];
      413: components['responses']['BodyTooLarge'];
      415: components['responses']['UnsupportedMediaType'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  getContact: {
    parameters: {
      query?: never;
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path: {
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "company_name": "string",
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "email": "ana.souza@example.com",
           *         "external_id": "string",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "name": "string",
           *         "origin": "string",
           *         "phone": "+5511912345678",
           *         "status": "cold_list",
           *         "updated_at": "2026-11-22T06:05:43.123Z",
           *         "whatsapp": "+5511987654321"
           *       }
           *     }
           */
          'application/json': components['schemas']['ContactResult'];
        };
      };
      400: components['responses']['GetBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  deleteContact: {
    parameters: {
      query?: never;
      header: {
        /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
        'Idempotency-Key': components['parameters']['IdempotencyKey'];
      };
      path: {
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Deleted: no body. */
      204: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content?: never;
      };
      400: components['responses']['WriteByIdBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      409: components['responses']['Conflict'];
      413: components['responses']['BodyTooLarge'];
      415: components['responses']['UnsupportedMediaType'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  updateContact: {
    parameters: {
      query?: never;
      header: {
        /** @description Unique key of this write, 8 to 128 visible ASCII characters. Retrying with the same key and request returns the first response (marked Idempotent-Replayed: true) for 48 hours; the same key with a different request is 409. */
        'Idempotency-Key': components['parameters']['IdempotencyKey'];
      };
      path: {
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        id: string;
      };
      cookie?: never;
    };
    /** @description Only the properties sent are changed; send null to clear a nullable property. */
    requestBody: {
      content: {
        'application/json': components['schemas']['ContactUpdate'];
      };
    };
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'Consistency-Position': components['headers']['Consistency-Position'];
          'Idempotent-Replayed': components['headers']['Idempotent-Replayed'];
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "company_name": "string",
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "email": "ana.souza@example.com",
           *         "external_id": "string",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "name": "string",
           *         "origin": "string",
           *         "phone": "+5511912345678",
           *         "status": "cold_list",
           *         "updated_at": "2026-11-22T06:05:43.123Z",
           *         "whatsapp": "+5511987654321"
           *       }
           *     }
           */
          'application/json': components['schemas']['ContactResult'];
        };
      };
      400: components['responses']['WriteByIdBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      409: components['responses']['Conflict'];
      413: components['responses']['BodyTooLarge'];
      415: components['responses']['UnsupportedMediaType'];
      422: components['responses']['UnprocessableEntity'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  listConversations: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /**
         * @description Only items updated strictly after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        updated_after?: string;
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        contact_id?: string;
        channel?: 'whatsapp' | 'email' | 'instagram' | 'sms' | 'webchat';
        status?: 'open' | 'closed';
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "channel": "whatsapp",
           *           "contact_id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "created_at": "2026-11-22T06:05:43.123Z",
           *           "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "last_message_at": "2026-11-22T06:05:43.123Z",
           *           "status": "open",
           *           "updated_at": "2026-11-22T06:05:43.123Z"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['ConversationPage'];
        };
      };
      400: components['responses']['ListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  listMessages: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /**
         * @description Only messages created strictly after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        created_after?: string;
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        conversation_id?: string;
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path: {
        /**
         * @description UUID
         * @example 0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41
         */
        contact_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "contact_id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "conversation_id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "created_at": "2026-11-22T06:05:43.123Z",
           *           "direction": "inbound",
           *           "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *           "kind": "text",
           *           "sent_at": "2026-11-22T06:05:43.123Z",
           *           "text": "string",
           *           "updated_at": "2026-11-22T06:05:43.123Z"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['MessagePage'];
        };
      };
      400: components['responses']['NestedListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  listEvents: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /** @description Id of the last event already processed, or the position from GET /v2/events/head: the feed continues right after it. 410 events_expired when retention has deleted events after it. An id of the earlier format evt_<n>_<n> is accepted in a workspace that issued it, and refused like any other id elsewhere. */
        after?: string;
        /** @description Only these event types, comma-separated, e.g. contact.created,contact.deleted. 403 insufficient_scope for a type the key may not read. */
        type?: string;
        /** @description Only events about these resource types, comma-separated, e.g. contact,appointment. One of: workspace, contact, pipeline_stage, appointment, catalog_item, conversation, message, automation. 403 insufficient_scope for a type the key may not read. */
        resource_type?: string;
        /** @description Only events about this resource. */
        resource_id?: string;
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "data": {
           *             "created_at": "2026-11-22T06:05:43.123Z",
           *             "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *             "name": "Clínica Vida",
           *             "status": "active",
           *             "timezone": "America/Sao_Paulo",
           *             "updated_at": "2026-11-22T06:05:43.123Z"
           *           },
           *           "id": "evt_q2Xc0Lw9RkT1mHb7YpZs4A",
           *           "occurred_at": "2026-11-22T06:05:43.123Z",
           *           "request_id": "string",
           *           "resource_id": "string",
           *           "resource_type": "workspace",
           *           "type": "workspace.created"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['EventPage'];
        };
      };
      400: components['responses']['ListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      410: components['responses']['Gone'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  getEventsHead: {
    parameters: {
      query?: never;
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "position": "evt_Vh3kq8XwP0aZr5Ld2NcT7g",
           *         "taken_at": "2026-11-22T06:05:43.123Z"
           *       }
           *     }
           */
          'application/json': components['schemas']['EventsHeadResult'];
        };
      };
      400: components['responses']['ReadBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  listPipelineStages: {
    parameters: {
      query?: {
        /** @description Page size, an integer from 1 to 100 (default 50). */
        limit?: components['parameters']['Limit'];
        /** @description The opaque page.next_cursor of the previous page, with the same filters. */
        cursor?: components['parameters']['Cursor'];
        /**
         * @description Only items updated strictly after this instant.
         * @example 2026-11-22T06:05:43.123Z
         */
        updated_after?: string;
      };
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": [
           *         {
           *           "created_at": "2026-11-22T06:05:43.123Z",
           *           "id": "cold_list",
           *           "name": "Qualified conversation",
           *           "position": 1,
           *           "updated_at": "2026-11-22T06:05:43.123Z"
           *         }
           *       ],
           *       "page": {
           *         "has_more": true,
           *         "limit": 1,
           *         "next_cursor": "string"
           *       }
           *     }
           */
          'application/json': components['schemas']['PipelineStagePage'];
        };
      };
      400: components['responses']['ListBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  getWorkspace: {
    parameters: {
      query?: never;
      header?: {
        /** @description The Consistency-Position of an earlier write's answer: this read sees that write (a replica answers it only once it has applied the write, else the primary does). Anything else is 400 invalid_header. */
        'Consistency-Position'?: components['parameters']['ConsistencyPosition'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Default Response */
      200: {
        headers: {
          'RateLimit-Limit': components['headers']['RateLimit-Limit'];
          'RateLimit-Remaining': components['headers']['RateLimit-Remaining'];
          'RateLimit-Reset': components['headers']['RateLimit-Reset'];
          'X-Content-Type-Options': components['headers']['X-Content-Type-Options'];
          'X-Request-Id': components['headers']['X-Request-Id'];
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "data": {
           *         "created_at": "2026-11-22T06:05:43.123Z",
           *         "id": "0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41",
           *         "name": "Clínica Vida",
           *         "status": "active",
           *         "timezone": "America/Sao_Paulo",
           *         "updated_at": "2026-11-22T06:05:43.123Z"
           *       }
           *     }
           */
          'application/json': components['schemas']['WorkspaceResult'];
        };
      };
      400: components['responses']['ReadBadRequest'];
      401: components['responses']['Unauthorized'];
      403: components['responses']['Forbidden'];
      404: components['responses']['NotFound'];
      429: components['responses']['TooManyRequests'];
      431: components['responses']['HeadersTooLarge'];
      500: components['responses']['ServerError'];
      503: components['responses']['ServiceUnavailable'];
    };
  };
  deliverEvent: {
    parameters: {
      query?: never;
      header: {
        /** @description The event id (evt_…): the same for every attempt and replay of the event. Deduplicate on it. */
        'webhook-id': string;
        /** @description When this attempt was made, in seconds since 1970-01-01T00:00:00Z. */
        'webhook-timestamp': number;
        /** @description v1,<base64 of HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>, where key is the base64-decoded part of the endpoint secret after whsec_ and body is the raw request body. During a secret rotation two signatures, separated by a space: by the new secret, then by the previous one; either one verifying is enough. */
        'webhook-signature': string;
        /** @description Names the sender. */
        'user-agent': 'workspace-public-api-webhooks/1.0 (+https://www.standardwebhooks.com)';
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['Event'];
      };
    };
    responses: {
      /** @description Gone: the endpoint is disabled at once and nothing more is sent to it. */
      410: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      /** @description Acknowledged: the event is not sent again (only a replay by the owner sends it again). */
      '2XX': {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      /** @description Any other answer, a redirect (never followed), no answer within WEBHOOK_TIMEOUT_MS or a failed connection: the event is sent again on the retry schedule (WEBHOOK_RETRY_SCHEDULE); once the schedule is spent the endpoint stops receiving until the owner enables or replays it. Only the status counts. */
      default: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
    };
  };
  deliverWebhookTest: {
    parameters: {
      query?: never;
      header: {
        /** @description The test message id (test_…), also its body id; never an event id. */
        'webhook-id': string;
        /** @description When this attempt was made, in seconds since 1970-01-01T00:00:00Z. */
        'webhook-timestamp': number;
        /** @description v1,<base64 of HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>, where key is the base64-decoded part of the endpoint secret after whsec_ and body is the raw request body. During a secret rotation two signatures, separated by a space: by the new secret, then by the previous one; either one verifying is enough. */
        'webhook-signature': string;
        /** @description Names the sender. */
        'user-agent': 'workspace-public-api-webhooks/1.0 (+https://www.standardwebhooks.com)';
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['WebhookTest'];
      };
    };
    responses: {
      /** @description Acknowledged: the command reports success. */
      '2XX': {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      /** @description Not acknowledged: the command reports the failure; nothing is retried. */
      default: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
    };
  };
}
