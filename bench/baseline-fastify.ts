// Baseline: a bare Fastify server doing the service's database work and nothing else. No API key,
// no rate limit, no validation, no hooks; the same `pg` pool size as the service.
//   GET  /contacts  the list as Fastify recommends writing one: the keyset list SQL of
//                   GET /v1/contacts?limit=50 (same text, timestamps formatted by PostgreSQL,
//                   prepared by name), answered through a response schema (Fastify's compiled
//                   serializer) in the same envelope; its next_cursor is the last item's sort key
//                   in base64url with no check: the service's items, a cursor without its binding
//   POST /contacts  the inserts of POST /v1/contacts in one transaction: the contact (its event
//                   trigger fires as for the service) and the idempotency record, each a round
//                   trip of its own: a fixed form of the service's write (see the route)
// Started by run.ts as a process of its own, configured by environment variables.
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { Type } from 'typebox';
import { CONTACT_COLUMNS } from '../src/modules/contacts/contacts.repository.js';
import { Contact, type ContactT } from '../src/modules/contacts/contacts.schemas.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const LIMIT = 50;
const LIST_SQL = `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE workspace_id = $1
      ORDER BY contacts.updated_at, contacts.id LIMIT $2`;

const listWorkspace = env('LIST_WORKSPACE_ID');
const writeWorkspace = env('WRITE_WORKSPACE_ID');
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: Number(env('POOL_SIZE')) });

const app = Fastify({ logger: false });

app.get('/readyz', async () => {
  await pool.query('SELECT 1');
  return { status: 'ready' };
});

const ListAnswer = Type.Object({
  data: Type.Array(Contact),
  page: Type.Object({
    limit: Type.Integer(),
    has_more: Type.Boolean(),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  }),
});

app.get('/contacts', { schema: { response: { 200: ListAnswer } } }, async () => {
  const { rows } = await pool.query<ContactT>({
    name: 'bare_list',
    text: LIST_SQL,
    values: [listWorkspace, LIMIT + 1],
  });
  const hasMore = rows.length > LIMIT;
  const data = hasMore ? rows.slice(0, LIMIT) : rows;
  const last = data.at(-1);
  return {
    data,
    page: {
      limit: LIMIT,
      has_more: hasMore,
      next_cursor:
        hasMore && last ? Buffer.from(JSON.stringify([last.updated_at, last.id])).toString('base64url') : null,
    },
  };
});

interface ContactBody {
  name: string;
  email: string;
  origin: string;
}

app.post('/contacts', async (request, reply) => {
  const body = request.body as ContactBody;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // The work of POST /v1/contacts in a fixed form: the contact insert unnamed, the record by
    // name, in four round trips. The service sends fewer (its claim with BEGIN; its change, answer
    // and record in one statement with the COMMIT); the baseline keeps this form so that runs of
    // different days compare to the same thing.
    const { rows } = await client.query<ContactT>(
      `INSERT INTO contacts (workspace_id, name, email, origin, status) VALUES ($1, $2, $3, $4, $5)
       RETURNING ${CONTACT_COLUMNS}`,
      [writeWorkspace, body.name, body.email, body.origin, 'cold_list'],
    );
    const response = { data: rows[0] };
    await client.query({
      name: 'bare_idem_store',
      text: `INSERT INTO idempotency_keys (workspace_id, key, request_sha256, status_code, response_body, expires_at)
             VALUES ($1, $2, $3, $4, $5, now() + interval '48 hours')`,
      values: [
        writeWorkspace,
        request.headers['idempotency-key'],
        createHash('sha256').update(JSON.stringify(body)).digest(),
        201,
        JSON.stringify(response),
      ],
    });
    await client.query('COMMIT');
    return reply.code(201).send(response);
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
});

const stop = () => void app.close().then(() => pool.end().then(() => process.exit(0)));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

await app.listen({ port: Number(env('PORT')), host: '127.0.0.1' });
