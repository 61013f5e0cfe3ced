// The statements of the webhook delivery loop under a backlog they must not pay for: 100,000
// pending deliveries of one endpoint, with the table's statistics taken while the queue was empty,
// while it was small, or never (autovacuum kept from taking them again), as on a deployment whose
// backlog grew between two ANALYZE runs. The claim's plan (EXPLAIN ANALYZE of the very statement)
// must read a bounded number of delivery rows whether that endpoint is disabled or active, the
// endpoint, re-enabled, must drain claim after claim, and the statements run through one connection
// as a delivering process runs them must not keep a plan made while the queue was small. Runs on
// the store of this run (PostgreSQL: a database of its own per part).
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createPostgresDatabase, type Database } from '../src/infra/database.js';
import {
  CLAIM_SQL,
  LEASE_PLAN_SETTINGS,
  REFILL_SQL,
  claimParams,
  webhooksRepository,
  type Acknowledgement,
  type ClaimedDelivery,
} from '../src/modules/webhooks/webhooks.repository.js';
import { RUN_PER_SLOT } from '../src/modules/webhooks/delivery.js';
import { STORE } from './harness.js';
import { ownTestStore, type OwnTestStore } from './webhooks-support.js';

const BACKLOG = 100_000;
const LIMITS = { endpoint: 4, workspace: 4, probeAfterFailures: 5, run: RUN_PER_SLOT };
const LEASE_MS = 15_000;

let store: OwnTestStore | undefined;
let db: Database;
let backlogged: string;
let other: string;

async function newEndpoint(status: 'active' | 'disabled'): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `WITH w AS (INSERT INTO workspaces (name) VALUES ('claim test') RETURNING id)
     INSERT INTO webhook_endpoints (workspace_id, url, scopes, secret, status, position_stamp, position_seq)
     SELECT id, 'http://127.0.0.1:9/', '{contacts:read}', 'whsec_test', $1, 0, 0 FROM w RETURNING id`,
    [status],
  );
  return rows[0]!.id;
}

/** Pending deliveries of `endpoint`, due now, over `resources` resources (events of one resource go in order). */
async function addPending(endpoint: string, count: number, resources: number, from = 1): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries (endpoint_id, stamp, seq, resource_type, resource_id, next_attempt_at)
     SELECT $1, g, 0, 'contact', 'c' || (g % $3), now() - interval '1 minute'
       FROM generate_series($4::int, $4::int + $2::int - 1) g`,
    [endpoint, count, resources, from],
  );
}

/** 2xx answers to `deliveries`, as a receiver answering at once gives them. */
const answeredAtOnce = (deliveries: ClaimedDelivery[]): Acknowledgement[] =>
  deliveries.map((d) => ({ delivery: d, status: 200, durationMs: 1, messageId: `evt_${d.stamp}`, eventType: null }));

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Delivery rows the claim read (returned by a scan or filtered out), from its EXPLAIN ANALYZE, and its time. */
const explainClaim = (take: number) => explain(CLAIM_SQL, claimParams(take, LEASE_MS, LIMITS));

/**
 * Delivery rows a statement that leases read (returned by a scan or filtered out), from its EXPLAIN
 * ANALYZE under the settings its transaction runs with, and its time.
 */
async function explain(sql: string, params: unknown[]): Promise<{ rowsRead: number; ms: number; plan: string }> {
  const sentinel = new Error('roll back');
  let result: { rowsRead: number; ms: number; plan: string } | undefined;
  await db
    .transaction(async (tx) => {
      await tx.query(`SELECT ${LEASE_PLAN_SETTINGS}`);
      const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
        params,
      );
      const [{ Plan, 'Execution Time': ms }] = rows[0]!['QUERY PLAN'];
      let rowsRead = 0;
      const walk = (n: PlanNode) => {
        if (n['Relation Name'] === 'webhook_deliveries') {
          rowsRead +=
            (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) *
            n['Actual Loops'];
        }
        for (const child of n.Plans ?? []) walk(child);
      };
      walk(Plan);
      result = { rowsRead, ms, plan: JSON.stringify(Plan) };
      throw sentinel;
    })
    .catch((err: unknown) => {
      if (err !== sentinel) throw err;
    });
  return result!;
}

/**
 * A store of its own with BACKLOG pending deliveries of a disabled endpoint and 10 due ones of
 * another, whose webhook_deliveries statistics are those ANALYZE took after `beforeBacklog` ran, or
 * none at all (`analyze` false: a new deployment's table before autovacuum came by). Autovacuum is
 * kept from taking them again after the inserts.
 */
function withBacklog(prefix: string, beforeBacklog: () => Promise<void>, analyze = true): void {
  before(async () => {
    store = await ownTestStore(prefix);
    db = store.db;
    backlogged = await newEndpoint('disabled');
    other = await newEndpoint('active');
    await db.query('ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)');
    await beforeBacklog();
    if (analyze) {
      await db.query('ANALYZE webhook_deliveries');
      await db.query('ANALYZE webhook_endpoints');
    }
    await addPending(backlogged, BACKLOG, 1_000);
    await addPending(other, 10, 10);
  });
  after(async () => {
    await store?.close();
    store = undefined;
  });
}

/** Re-enabled, the backlogged endpoint drains claim after claim, each bounded in rows read and time. */
async function drainsClaimAfterClaim(t: TestContext): Promise<void> {
  await db.query(`UPDATE webhook_endpoints SET status = 'active' WHERE id = $1`, [backlogged]);
  const before = await explainClaim(8);
  assert.ok(before.rowsRead <= 1_000, `the claim read ${before.rowsRead} delivery rows: ${before.plan}`);

  // Each round acknowledges what it claimed, as receivers answering at once would.
  const ms: number[] = [];
  let drained = 0;
  for (let round = 0; round < 200; round++) {
    const started = performance.now();
    const claimed = (await webhooksRepository.claim(db, 8, LEASE_MS, LIMITS))!;
    ms.push(performance.now() - started);
    assert.ok(claimed.length > 0, `round ${round}: nothing claimed`);
    const acks = answeredAtOnce(claimed);
    assert.equal((await webhooksRepository.acknowledge(db, acks, 5)).acked, claimed.length);
    drained += claimed.filter((d) => d.endpoint_id === backlogged).length;
  }
  const afterwards = await explainClaim(8);
  ms.sort((x, y) => x - y);
  const figures = {
    drained,
    claimMs: { p50: +ms[100]!.toFixed(2), max: +ms.at(-1)!.toFixed(2) },
    rowsReadBefore: before.rowsRead,
    rowsReadAfter: afterwards.rowsRead,
  };
  t.diagnostic(`figures ${JSON.stringify(figures)}`);
  assert.ok(drained >= 700, `the backlogged endpoint got ${drained} of 800 claims' deliveries`);
  assert.ok(afterwards.rowsRead <= 1_000, `the claim read ${afterwards.rowsRead} delivery rows: ${afterwards.plan}`);
  // The bound for a claim at this backlog; the plan checks above are what make it hold.
  assert.ok(figures.claimMs.p50 < 50, `a claim took ${figures.claimMs.p50} ms (median)`);
}

describe(`the delivery claim with ${BACKLOG.toLocaleString('en')} pending and statistics of an empty queue (${STORE})`, () => {
  withBacklog('wsapi_webhook_claim', async () => undefined);

  test('a disabled endpoint’s backlog costs the claim nothing: another endpoint’s due deliveries are taken', async (t) => {
    const explained = await explainClaim(8);
    t.diagnostic(`figures ${JSON.stringify({ rowsRead: explained.rowsRead, executionMs: explained.ms })}`);
    assert.ok(explained.rowsRead <= 200, `the claim read ${explained.rowsRead} delivery rows: ${explained.plan}`);
    const claimed = (await webhooksRepository.claim(db, 8, LEASE_MS, LIMITS))!;
    assert.deepEqual(new Set(claimed.map((d) => d.endpoint_id)), new Set([other]), 'only the other endpoint');
    assert.equal(new Set(claimed.map((d) => d.lease_token)).size, 4, 'in as many slots as its cap');
  });

  test('re-enabled, the backlogged endpoint drains claim after claim, each reading a bounded number of rows', (t) =>
    drainsClaimAfterClaim(t));

  test('a slot’s next run keeps its lease token: the endpoint stays at its cap, and a slot with nothing unrecorded gets none', async (t) => {
    await db.query('UPDATE webhook_deliveries SET leased_until = NULL, lease_token = NULL WHERE acked_at IS NULL');
    const slotsOf = async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(DISTINCT lease_token)::int AS n FROM webhook_deliveries
          WHERE endpoint_id = $1 AND acked_at IS NULL AND leased_until > now()`,
        [backlogged],
      );
      return rows[0]!.n;
    };
    const acknowledge = async (ds: ClaimedDelivery[]) => {
      const acks = answeredAtOnce(ds);
      assert.equal((await webhooksRepository.acknowledge(db, acks, 5)).acked, ds.length);
    };
    const claimed = (await webhooksRepository.claim(db, 8, LEASE_MS, LIMITS))!.filter(
      (d) => d.endpoint_id === backlogged,
    );
    const tokens = [...new Set(claimed.map((d) => d.lease_token))];
    assert.equal(tokens.length, 4, 'the backlogged endpoint fills its cap of slots');
    const token = tokens[0]!;

    const refilled = (await webhooksRepository.refill(db, backlogged, token, 32, LEASE_MS))!;
    assert.equal(refilled.length, 32, 'a full next run');
    assert.ok(refilled.every((d) => d.lease_token === token && d.endpoint_id === backlogged));
    const held = new Set(claimed.map((d) => `${d.stamp}/${d.seq}`));
    assert.ok(
      refilled.every((d) => !held.has(`${d.stamp}/${d.seq}`)),
      'none of the deliveries other slots hold',
    );
    assert.equal(await slotsOf(), 4, 'still 4 attempts in flight');
    const more = (await webhooksRepository.claim(db, 8, LEASE_MS, LIMITS))!;
    assert.equal(more.filter((d) => d.endpoint_id === backlogged).length, 0, 'a claim finds no room for it');

    const refill = await explain(REFILL_SQL, [backlogged, tokens[1], 32, LEASE_MS]);
    t.diagnostic(`figures ${JSON.stringify({ refillRowsRead: refill.rowsRead, refillMs: refill.ms })}`);
    assert.ok(refill.rowsRead <= 1_000, `the refill read ${refill.rowsRead} delivery rows: ${refill.plan}`);

    // Every delivery of the slot recorded: it no longer counts, and another claim may take its place.
    await acknowledge([...claimed.filter((d) => d.lease_token === token), ...refilled]);
    assert.deepEqual(
      await webhooksRepository.refill(db, backlogged, token, 32, LEASE_MS),
      [],
      'nothing for a finished slot',
    );
    assert.equal(await slotsOf(), 3);
    const next = (await webhooksRepository.claim(db, 8, LEASE_MS, LIMITS))!.filter((d) => d.endpoint_id === backlogged);
    assert.equal(new Set(next.map((d) => d.lease_token)).size, 1, 'the freed slot, and only it, is dealt again');
    assert.equal(await slotsOf(), 4);

    // A refill takes its turn with the claims: while another statement holds it, none.
    if (db.kind === 'postgres') {
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let taken: () => void = () => undefined;
      const turnTaken = new Promise<void>((resolve) => (taken = resolve));
      const holder = db.transaction(async (tx) => {
        await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('webhook_claim', 0))");
        taken();
        await released;
      });
      await turnTaken;
      assert.equal(await webhooksRepository.refill(db, backlogged, tokens[1]!, 32, LEASE_MS), null);
      release();
      await holder;
    }
  });
});

// Statistics of a queue that had delivered a little, with a few deliveries pending or none: they
// make PostgreSQL expect a handful of pending rows per endpoint, where a scan of the endpoint's
// whole backlog and a sort look as cheap as the scan in due order that stops early. With a few
// pending, the claim's estimated cost is also high enough for PostgreSQL to compile it just in time
// at every run (hundreds of milliseconds each) unless the service's connections turn that off.
for (const pendingAtAnalyze of [30, 0]) {
  describe(`the delivery claim with ${BACKLOG.toLocaleString('en')} pending and statistics of 3,000 delivered and ${pendingAtAnalyze} pending (${STORE})`, () => {
    withBacklog(`wsapi_webhook_claim_small_${pendingAtAnalyze}`, async () => {
      const earlier = await newEndpoint('disabled');
      await addPending(earlier, 3_000, 3_000);
      await db.query('UPDATE webhook_deliveries SET acked_at = now()');
      await addPending(earlier, pendingAtAnalyze, 30, 1_000_000);
    });

    test('re-enabled, the backlogged endpoint drains claim after claim, each reading a bounded number of rows', (t) =>
      drainsClaimAfterClaim(t));
  });
}

// Never analyzed, with as many deliveries acknowledged before the backlog came: PostgreSQL then
// knows the table's size but not how few of its rows are pending, and estimates a handful per
// endpoint, where reading the endpoint's whole backlog and sorting it looks as cheap as the scan in
// due order that stops early.
describe(`the delivery claim with ${BACKLOG.toLocaleString('en')} pending after as many delivered, never analyzed (${STORE})`, () => {
  withBacklog(
    'wsapi_webhook_claim_unanalyzed',
    async () => {
      const earlier = await newEndpoint('disabled');
      await addPending(earlier, BACKLOG, BACKLOG);
      await db.query('UPDATE webhook_deliveries SET acked_at = now()');
    },
    false,
  );

  test('re-enabled, the backlogged endpoint drains claim after claim, each reading a bounded number of rows', (t) =>
    drainsClaimAfterClaim(t));
});

// Probes of an endpoint that keeps failing each put the delivery they tried behind the endpoint's
// other pending ones; the later events of its resource must go behind with it, since the claim
// finds a resource's earlier pending events by due order alone.
describe(`the delivery claim keeps each resource's events in feed order through failed probes (${STORE})`, () => {
  before(async () => {
    store = await ownTestStore('wsapi_webhook_claim_order');
    db = store.db;
  });
  after(async () => {
    await store?.close();
    store = undefined;
  });

  test('probe after probe, no event is tried while an earlier one of its resource is pending', async () => {
    const failing = await newEndpoint('active');
    // events 1..12 over three resources: c1, c2, c0, c1, c2, c0, ...
    await addPending(failing, 12, 3);
    await db.query(
      `INSERT INTO webhook_endpoint_health (endpoint_id, failures_in_a_row, failing_since) VALUES ($1, $2, now())`,
      [failing, LIMITS.probeAfterFailures],
    );
    const resourceOf = (stamp: number) => stamp % 3;
    const tried: number[] = [];
    for (let probe = 0; probe < 12; probe++) {
      const claimed = (await webhooksRepository.claim(db, 8, LEASE_MS, LIMITS))!;
      assert.equal(claimed.length, 1, `probe ${probe}: one delivery at a time`);
      const d = claimed[0]!;
      assert.equal(d.probe, true);
      const stamp = Number(d.stamp);
      const { rows } = await db.query<{ earlier: number }>(
        `SELECT count(*)::int AS earlier FROM webhook_deliveries
          WHERE endpoint_id = $1 AND acked_at IS NULL AND resource_id = $2 AND stamp < $3`,
        [failing, `c${resourceOf(stamp)}`, stamp],
      );
      assert.equal(rows[0]!.earlier, 0, `probe ${probe} tried event ${stamp} after ${tried.join(', ')}`);
      tried.push(stamp);
      assert.ok(await webhooksRepository.releaseAfterProbe(db, d, { status: 500, error: null, durationMs: 1 }));
    }
    // Each probe goes to another resource than the one before it, while there are others.
    assert.deepEqual(
      tried.slice(0, 3).map(resourceOf).sort(),
      [0, 1, 2],
      `the first three probes try three resources: ${tried.join(', ')}`,
    );
  });
});

// The statements of delivery over a queue that grows from a few rows to 100,000 between two ANALYZE
// runs, through one connection as a delivering process uses its own: a plan PostgreSQL kept from
// when the queue was small (a prepared statement's generic plan: a sequential scan, or a bitmap
// scan of the endpoint's whole backlog) would read every row at each run. Rows read are the
// table's counters (sequential and index fetches) around each statement.
describe(`the delivery statements after the queue grew from 20 to ${BACKLOG.toLocaleString('en')} pending, never analyzed (${STORE})`, () => {
  let oneConnection: Database;
  before(async () => {
    store = await ownTestStore('wsapi_webhook_claim_grown');
    db = store.db;
    oneConnection = store.url ? createPostgresDatabase(store.url, 1) : db;
    await oneConnection.query('SET stats_fetch_consistency = none');
    await db.query('ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)');
  });
  after(async () => {
    if (oneConnection !== db) await oneConnection.close();
    await store?.close();
    store = undefined;
  });

  /** Rows of webhook_deliveries `work` read, by the table's counters once this connection reported them. */
  async function rowsReadBy(work: () => Promise<unknown>): Promise<number> {
    const read = async () => {
      await oneConnection.query('SELECT pg_stat_force_next_flush()');
      const { rows } = await oneConnection.query<{ n: string }>(
        `SELECT (seq_tup_read + coalesce(idx_tup_fetch, 0))::text AS n FROM pg_stat_user_tables
          WHERE relname = 'webhook_deliveries'`,
      );
      return Number(rows[0]!.n);
    };
    const before = await read();
    await work();
    return (await read()) - before;
  }

  test('claim, next run, release and acknowledgement each read a bounded number of rows', async (t) => {
    // A history of deliveries made, as a deployment has: the table's size, without pending rows.
    const earlier = await newEndpoint('disabled');
    await addPending(earlier, BACKLOG, BACKLOG);
    await db.query('UPDATE webhook_deliveries SET acked_at = now()');
    const endpoint = await newEndpoint('active');
    await addPending(endpoint, 20, 20);
    const round = async () => {
      const read = { claim: 0, refill: 0, releaseUnsent: 0, acknowledge: 0 };
      let claimed: ClaimedDelivery[] = [];
      read.claim = await rowsReadBy(async () => {
        claimed = (await webhooksRepository.claim(oneConnection, 8, LEASE_MS, LIMITS))!;
      });
      assert.ok(claimed.length > 0, 'a claim takes deliveries');
      let refilled: ClaimedDelivery[] = [];
      read.refill = await rowsReadBy(async () => {
        refilled = (await webhooksRepository.refill(oneConnection, endpoint, claimed[0]!.lease_token, 32, LEASE_MS))!;
      });
      read.releaseUnsent = await rowsReadBy(() => webhooksRepository.releaseUnsent(oneConnection, refilled));
      const acks = answeredAtOnce(claimed);
      read.acknowledge = await rowsReadBy(async () => {
        assert.equal((await webhooksRepository.acknowledge(oneConnection, acks, 5)).acked, claimed.length);
      });
      return read;
    };
    // As many rounds as make PostgreSQL keep a generic plan of each prepared statement.
    for (let i = 0; i < 8; i++) {
      await round();
      await addPending(endpoint, 20, 20, 1_000 * (i + 1));
    }
    await addPending(endpoint, BACKLOG, 1_000, 1_000_000);
    const grown = [await round(), await round(), await round()];
    t.diagnostic(`figures ${JSON.stringify(grown)}`);
    for (const read of grown) {
      assert.ok(read.claim > 0, "the table's counters report the rows read");
      for (const [statement, rows] of Object.entries(read)) {
        assert.ok(rows <= 2_000, `${statement} read ${rows} delivery rows with ${BACKLOG} pending`);
      }
    }
  });
});
