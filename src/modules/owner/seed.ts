// Synthetic but realistic workspace data for demos, tests and benchmarks, written set-based in SQL
// so that a million rows take seconds, not minutes. Internal fields (notes, AI memory, provider
// data, private URLs, automation rules and logs, billing, credentials) are filled too, with
// `internal` when it is given: a marker a test can then look for in every answer.
import type { Queryable } from '../../infra/database.js';
import { APPOINTMENT_STATUSES } from '../appointments/appointments.schemas.js';
import { CONTACT_STATUSES } from '../contacts/contacts.schemas.js';

const FIRST_NAMES = [
  'Ana',
  'Bruno',
  'Carla',
  'Diego',
  'Elena',
  'Felipe',
  'Gabriela',
  'Hugo',
  'Isabel',
  'João',
  'Karina',
  'Lucas',
  'Mariana',
  'Nicolas',
  'Olivia',
  'Paulo',
  'Renata',
  'Sofia',
  'Thiago',
  'Valentina',
];
const LAST_NAMES = [
  'Souza',
  'Oliveira',
  'Santos',
  'Pereira',
  'Costa',
  'Almeida',
  'Ferreira',
  'Ribeiro',
  'Carvalho',
  'Gomes',
  'Martins',
  'Rocha',
  'Lima',
  'Araújo',
  'Barbosa',
  'Cardoso',
];
const COMPANIES = [
  'Acme Ltda',
  'Horizonte Tecnologia',
  'Padaria Estrela',
  'Clínica Vida',
  'Studio Forma',
  'Lopes Advogados',
  'Mercado Bom Preço',
  'Orbital Logística',
  null,
  null,
];
const ORIGINS = ['website', 'whatsapp', 'instagram', 'referral', 'event', 'import', null];
const SOURCES = ['website', 'whatsapp', 'manual', 'calendar_sync', null];
const CATALOG = [
  ['service', 'Initial consultation', 'First visit with assessment and plan.', 15000, 45],
  ['service', 'Follow-up session', 'Review of progress and adjustments.', 9000, 30],
  ['service', 'Extended session', null, 22000, 90],
  ['product', 'Starter kit', 'Everything needed for the first month.', 34990, null],
  ['product', 'Gift card', 'Choose the amount at checkout.', null, null],
  ['product', 'Monthly plan', 'Four sessions a month.', 32000, null],
  ['service', 'Online consultation', 'Video call.', 12000, 40],
  ['product', 'Workbook', null, 5990, null],
] as const;
const AUTOMATIONS = [
  ['Welcome new leads', 'active', 'contact_created'],
  ['Confirm appointments the day before', 'active', 'schedule'],
  ['Follow up after a meeting', 'active', 'appointment_status_changed'],
  ['Reactivate cold contacts', 'paused', 'schedule'],
  ['Answer WhatsApp outside office hours', 'active', 'message_received'],
  ['Notify team on qualified conversation', 'draft', 'contact_status_changed'],
] as const;

export interface SeedAmounts {
  contacts: number;
  appointments: number;
  catalogItems: number;
  conversations: number;
  messagesPerConversation: number;
  automations: number;
}

/** What `seed` creates when no amount is given: every resource, conversations with messages. */
export const DEFAULT_SEED: SeedAmounts = {
  contacts: 25,
  appointments: 15,
  catalogItems: 8,
  conversations: 15,
  messagesPerConversation: 6,
  automations: 6,
};

const internalText = (internal: string | null, fallback: string) =>
  internal === null ? fallback : `${fallback} ${internal}`;

/**
 * Seeds `count` rows of a resource with one INSERT. Its parameters are $1 the workspace, $2 the
 * count, then those `params` gives for the `internal` marker, and last the number of the first
 * row: parts of one seed continue the series (statuses, starts, names).
 */
function insertSeeder(sql: string, params: (internal: string | null) => unknown[]) {
  return async (db: Queryable, workspaceId: string, count: number, internal: string | null = null, first = 1) => {
    if (count <= 0) return 0;
    const { rowCount } = await db.query(sql, [workspaceId, count, ...params(internal), first]);
    return rowCount;
  };
}

/** Contacts with every status, origin and channel mix, some without email or phone. */
export const seedContacts = insertSeeder(
  `INSERT INTO contacts (workspace_id, name, company_name, email, phone, whatsapp, origin, status, notes, ai_memory,
                           created_at, updated_at)
     SELECT $1, s.name, s.company, s.email, s.phone, s.whatsapp, s.origin, s.status, $8::text,
            jsonb_build_object('summary', $9::text, 'preferences', jsonb_build_array($9::text)),
            s.created_at, s.created_at + (random() * (now() - s.created_at))
       FROM (
         SELECT g,
                ($3::text[])[1 + g % cardinality($3::text[])] || ' ' || ($4::text[])[1 + (g / 7) % cardinality($4::text[])] AS name,
                ($5::text[])[1 + (g / 3) % cardinality($5::text[])] AS company,
                CASE WHEN g % 9 = 0 THEN NULL
                     ELSE lower(translate(($3::text[])[1 + g % cardinality($3::text[])], 'ãáéíóúç', 'aaeiouc'))
                          || '.' || g || '.' || substr(md5(random()::text), 1, 6) || '@example.com' END AS email,
                CASE WHEN g % 4 = 0 THEN NULL ELSE '+55119' || lpad((g::bigint * 7919 % 100000000)::text, 8, '0') END AS phone,
                CASE WHEN g % 3 = 0 THEN '+55119' || lpad((g::bigint * 104729 % 100000000)::text, 8, '0') ELSE NULL END AS whatsapp,
                ($6::text[])[1 + (g / 5) % cardinality($6::text[])] AS origin,
                ($7::text[])[1 + (g * 31) % cardinality($7::text[])] AS status,
                now() - random() * interval '180 days' AS created_at
           FROM generate_series($10::int, $10::int + $2::int - 1) AS g
       ) s`,
  (internal) => [
    FIRST_NAMES,
    LAST_NAMES,
    COMPANIES,
    ORIGINS,
    [...CONTACT_STATUSES],
    internalText(internal, 'Prefers calls after 5 pm; price sensitive.'),
    internalText(internal, 'Asked twice about installments.'),
  ],
);

/** Appointments over every status, most with a start (in the past and the future), many tied to contacts. */
export const seedAppointments = insertSeeder(
  `WITH pool AS (
       SELECT array_agg(id) AS ids FROM (
         SELECT id FROM contacts WHERE workspace_id = $1 ORDER BY random() LIMIT 5000) c
     ), ws AS (SELECT timezone FROM workspaces WHERE id = $1)
     INSERT INTO appointments (workspace_id, contact_id, starts_at, ends_at, timezone, status, source, internal_notes,
                               created_at, updated_at)
     SELECT $1, a.contact_id, a.starts_at, a.starts_at + (30 + 30 * (a.g % 2)) * interval '1 minute',
            ws.timezone, a.status, a.source, $5::text, a.created_at, a.created_at + random() * (now() - a.created_at)
       FROM ws, (
         SELECT g,
                CASE WHEN pool.ids IS NULL OR g % 5 = 0 THEN NULL
                     ELSE pool.ids[1 + (g * 13) % cardinality(pool.ids)] END AS contact_id,
                CASE WHEN g % 10 = 0 THEN NULL
                     ELSE date_trunc('hour', now()) + ((g::bigint * 7919) % 4000 - 2000) * interval '1 hour'
                          + (g % 4) * interval '15 minutes' END AS starts_at,
                ($3::text[])[1 + g % cardinality($3::text[])] AS status,
                ($4::text[])[1 + (g / 3) % cardinality($4::text[])] AS source,
                now() - random() * interval '120 days' AS created_at
           FROM pool, generate_series($6::int, $6::int + $2::int - 1) AS g
       ) a`,
  (internal) => [[...APPOINTMENT_STATUSES], SOURCES, internalText(internal, 'Needs the ground-floor room.')],
);

/** The catalog's products and services, repeated with a number past its length; every seventh retired. */
export const seedCatalogItems = insertSeeder(
  `INSERT INTO catalog_items (workspace_id, kind, name, description, price_amount, currency, duration_minutes, active,
                                private_notes, internal_metadata)
     SELECT $1, c.kind, c.name || CASE WHEN g > $3 THEN ' ' || ((g - 1) / $3 + 1) ELSE '' END, c.description,
            c.price, CASE WHEN c.price IS NULL THEN NULL ELSE 'BRL' END, c.duration, g % 7 <> 0,
            $4::text, jsonb_build_object('cost_cents', 4200, 'supplier_note', $5::text)
       FROM generate_series($7::int, $7::int + $2::int - 1) AS g
       JOIN jsonb_to_recordset($6::jsonb) AS c (i int, kind text, name text, description text, price bigint, duration int)
         ON c.i = (g - 1) % $3`,
  (internal) => [
    CATALOG.length,
    internalText(internal, 'Margin 38%; do not discount below 10%.'),
    internalText(internal, 'Supplier renegotiation due in March.'),
    JSON.stringify(
      CATALOG.map(([kind, name, description, price, duration], i) => ({ i, kind, name, description, price, duration })),
    ),
  ],
);

/** Conversations on several channels for existing contacts; returns their ids. */
export async function seedConversations(
  db: Queryable,
  workspaceId: string,
  count: number,
  internal: string | null = null,
): Promise<string[]> {
  if (count <= 0) return [];
  const provider = internalText(internal, 'provider-ref');
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO conversations (workspace_id, contact_id, channel, status, provider, provider_conversation_id,
                                provider_payload, private_url, created_at)
     SELECT $1, c.id, (ARRAY['whatsapp', 'email', 'instagram', 'sms', 'webchat'])[1 + c.n % 5],
            CASE WHEN c.n % 4 = 0 THEN 'closed' ELSE 'open' END,
            $3::text, $3::text || '-' || c.n, jsonb_build_object('raw', $3::text),
            'https://files.internal.example/' || c.n || '?token=' || $3::text, now() - (c.n + 1) * interval '1 day'
       FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n
               FROM contacts WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2) c
     ON CONFLICT (workspace_id, contact_id, channel) DO NOTHING
     RETURNING id`,
    [workspaceId, count, provider],
  );
  return rows.map((r) => r.id);
}

/**
 * Message number `m` of each of these conversations. A message's created_at is the stamp of the
 * transaction that writes it (db/code/03_sync_clock.sql), so a thread written one message number per
 * transaction reads in order, as one that arrived over time.
 */
export async function seedMessages(
  db: Queryable,
  workspaceId: string,
  conversationIds: readonly string[],
  m: number,
  internal: string | null = null,
): Promise<number> {
  if (conversationIds.length === 0) return 0;
  const provider = internalText(internal, 'provider-ref');
  const { rowCount } = await db.query(
    `INSERT INTO messages (workspace_id, conversation_id, contact_id, direction, kind, text, sent_at,
                           provider_message_id, provider_payload, media_private_url)
     SELECT $1, c.id, c.contact_id, CASE WHEN $3::int % 2 = 1 THEN 'inbound' ELSE 'outbound' END,
            CASE WHEN $3::int % 5 = 0 THEN 'image' ELSE 'text' END,
            (ARRAY['Hi! Do you have availability this week?', 'Yes, Thursday at 10:00 or Friday at 15:00.',
                   'Thursday works.', 'Booked. See you Thursday!', 'Here is the address.',
                   'Thanks, see you.'])[1 + ($3::int - 1) % 6],
            c.created_at + $3::int * interval '7 minutes', $4::text || '-' || $3::int, jsonb_build_object('raw', $4::text),
            CASE WHEN $3::int % 5 = 0 THEN 'https://media.internal.example/' || $3::int || '?sig=' || $4::text END
       FROM conversations c
      WHERE c.workspace_id = $1 AND c.id = ANY($2::uuid[])`,
    [workspaceId, conversationIds, m, provider],
  );
  return rowCount;
}

/** Sets each conversation's last_message_at from its messages. */
export async function finishConversations(
  db: Queryable,
  workspaceId: string,
  conversationIds: readonly string[],
): Promise<void> {
  if (conversationIds.length === 0) return;
  await db.query(
    `UPDATE conversations c SET last_message_at = m.last
       FROM (SELECT conversation_id, max(created_at) AS last FROM messages
              WHERE workspace_id = $1 AND conversation_id = ANY($2::uuid[]) GROUP BY conversation_id) m
      WHERE c.workspace_id = $1 AND c.id = m.conversation_id`,
    [workspaceId, conversationIds],
  );
}

/** Automations of every status with their rules and one run log each (one log row per automation). */
export const seedAutomations = insertSeeder(
  `WITH created AS (
     INSERT INTO automations (workspace_id, name, status, trigger_kind, last_run_at, run_count, success_count,
                              failure_count, rules, conditions, actions)
     SELECT $1, a.name || CASE WHEN g > $3 THEN ' ' || ((g - 1) / $3 + 1) ELSE '' END, a.status, a.trigger_kind,
            CASE WHEN a.status = 'draft' THEN NULL ELSE now() - g * interval '3 hours' END,
            CASE WHEN a.status = 'draft' THEN 0 ELSE 40 + g * 7 END,
            CASE WHEN a.status = 'draft' THEN 0 ELSE 38 + g * 7 END,
            CASE WHEN a.status = 'draft' THEN 0 ELSE 2 END,
            jsonb_build_object('rule', $4::text), jsonb_build_array(jsonb_build_object('if', $4::text)),
            jsonb_build_array(jsonb_build_object('send_template', $4::text))
       FROM generate_series($6::int, $6::int + $2::int - 1) AS g
       JOIN jsonb_to_recordset($5::jsonb) AS a (i int, name text, status text, trigger_kind text) ON a.i = (g - 1) % $3
     RETURNING id
   )
   INSERT INTO automation_logs (workspace_id, automation_id, message, details)
   SELECT $1, id, 'run finished: ' || $4::text, jsonb_build_object('trace', $4::text) FROM created`,
  (internal) => [
    AUTOMATIONS.length,
    internalText(internal, 'internal'),
    JSON.stringify(AUTOMATIONS.map(([name, status, trigger_kind], i) => ({ i, name, status, trigger_kind }))),
  ],
);

/** The workspace's own internal data: billing, credentials, notes on its stages. */
export async function seedWorkspaceInternals(
  db: Queryable,
  workspaceId: string,
  internal: string | null = null,
): Promise<void> {
  const text = internalText(internal, 'internal');
  await db.query(
    `UPDATE workspaces SET billing_plan = 'pro ' || $2::text, billing_email = 'billing+' || $2::text || '@example.com',
            internal_notes = $2::text
      WHERE id = $1`,
    [workspaceId, text],
  );
  await db.query(`UPDATE pipeline_stages SET internal_notes = $2::text WHERE workspace_id = $1`, [workspaceId, text]);
  await db.query(
    `INSERT INTO workspace_credentials (workspace_id, provider, secret)
     SELECT $1, p.provider, p.prefix || $2::text
       FROM (VALUES ('whatsapp_cloud', 'tok_'), ('google_calendar', 'refresh_')) AS p (provider, prefix)
      WHERE NOT EXISTS (SELECT 1 FROM workspace_credentials WHERE workspace_id = $1)`,
    [workspaceId, text],
  );
}
