// The store behind one small interface: PostgreSQL through a `pg` pool in production, PGlite (the
// same PostgreSQL, compiled to WebAssembly, in-process) as the embedded default. Both run the same
// SQL; repositories never know which one they talk to.
import { mkdirSync } from 'node:fs';
import pg from 'pg';
import { PGlite, type Transaction as PGliteTransaction } from '@electric-sql/pglite';
import { destroyConnection, StoreReachability } from './store-reachability.js';

interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  /**
   * Runs one statement. `name` makes PostgreSQL keep the parsed plan per connection (a prepared
   * statement); use it for statements on the hot path whose text never varies and whose best plan
   * does not change with a table's size. A kept plan is replaced when the table is analyzed, which
   * the service does each time a table has doubled (table-statistics.ts), within seconds; a
   * statement whose table can grow from a few rows to many within seconds is sent unnamed.
   */
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[], name?: string): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

/** One statement with its parameters, for the calls that send several at once. */
export interface Statement {
  sql: string;
  params?: readonly unknown[];
  /** as for `Queryable.query`: a prepared statement kept per connection */
  name?: string;
}

/** A transaction in progress: its statements, and the ways to send several of them at once. */
export interface Transaction extends Queryable {
  /**
   * Runs the statements in order, sent together (PostgreSQL: one round trip, each still a
   * statement of its own with bound parameters), and answers each one's result. When one fails,
   * the transaction is aborted and its error is the one thrown.
   */
  queryAll(statements: readonly Statement[]): Promise<QueryResult<Record<string, unknown>>[]>;
  /**
   * Runs `ahead` and `last`, in order, and commits, all sent together: the transaction's last
   * round trip carries its last statements. Answers `last`'s result. The transaction is over when
   * this resolves (committed) or rejects (rolled back, the first failure in statement order the
   * error); the work then returns without running anything else on it.
   */
  commitWith<R = Record<string, unknown>>(last: Statement, ahead?: readonly Statement[]): Promise<QueryResult<R>>;
  /**
   * As `commitWith`, with the statements `work` sends ahead of `last`: typed code (a repository
   * method) sends them through `statements`, all before its first await, and they go with `last`
   * and the COMMIT in one round trip. Answers what `work` answers and `last`'s result.
   */
  commitAfter<T, L = Record<string, unknown>>(
    work: (statements: Pick<Transaction, 'query' | 'queryAll'>) => Promise<T>,
    last: Statement,
  ): Promise<{ work: T; last: QueryResult<L> }>;
}

type StoreKind = 'postgres' | 'embedded';

export interface Database extends Queryable {
  readonly kind: StoreKind;
  /** Runs `work` in one transaction (READ COMMITTED); commits when it resolves, rolls back when it throws. */
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * As `transaction`, with `opening` as the transaction's first statement, sent with its BEGIN
   * (PostgreSQL: one round trip for both); `work` gets its result. A BEGIN that fails (a cancel
   * taken at its start) leaves `opening` to run alone, committed by itself: an opening reads, or
   * takes what lasts only as long as its transaction (locks, settings), and changes nothing.
   */
  transactionFrom<R, T>(opening: Statement, work: (tx: Transaction, opened: QueryResult<R>) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on `channel`; `onLost` runs when the subscription can no longer be trusted. */
  listen(
    channel: string,
    onMessage: (payload: string) => void,
    onLost?: (err: Error) => void,
  ): Promise<() => Promise<void>>;
  /** Connections in use and total, for readiness and metrics. */
  poolStats(): { total: number; idle: number; waiting: number };
  /**
   * Calls `listener` each time PostgreSQL is found not answering (false: requests are refused with
   * 503 from then on) and answering again (true). The embedded store, in the process, never is.
   */
  onReachabilityChange?(listener: (reachable: boolean) => void): void;
  close(): Promise<void>;
}

const STORE_GAVE_UP = new Set(['57P01', '57P02', '57P03', '53300', '57014', '55P03', '25P03', '57P05']);

/** SQLSTATE classes and socket errors that mean "the store is not reachable right now" (answer 503, retry). */
export function isStoreUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) return true;
  // 08: connection exception; 57P01-57P03: admin/crash shutdown, cannot connect now; 53300: too many
  // connections. The database gave up on the statement, its transaction rolled back, nothing written:
  // 57014 cancelled (statement_timeout, pg_cancel_backend), 55P03 lock_timeout, 25P03
  // idle_in_transaction_session_timeout, 57P05 idle_session_timeout. Each can be sent again.
  if (/^08/.test(code) || STORE_GAVE_UP.has(code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

/**
 * Whether PostgreSQL rolled the transaction back whole to break a deadlock or a serialization
 * conflict (SQLSTATE 40P01, 40001): nothing of it was written, and it can run again.
 */
export function isRolledBackConflict(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === '40P01' || code === '40001';
}

/** Attempts in all before a deadlock or serialization conflict reaches the caller. */
const CONFLICT_ATTEMPTS = 5;
/** The wait before the second attempt; it doubles for each one after (with ±50% jitter). */
const CONFLICT_BACKOFF_MS = 20;

/**
 * Runs `attempt` again (up to five times in all) when PostgreSQL aborted it to break a deadlock
 * or a serialization conflict (SQLSTATE 40P01, 40001): such a transaction was rolled back whole,
 * so running it again is safe. Writers of one workspace can deadlock on its sync clock when one
 * of them changes rows in several steps (db/code/03_sync_clock.sql, docs/sync.md).
 *
 * It waits before running again (20, 40, 80, 160 ms, each ±50%): the transaction PostgreSQL let
 * go on must first take the locks the aborted one held. Run again at once on a busy machine, the
 * attempt can take them back first and cross the same transaction again.
 */
export async function retryingConflicts<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= CONFLICT_ATTEMPTS || !isRolledBackConflict(err)) throw err;
    }
    const waitMs = CONFLICT_BACKOFF_MS * 2 ** (n - 1) * (0.5 + Math.random());
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

// ------------------------------------------------------------------------------------------ PostgreSQL

export interface PostgresOptions {
  /** where LISTEN connections go (default: `url`): PostgreSQL itself when `url` leads to a transaction pooler */
  listenUrl?: string;
  /**
   * `url` leads to a pooler in transaction mode (PgBouncer before 1.21, or with prepared statements
   * off), where a prepared statement made on one server connection is missing on the next: every
   * statement is sent unnamed (planned each time), and no startup options are sent (PgBouncer
   * refuses those it does not know; jit is then set on the pooler's connections or the role).
   */
  transactionPooler?: boolean;
}

/** A query configuration's prototype: rows as arrays of values, in the order of the columns. */
const ROWS_AS_ARRAYS: Pick<pg.QueryArrayConfig, 'rowMode'> = { rowMode: 'array' };

/** The function that makes a named statement's row an object, and the columns it was written for. */
const rowObjects = new Map<
  string,
  { columns: readonly string[]; make: (values: unknown[]) => Record<string, unknown> }
>();

/**
 * The rows of the named statement `name` (the hot paths) as objects, by a function written for its
 * columns. The driver's own row objects are filled by one loop shared by every statement, whose
 * property stores V8 cannot specialize once it has seen the shapes of many: measured under the
 * list load, 10 µs a page of 51 rows in the service against 3 µs in a process running that
 * statement alone. A function of its own per statement keeps each one's stores specialized.
 */
function objectsOf(name: string, res: pg.QueryResult): Record<string, unknown>[] {
  const fields = res.fields;
  let known = rowObjects.get(name);
  if (!known || !sameColumns(known.columns, fields)) {
    const columns = fields.map((f) => f.name);
    // The names are the statement's own columns, written as JSON strings; "__proto__" as a
    // computed key, which makes a property of that name where a plain one would set the prototype.
    const members = columns
      .map((column, i) => `${column === '__proto__' ? '["__proto__"]' : JSON.stringify(column)}: values[${i}]`)
      .join(', ');
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    const make = new Function('values', `return { ${members} };`) as (values: unknown[]) => Record<string, unknown>;
    rowObjects.set(name, (known = { columns, make }));
  }
  const rows = res.rows as unknown[][];
  const objects = new Array<Record<string, unknown>>(rows.length);
  for (let i = 0; i < rows.length; i++) objects[i] = known.make(rows[i]!);
  return objects;
}

function sameColumns(columns: readonly string[], fields: readonly pg.FieldDef[]): boolean {
  if (columns.length !== fields.length) return false;
  for (let i = 0; i < fields.length; i++) if (columns[i] !== fields[i]!.name) return false;
  return true;
}

export function createPostgresDatabase(url: string, poolSize: number, options: PostgresOptions = {}): Database {
  const listenUrl = options.listenUrl ?? url;
  /** a statement's name as sent: none behind a transaction pooler */
  const named = options.transactionPooler ? () => undefined : (name?: string) => name;
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: 'workspace-public-api',
    // No just-in-time compilation: the service's statements are short, and PostgreSQL decides to
    // compile from estimated costs, which statistics taken at another size of a table can inflate
    // (the webhook claim can spend 50–800 ms compiling, every run, to read a few hundred rows).
    ...(options.transactionPooler ? {} : { options: '-c jit=off' }),
    // Queries of one client are written without waiting for the answer to the one before: a
    // transaction sends its BEGIN with its first statement, and its last statement with its
    // COMMIT (one round trip each). Code that awaits each query behaves as without it.
    pipeline: true,
  });
  // An idle client that loses its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Every connection of the pool, for the reachability check to close when the database stops
  // answering (store-reachability.ts).
  const connections = new Set<pg.PoolClient>();
  /**
   * Connections not to be used again, with the reason: lost while checked out (server restart,
   * terminated backend), or left unfit by a statement the driver refused (`statement`). A loss is
   * noted by each connection's one listener, attached as the pool opens it, so that it becomes its
   * user's failure, not a crash, whenever the message arrives (it can come in the same socket read
   * that hands the connection over); the user gives the connection back with the reason, and the
   * pool closes it. A checked-out client has no listener of the pool's.
   */
  const unfit = new WeakMap<pg.PoolClient, Error>();
  pool.on('connect', (client) => {
    connections.add(client);
    client.on('error', (err) => unfit.set(client, err));
  });
  pool.on('remove', (client) => connections.delete(client));
  const reachability = new StoreReachability(
    // TCP keepalive: a connection idle between probes is not dropped by a NAT or firewall on the way.
    () => new pg.Client({ connectionString: url, application_name: 'workspace-public-api-probe', keepAlive: true }),
    () => {
      for (const client of connections) destroyConnection(client);
    },
  );

  /**
   * A statement as the driver runs it on `client`, answering `done`; unnamed behind a transaction
   * pooler. Made as the driver's own query object: handed a plain configuration object, the driver
   * copies it property by property (by their descriptors), about 10 µs a statement. A named
   * statement's rows come as arrays, made objects by `objectsOf`: its configuration is an object
   * then, holding only its text and name (the row mode is its prototype's), which costs about 1 µs
   * to copy.
   *
   * The driver can answer a statement twice: a parameter it cannot encode fails the statement as it
   * is written, and the server's answer to what was written reports it again as a success. Only the
   * first answer counts. A failure of the driver's own (not the server's) makes the connection unfit:
   * for a named statement the driver has dropped the server's copy while still listing it as
   * prepared, so the connection is closed when given back.
   */
  const statement = (
    client: pg.PoolClient,
    sql: string,
    params: readonly unknown[] | undefined,
    name: string | undefined,
    done: (err: Error | undefined, res: pg.QueryResult) => void,
  ) => {
    let answered = false;
    const answer = (err: Error | undefined, res: pg.QueryResult) => {
      if (answered) return;
      answered = true;
      if (err) {
        if (!(err instanceof pg.DatabaseError) && !unfit.has(client)) unfit.set(client, err);
      } else if (name !== undefined) res.rows = objectsOf(name, res);
      done(err, res);
    };
    if (name === undefined) return new pg.Query(sql, params as unknown[] | undefined, answer);
    const config = Object.create(ROWS_AS_ARRAYS) as pg.QueryArrayConfig;
    config.text = sql;
    const as = named(name);
    if (as) config.name = as;
    return new pg.Query(config, params as unknown[] | undefined, answer);
  };

  /** A statement's result as the service reads it. */
  const resultOf = <R>(res: pg.QueryResult): QueryResult<R> => ({ rows: res.rows as R[], rowCount: res.rowCount ?? 0 });

  /**
   * Hands `use` a connection of the pool, or `fail` the reason there is none. One obtained after
   * its operation was given up (the database found unreachable meanwhile) goes back unused.
   */
  const connect = (givenUp: () => boolean, fail: (err: Error) => void, use: (client: pg.PoolClient) => void) =>
    pool.connect((err, client) => {
      if (err || !client) return fail(err ?? new Error('no client'));
      if (givenUp()) {
        client.release();
        return fail(new Error('the operation was given up'));
      }
      use(client);
    });
  const checkOut = (givenUp: () => boolean) =>
    new Promise<pg.PoolClient>((resolve, reject) => connect(givenUp, reject, resolve));

  /** Gives a connection back to the pool; one unfit, or that failed as a lost one does, is closed. */
  const giveBack = (client: pg.PoolClient, failure?: unknown) =>
    client.release(unfit.get(client) ?? (isStoreUnavailable(failure) ? (failure as Error) : undefined));

  /**
   * One statement on a connection of its own, as an operation the reachability check watches.
   * Written with the driver's callbacks rather than as an async function: measured under the list
   * load, an async function that awaited its connection and then the statement had every page's
   * rows copied into the old generation, and the process spent three times as long in garbage
   * collection (bench/results/2026-11-29-list-gc.md).
   */
  const queryOnConnection = <R>(sql: string, params?: readonly unknown[], name?: string) =>
    reachability.track(
      (givenUp) =>
        new Promise<QueryResult<R>>((resolve, reject) =>
          connect(givenUp, reject, (client) =>
            client.query(
              statement(client, sql, params, name, (failed, res) => {
                giveBack(client, failed);
                if (failed) reject(failed);
                else resolve(resultOf<R>(res));
              }),
            ),
          ),
        ),
    );

  /** A script on a connection of its own, as an operation the reachability check watches. */
  const execOnConnection = (script: string): Promise<void> =>
    reachability.track(async (givenUp) => {
      const client = await checkOut(givenUp);
      let failure: unknown;
      try {
        await client.query(script);
      } catch (err) {
        failure = err;
        throw err;
      } finally {
        giveBack(client, failure);
      }
    });

  const run = <R>(client: pg.PoolClient, sql: string, params?: readonly unknown[], name?: string) =>
    new Promise<QueryResult<R>>((resolve, reject) => {
      client.query(
        statement(client, sql, params, name, (err, res) => {
          if (err) reject(err);
          else resolve(resultOf<R>(res));
        }),
      );
    });
  // Sends the statements at once (the pool's clients pipeline: each query is written without
  // waiting for the answer to the one before) and waits for every answer, so that none is left
  // unread; the first failure, in statement order, is the one thrown.
  const runAll = async (client: pg.PoolClient, statements: readonly Statement[]) => {
    const settled = await Promise.allSettled(statements.map((st) => run(client, st.sql, st.params, st.name)));
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((r) => (r as PromiseFulfilledResult<QueryResult<Record<string, unknown>>>).value);
  };

  const transaction = <R, T>(
    opening: Statement | null,
    work: (tx: Transaction, opened: QueryResult<R>) => Promise<T>,
  ): Promise<T> => reachability.track((givenUp) => transactionOn(opening, work, givenUp));

  const transactionOn = async <R, T>(
    opening: Statement | null,
    work: (tx: Transaction, opened: QueryResult<R>) => Promise<T>,
    givenUp: () => boolean,
  ): Promise<T> => {
    // Set when the ROLLBACK fails: the connection's session is in an unknown state.
    let broken: Error | undefined;
    const client = await checkOut(givenUp);
    // Set once the last round trip (commitWith) has ended the transaction either way: its COMMIT
    // answered, as COMMIT or as ROLLBACK.
    let ended = false;
    try {
      const opened = opening
        ? ((await runAll(client, [{ sql: 'BEGIN' }, opening]))[1] as QueryResult<R>)
        : (await client.query('BEGIN'), { rows: [], rowCount: 0 });
      const tx: Transaction = {
        query: (sql, params, name) => run(client, sql, params, name),
        exec: async (script) => void (await client.query(script)),
        queryAll: (statements) => runAll(client, statements),
        async commitWith<L>(last: Statement, ahead: readonly Statement[] = []) {
          return (await this.commitAfter<unknown, L>((statements) => statements.queryAll(ahead), last)).last;
        },
        async commitAfter<T, L>(
          work: (statements: Pick<Transaction, 'query' | 'queryAll'>) => Promise<T>,
          last: Statement,
        ) {
          // The driver refuses some statements itself, without sending them: a parameter it cannot
          // encode (it says so at once), a statement name taken by another text or a connection it
          // no longer sends on (it says so on the next tick). A COMMIT sent behind such a statement
          // would commit the transaction without it. So each statement's callback notes a failure,
          // and the COMMIT waits for the tick after the driver's: by then every refusal has been
          // heard (ticks run in the order they were queued), and no answer of the server can have
          // come yet. A statement that reached the server and fails there aborts the transaction,
          // which makes the COMMIT behind it a ROLLBACK. (A turn of the event loop would do too,
          // but the transaction holds its workspace's sync clock meanwhile: db/code/03_sync_clock.sql.)
          let refused = false;
          let sealed = false;
          const sent: Promise<unknown>[] = [];
          const send = <R>(st: Statement) => {
            const answer = new Promise<QueryResult<R>>((resolve, reject) => {
              if (sealed) return reject(new Error("a statement sent after its transaction's last round trip"));
              client.query(
                statement(client, st.sql, st.params, st.name, (err, res) => {
                  if (err) {
                    if (!ended) refused = true;
                    reject(err);
                  } else resolve(resultOf<R>(res));
                }),
              );
            });
            // Awaited below: no failure is left unhandled while the tick passes.
            answer.catch(() => undefined);
            sent.push(answer);
            return answer;
          };
          const worked = work({
            query: <R>(sql: string, params?: readonly unknown[], name?: string) =>
              send<R>({ sql, params: params ?? [], ...(name ? { name } : {}) }),
            queryAll: (statements: readonly Statement[]) =>
              Promise.all(statements.map((st) => send<Record<string, unknown>>(st))),
          });
          worked.catch(() => undefined);
          const lastSent = send<L>(last);
          await new Promise<void>((resolve) => process.nextTick(resolve));
          sealed = true;
          if (!refused) ended = true;
          const pending: Promise<unknown>[] = refused ? sent : [...sent, client.query('COMMIT')];
          const settled = await Promise.allSettled(pending);
          // A COMMIT that failed may have failed before it ran (a cancel that reached the session
          // as the statement ahead of it ended is taken at its start): the transaction is then
          // still open, aborted, and the ROLLBACK below ends it.
          if (!refused && settled.at(-1)!.status === 'rejected') ended = false;
          const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
          if (failed) throw failed.reason;
          if (!refused) {
            const commit = settled.at(-1) as PromiseFulfilledResult<pg.QueryResult>;
            if (commit.value.command !== 'COMMIT') throw new Error(`the transaction ended in ${commit.value.command}`);
          }
          return { work: await worked, last: await lastSent };
        },
      };
      const result = await work(tx, opened);
      if (!ended) {
        // A failure the work did not pass on would have aborted the transaction: its COMMIT then
        // answers ROLLBACK, and nothing of the work was kept.
        const commit = await client.query('COMMIT');
        if (commit.command !== 'COMMIT') throw new Error(`the transaction ended in ${commit.command}`);
      }
      return result;
    } catch (err) {
      if (!ended) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = rollbackErr as Error;
        }
      }
      throw err;
    } finally {
      // Every path above ends the transaction; a session found still inside one would refuse the
      // next user's statements (or run them in this transaction), so it is closed, not given back.
      const stillOpen =
        client.getTransactionStatus() === 'I' ? undefined : new Error('the connection is still inside a transaction');
      client.release(unfit.get(client) ?? broken ?? stillOpen);
    }
  };

  return {
    kind: 'postgres',
    query: queryOnConnection,
    exec: execOnConnection,
    transaction: (work) => transaction(null, work),
    transactionFrom: (opening, work) => transaction(opening, work),
    async listen(channel, onMessage, onLost) {
      // LISTEN needs a connection of its own, outside the pool; its name says what it listens to.
      const client = new pg.Client({
        connectionString: listenUrl,
        application_name: `workspace-public-api-listener ${channel}`,
      });
      let closing = false;
      client.on('notification', (msg) => {
        if (msg.channel === channel) onMessage(msg.payload ?? '');
      });
      const lost = (err: Error) => {
        if (!closing) onLost?.(err);
      };
      client.on('error', lost);
      client.on('end', () => lost(new Error('listener connection ended')));
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      return async () => {
        closing = true;
        await client.end().catch(() => undefined);
      };
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    onReachabilityChange: (listener) => reachability.onChange(listener),
    close: () => {
      reachability.close();
      return pool.end();
    },
  };
}

// ------------------------------------------------------------------------------------------ PGlite

/**
 * PGlite is one session: statements are serialized, and a transaction holds the session until it
 * ends. PGlite's own locks already keep a plain query from running inside another caller's open
 * transaction; the interface is the same as the pool's, so callers need not care.
 */
export async function createEmbeddedDatabase(dataDir: string | null): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir ?? 'memory://');
  let active = 0;
  const track = async <T>(work: () => Promise<T>): Promise<T> => {
    active++;
    try {
      return await work();
    } finally {
      active--;
    }
  };
  const run = async <R>(target: Pick<PGlite, 'query'>, sql: string, params?: readonly unknown[]) => {
    const res = await target.query<R>(sql, params as unknown[] | undefined);
    return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
  };
  // One session, nothing to save by sending statements together: they run one after the other,
  // and PGlite commits when the work returns (or rolls back when it throws).
  const embeddedTransaction = (tx: PGliteTransaction): Transaction => ({
    query: (sql, params) => run(tx, sql, params),
    exec: async (script) => void (await tx.exec(script)),
    async queryAll(statements) {
      const results: QueryResult<Record<string, unknown>>[] = [];
      for (const st of statements) results.push(await run(tx, st.sql, st.params));
      return results;
    },
    async commitWith(last, ahead = []) {
      for (const st of ahead) await run(tx, st.sql, st.params);
      return run(tx, last.sql, last.params);
    },
    async commitAfter(work, last) {
      const statements = {
        query: <R>(sql: string, params?: readonly unknown[]) => run<R>(tx, sql, params),
        async queryAll(list: readonly Statement[]) {
          const results: QueryResult<Record<string, unknown>>[] = [];
          for (const st of list) results.push(await run(tx, st.sql, st.params));
          return results;
        },
      };
      const worked = await work(statements);
      return { work: worked, last: await run(tx, last.sql, last.params) };
    },
  });
  return {
    kind: 'embedded',
    query: (sql, params) => track(() => run(db, sql, params)),
    exec: (script) => track(async () => void (await db.exec(script))),
    transaction: (work) => track(() => db.transaction((tx) => work(embeddedTransaction(tx)))),
    transactionFrom: (opening, work) =>
      track(() =>
        db.transaction(async (tx) => {
          const t = embeddedTransaction(tx);
          return work(t, await t.query(opening.sql, opening.params));
        }),
      ),
    async listen(channel, onMessage) {
      const unsubscribe = await db.listen(channel, onMessage);
      return unsubscribe;
    },
    poolStats: () => ({ total: 1, idle: active === 0 ? 1 : 0, waiting: Math.max(0, active - 1) }),
    close: () => db.close(),
  };
}
