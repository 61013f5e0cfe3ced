// generated — do not edit. Source: docs/openapi/v1.json (the published v1 interface description).
// Regenerate with: node --import tsx clients/typescript/generate.ts
export interface paths {
  '/v1/appointments': {
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
  '/v1/appointments/{id}': {
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
  '/v1/contacts': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List contacts
     * @description Contacts ordered by (updated_at, id) ascending. Page with page.next_cursor; for incremental sync pass the updated_at of the last contact you stored as updated_after. A query parameter this operation does not list is refused: 400 invalid_query_parameter (unknown query parameter), never ignored.
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
  '/v1/contacts/external/{external_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    /**
     * Create or update a contact by external identifier
     * @description 201 (with Location) when no contact of this workspace had the external_id and one was created; 200 when the existing contact was updated. Concurrent upserts of one external_id end in one contact. An external_id containing "/" may be sent raw or percent-encoded (%2F): both address the same contact.
     */
    put: operations['upsertContactByExternalId'];
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/v1/contacts/{id}': {
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
    delete?: never;
    options?: never;
    head?: never;
    /**
     * Update a contact
     * @description Changes only the properties sent; updated_at moves only when a value changes.
     */
    patch: operations['updateContact'];
    trace?: never;
  };
}
export type webhooks = Record<string, never>;
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
    AppointmentPage: {
      data: components['schemas']['Appointment'][];
      page: components['schemas']['PageInfo'];
    };
    AppointmentResult: {
      data: components['schemas']['Appointment'];
    };
    /** @enum {string} */
    AppointmentStatus: 'scheduled' | 'confirmed' | 'cancelled' | 'rescheduled' | 'completed' | 'no_show';
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
}
