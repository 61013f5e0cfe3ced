// Synthetic but realistic workspace data for demos, tests and benchmarks, written set-based in SQL
// so that a million rows take seconds, not minutes.
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

export interface SeedCounts {
  contacts: number;
  appointments: number;
}

export async function seedContacts(db: Queryable, workspaceId: string, count: number): Promise<number> {
  if (count <= 0) return 0;
  const { rowCount } = await db.query(
    `INSERT INTO contacts (workspace_id, name, company_name, email, phone, whatsapp, origin, status, created_at, updated_at)
     SELECT $1, s.name, s.company, s.email, s.phone, s.whatsapp, s.origin, s.status, s.created_at,
            s.created_at + (random() * (now() - s.created_at))
       FROM (
         SELECT g,
                ($3::text[])[1 + g % cardinality($3::text[])] || ' ' || ($4::text[])[1 + (g / 7) % cardinality($4::text[])] AS name,
                ($5::text[])[1 + (g / 3) % cardinality($5::text[])] AS company,
                CASE WHEN g % 9 = 0 THEN NULL
                     ELSE lower(translate(($3::text[])[1 + g % cardinality($3::text[])], 'ãáéíóúç', 'aaeiouc'))
                          || '.' || g || '.' || substr(md5(random()::text), 1, 6) || '@example.com' END AS email,
                CASE WHEN g % 4 = 0 THEN NULL ELSE '+55119' || lpad((g * 7919 % 100000000)::text, 8, '0') END AS phone,
                CASE WHEN g % 3 = 0 THEN '+55119' || lpad((g * 104729 % 100000000)::text, 8, '0') ELSE NULL END AS whatsapp,
                ($6::text[])[1 + (g / 5) % cardinality($6::text[])] AS origin,
                ($7::text[])[1 + (g * 31) % cardinality($7::text[])] AS status,
                now() - random() * interval '180 days' AS created_at
           FROM generate_series(1, $2::int) AS g
       ) s`,
    [workspaceId, count, FIRST_NAMES, LAST_NAMES, COMPANIES, ORIGINS, [...CONTACT_STATUSES]],
  );
  return rowCount;
}

/** Appointments over every status, most with a start (in the past and the future), many tied to contacts. */
export async function seedAppointments(db: Queryable, workspaceId: string, count: number): Promise<number> {
  if (count <= 0) return 0;
  const { rowCount } = await db.query(
    `WITH pool AS (
       SELECT array_agg(id) AS ids FROM (
         SELECT id FROM contacts WHERE workspace_id = $1 ORDER BY random() LIMIT 5000) c
     ), ws AS (SELECT timezone FROM workspaces WHERE id = $1)
     INSERT INTO appointments (workspace_id, contact_id, starts_at, ends_at, timezone, status, source, created_at, updated_at)
     SELECT $1, a.contact_id, a.starts_at, a.starts_at + (30 + 30 * (a.g % 2)) * interval '1 minute',
            ws.timezone, a.status, a.source, a.created_at, a.created_at + random() * (now() - a.created_at)
       FROM ws, (
         SELECT g,
                CASE WHEN pool.ids IS NULL OR g % 5 = 0 THEN NULL
                     ELSE pool.ids[1 + (g * 13) % cardinality(pool.ids)] END AS contact_id,
                CASE WHEN g % 10 = 0 THEN NULL
                     ELSE date_trunc('hour', now()) + ((g * 7919) % 4000 - 2000) * interval '1 hour'
                          + (g % 4) * interval '15 minutes' END AS starts_at,
                ($3::text[])[1 + g % cardinality($3::text[])] AS status,
                ($4::text[])[1 + (g / 3) % cardinality($4::text[])] AS source,
                now() - random() * interval '120 days' AS created_at
           FROM pool, generate_series(1, $2::int) AS g
       ) a`,
    [workspaceId, count, [...APPOINTMENT_STATUSES], SOURCES],
  );
  return rowCount;
}
