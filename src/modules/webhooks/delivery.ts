// The delivery loop each server process runs (WEBHOOK_DELIVERY=on). It turns when a committed change
// wakes it (a notification on WAKE_CHANNEL, sent by the database at commit: db/code/10_webhook_wake.sql),
// when one of its attempts ends, and at every poll interval (retries that came due; and, while no
// subscription holds, events no notification announced):
//   1. enqueue: per endpoint (a disabled or failing one too: its backlog is then visible), in one
//      short transaction holding the endpoint's row (SKIP LOCKED: one process at a time; a held
//      endpoint is looked at again TURN_RETRY_MS later), the events after its position become
//      delivery rows and the position moves on. The feed never places a not-yet-visible event
//      behind a visible one (docs/events.md), so a position never passes an event that commits
//      later.
//   2. claim: due deliveries are leased (a lease of the time limit plus a margin) in one short
//      transaction into slots, endpoints and workspaces in turn, each up to its cap of slots
//      across every process. A slot is one attempt in flight: its deliveries (a run of them when
//      the endpoint answers) are sent one after another, holding no connection.
//   3. settle: 2xx answers are recorded together, one statement for all that arrived meanwhile;
//      anything else schedules the next attempt (with ±20% jitter) and ends the slot's run, until
//      the schedule is spent (the endpoint becomes failing) or the receiver says 410 Gone
//      (disabled at once). A result counts only if this attempt still holds the lease. A process
//      killed mid-attempt leaves a lease that simply expires, and any process takes it again.
import type { WebhookConfig } from '../../config.js';
import type { Database, Queryable } from '../../infra/database.js';
import type { Scope } from '../../shared/scopes.js';
import { MAX_SEQ, type EventIdCodec, type EventPosition } from '../events/event-ids.js';
import { eventsRepository } from '../events/events.repository.js';
import { readableResourceTypes } from '../resources.js';
import { sendOnce, type AttemptResult } from './http-target.js';
import { signatureHeader } from './signing.js';
import type { WebhookMetrics } from './webhook-metrics.js';
import {
  webhooksRepository,
  type Acknowledgement,
  type ClaimedDelivery,
  type Recovered,
} from './webhooks.repository.js';

/** The channel the database wakes delivery processes on; the payload is a workspace id. */
const WAKE_CHANNEL = 'webhook_work';
/** Events turned into deliveries per endpoint and statement; a full batch is followed by another at once. */
const ENQUEUE_BATCH = 1_000;
/**
 * Deliveries a slot of an endpoint that answers takes at a time, sent one after another: a backlog
 * goes out without a claim per event, while the endpoint still has one attempt in flight per slot.
 */
export const RUN_PER_SLOT = 16;
/**
 * How long a slot whose endpoint has a backlog keeps taking its next run: long enough that the
 * claim's cost is spread over many runs, short enough that slots are dealt in turn again soon when
 * other workspaces wait for one.
 */
const SLOT_TENURE_MS = 500;
/** Deliveries a slot takes at a time after its first run: fewer statements that lease, each short. */
const REFILL_SIZE = 4 * RUN_PER_SLOT;
/** How soon a slot asks again for its next run when another statement had the claim's turn. */
const REFILL_RETRY_MS = 2;
/** 2xx answers recorded by one statement at most. */
const ACKS_PER_STATEMENT = 500;
/**
 * The least time between two statements that record 2xx answers while more keep arriving: a
 * backlog's answers are recorded by tens per statement, not a few. The first after a pause goes at
 * once.
 */
const ACK_INTERVAL_MS = 20;
/** How long a lost subscription to WAKE_CHANNEL waits before subscribing again (polls go on meanwhile). */
const RESUBSCRIBE_MS = 1_000;
/**
 * How often every endpoint's feed is looked at while the subscription holds: the notifications
 * announce every event, so this only guards against one lost in a way the connection did not
 * show. Without a subscription, every poll looks.
 */
const SWEEP_INTERVAL_MS = 10_000;
/** A lease outlives the request's time limit by this much, so it never expires under a live attempt. */
const LEASE_MARGIN_MS = 5_000;
/**
 * An endpoint that failed `after` attempts in a row counts as down and backs off as a whole: it is
 * paused for `firstMs` (or the first retry's wait, when shorter), then tried with one attempt at a
 * time, each failed probe doubling the pause up to `maxMs`, until it answers 2xx; then every
 * pending delivery is due at once.
 */
const ENDPOINT_PAUSE = { after: 5, firstMs: 1_000, maxMs: 60_000 };
/** Waits between tries to record an attempt's result while the store cannot be reached: doubling up to maxMs. */
const RECORD_RETRY = { firstMs: 100, maxMs: 1_000 };
/**
 * How soon another turn comes after one that found the claim's turn taken, or an endpoint held by
 * another transaction.
 */
const TURN_RETRY_MS = 10;
/** The least time between two turns started because this process wrote (`nudge`). */
const NUDGE_INTERVAL_MS = 20;
const LAST_SEQ = MAX_SEQ.toString();

interface DeliveryLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface DeliveryDeps {
  db: Database;
  config: WebhookConfig;
  eventIds: () => Promise<EventIdCodec>;
  metrics: WebhookMetrics;
  log: DeliveryLog;
}

const after = (a: EventPosition, b: EventPosition): boolean =>
  BigInt(a[0]) > BigInt(b[0]) || (a[0] === b[0] && BigInt(a[1]) > BigInt(b[1]));

/** Deliveries in feed order (by stamp, then sequence). */
const inFeedOrder = (ds: ClaimedDelivery[]): ClaimedDelivery[] =>
  ds.sort((x, y) =>
    BigInt(x.stamp) < BigInt(y.stamp) || (x.stamp === y.stamp && BigInt(x.seq) < BigInt(y.seq)) ? -1 : 1,
  );

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `write` until it succeeds (the store may be unreachable for a moment), waiting
 * RECORD_RETRY.firstMs after the first failure and twice as long after each next one, up to
 * RECORD_RETRY.maxMs. After a failure, `tryAgain(nextTryAt, err)` says whether the result is still
 * worth recording at that time (a lease still held); when it is not, the failure is thrown.
 */
async function recordRetrying(
  write: () => Promise<void>,
  tryAgain: (nextTryAt: number, err: Error) => boolean,
): Promise<void> {
  for (let wait = RECORD_RETRY.firstMs; ; wait = Math.min(wait * 2, RECORD_RETRY.maxMs)) {
    try {
      return await write();
    } catch (err) {
      if (!tryAgain(Date.now() + wait, err as Error)) throw err;
      await sleep(wait);
    }
  }
}

/** `ms` moved by up to ±20%, so retries of many deliveries that failed together spread out. */
const withJitter = (ms: number): number => Math.round(ms * (0.8 + Math.random() * 0.4));

/** The event type at the head of a stored event text ({"type":"contact.created",…}). */
const eventTypeOf = (feedJson: string): string | null => /^\{"type":"([a-z_]+\.[a-z]+)"/.exec(feedJson)?.[1] ?? null;

/**
 * 2xx answers waiting to be recorded. The first waits for the current tick to end; those that
 * arrive while a statement runs go together in the next one, at most one every `ACK_INTERVAL_MS`. A statement that fails is tried again
 * for as long as the leases of its deliveries allow (the store may be unreachable for a moment): a
 * 2xx recorded is a delivery never sent again. Only a store unreachable until a lease ends leaves
 * that delivery to be sent again.
 */
interface PendingAck {
  ack: Acknowledgement;
  leaseEndsAt: number;
  done: (err?: Error) => void;
}

class AcknowledgementWriter {
  readonly #pending: PendingAck[] = [];
  #writing = false;

  constructor(
    private readonly db: Database,
    private readonly onRecovered: (recovered: Recovered[]) => void,
    private readonly stopped: () => boolean,
  ) {}

  record(ack: Acknowledgement, leaseEndsAt: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ ack, leaseEndsAt, done: (err) => (err ? reject(err) : resolve()) });
      if (this.#writing) return;
      this.#writing = true;
      setImmediate(() => void this.#writeAll());
    });
  }

  async #writeAll(): Promise<void> {
    while (this.#pending.length > 0) {
      const started = Date.now();
      await this.#write(this.#pending.splice(0, ACKS_PER_STATEMENT));
      // Under a steady stream of answers, one statement per interval at most: many answers each.
      const rest = started + ACK_INTERVAL_MS - Date.now();
      if (rest > 0 && this.#pending.length > 0 && this.#pending.length < ACKS_PER_STATEMENT) await sleep(rest);
    }
    this.#writing = false;
  }

  async #write(batch: PendingAck[]): Promise<void> {
    await recordRetrying(
      async () => {
        const acks = batch.map((b) => b.ack);
        const { recovered } = await webhooksRepository.acknowledge(this.db, acks, ENDPOINT_PAUSE.after);
        this.onRecovered(recovered);
        for (const b of batch) b.done();
      },
      (nextTryAt, err) => {
        const kept = batch.filter((b) => !this.stopped() && nextTryAt < b.leaseEndsAt - RECORD_RETRY.maxMs);
        for (const b of batch) if (!kept.includes(b)) b.done(err);
        batch = kept;
        return kept.length > 0;
      },
    ).catch(() => {
      // every answer of the batch has been told of the failure
    });
  }
}

export class WebhookDelivery {
  readonly #deps: DeliveryDeps;
  /** the slots this process runs, each one attempt at a time */
  readonly #slots = new Set<Promise<void>>();
  readonly #acks: AcknowledgementWriter;
  #timer: NodeJS.Timeout | null = null;
  #turn: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  /** when the feed was last turned into deliveries: turns woken by finished attempts only claim */
  #enqueuedAt = 0;
  /** when a failure of a turn or a slot's statement was last logged */
  #warnedAt = 0;
  /** workspaces with a committed change since the last turn: their endpoints are enqueued next */
  #written = new Set<string>();
  /** endpoints whose last enqueue filled a batch: more of their feed is enqueued next turn */
  #behind = new Set<string>();
  #nudgedAt = 0;
  /** whether the last look at every endpoint found one */
  #anyEndpoint = false;
  /** the last turn found the claim's turn taken or an endpoint held: another comes soon */
  #turnAgainSoon = false;
  #unlisten: (() => Promise<void>) | null = null;
  /** whether notifications arrive: then a poll only claims (retries that came due) */
  #subscribed = false;
  #resubscribe: NodeJS.Timeout | null = null;

  constructor(deps: DeliveryDeps) {
    this.#deps = deps;
    this.#acks = new AcknowledgementWriter(
      deps.db,
      (recovered) => {
        for (const r of recovered) {
          deps.log.info(
            { endpoint_id: r.endpoint_id, recovered: r.recovered },
            'webhook receiver answers again: its pending deliveries are due now',
          );
        }
      },
      () => this.#stopped,
    );
  }

  start(): void {
    void this.#subscribe();
    this.#schedule(0);
  }

  /**
   * Stops claiming, then waits for the attempts in flight up to `waitMs`; an attempt still running
   * after it keeps its lease, which expires, and another process delivers it.
   */
  async stop(waitMs: number): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#resubscribe) clearTimeout(this.#resubscribe);
    await this.#unlisten?.().catch(() => undefined);
    let cut: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([this.#turn, ...this.#slots]),
      new Promise((resolve) => {
        cut = setTimeout(resolve, waitMs);
      }),
    ]);
    clearTimeout(cut);
  }

  /** Wake-ups on commit; while the subscription is lost, the polls alone find the work. */
  async #subscribe(): Promise<void> {
    if (this.#stopped) return;
    const lost = () => {
      this.#subscribed = false;
      if (this.#stopped || this.#resubscribe) return;
      this.#resubscribe = setTimeout(() => {
        this.#resubscribe = null;
        void this.#unlisten?.().catch(() => undefined);
        this.#unlisten = null;
        void this.#subscribe();
      }, RESUBSCRIBE_MS);
      this.#resubscribe.unref();
    };
    try {
      this.#unlisten = await this.#deps.db.listen(WAKE_CHANNEL, (workspaceId) => this.nudge(workspaceId), lost);
      if (this.#stopped) return void (await this.#unlisten());
      this.#subscribed = true;
      // What was committed while no notification could arrive: every endpoint is looked at now.
      this.#enqueuedAt = 0;
      this.#wake();
    } catch {
      lost();
    }
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#runTurn(), delayMs);
  }

  /**
   * A change of `workspaceId` was committed: its endpoints' events are enqueued and claimed now
   * rather than at the next poll (at most one such turn every `NUDGE_INTERVAL_MS`).
   */
  nudge(workspaceId: string): void {
    if (this.#stopped) return;
    this.#written.add(workspaceId);
    if (this.#written.size > 1) return; // a turn is already on its way
    if (this.#turn) this.#again = true;
    else this.#schedule(Math.max(0, this.#nudgedAt + NUDGE_INTERVAL_MS - Date.now()));
  }

  /** Another turn as soon as the current one ends: a slot is free (and the next event of a resource
   * it delivered may have become due). */
  #wake(): void {
    if (this.#turn) this.#again = true;
    else this.#schedule(0);
  }

  /**
   * At most one line every 30 s: a store that is down would otherwise log several a second. Only
   * what identifies the failure, as for a request's: a driver's message can name the database's
   * address or carry a statement's values.
   */
  #warn(err: unknown, message: string): void {
    if (Date.now() - this.#warnedAt < 30_000) return;
    this.#warnedAt = Date.now();
    const { name, code } = err as { name?: unknown; code?: unknown };
    this.#deps.log.warn({ error: { name, code } }, message);
  }

  #runTurn(): void {
    if (this.#stopped || this.#turn) return;
    this.#turn = this.#oneTurn()
      // The store is unreachable or a statement failed: the next turn tries again.
      .catch((err: unknown) => this.#warn(err, 'webhook delivery turn failed'))
      .finally(() => {
        this.#turn = null;
        const again = this.#again;
        const soon = this.#turnAgainSoon;
        this.#again = false;
        this.#turnAgainSoon = false;
        this.#schedule(again ? 0 : soon ? TURN_RETRY_MS : this.#deps.config.pollIntervalMs);
      });
  }

  async #oneTurn(): Promise<void> {
    const { db, config } = this.#deps;
    const written = [...this.#written];
    this.#written.clear();
    let endpoints: string[];
    if (Date.now() - this.#enqueuedAt >= (this.#subscribed ? SWEEP_INTERVAL_MS : config.pollIntervalMs)) {
      endpoints = await webhooksRepository.endpointIds(db);
      this.#enqueuedAt = Date.now();
      this.#anyEndpoint = endpoints.length > 0;
    } else if (written.length > 0) {
      this.#nudgedAt = Date.now();
      endpoints = await webhooksRepository.endpointIds(db, written);
      // an endpoint created since the last look at every endpoint
      if (endpoints.length > 0) this.#anyEndpoint = true;
    } else {
      endpoints = [];
    }
    // While there is no endpoint at all, a turn is that one small query.
    if (!this.#anyEndpoint) return;
    // Events just written are enqueued before the claim, so they go out in this turn; the rest of
    // a backlog being enqueued batch by batch waits until the claim has filled the free slots.
    await this.#enqueueAll(endpoints, true);
    await this.#claim();
    await this.#enqueueAll(
      [...this.#behind].filter((id) => !endpoints.includes(id)),
      false,
    );
  }

  /** `claimFollows`: this turn claims after it; otherwise what is enqueued is claimed next turn. */
  async #enqueueAll(endpoints: readonly string[], claimFollows: boolean): Promise<void> {
    for (const id of endpoints) {
      if (this.#stopped) return;
      const outcome = await this.#enqueue(id);
      if (outcome === 'more' || outcome === 'held') this.#behind.add(id);
      else this.#behind.delete(id);
      if (outcome === 'more' || (outcome === 'some' && !claimFollows)) this.#again = true;
      // A held endpoint is looked at again a moment later: what woke this turn may be its only
      // announcement, and the next look at every endpoint is seconds away.
      if (outcome === 'held') this.#turnAgainSoon = true;
    }
  }

  /** Fills this process's free slots, each then run on its own. */
  async #claim(): Promise<void> {
    const { db, config } = this.#deps;
    const free = config.concurrency - this.#slots.size;
    if (free <= 0 || this.#stopped) return;
    const leaseMs = config.timeoutMs + LEASE_MARGIN_MS;
    // Taken before the claim: the lease ends no earlier than this.
    const leaseEndsAt = Date.now() + leaseMs;
    const claimed = await webhooksRepository.claim(db, free, leaseMs, {
      endpoint: config.endpointConcurrency,
      workspace: config.workspaceConcurrency,
      probeAfterFailures: ENDPOINT_PAUSE.after,
      run: RUN_PER_SLOT,
    });
    if (claimed === null) {
      // Another process is claiming: this one's turn comes right after.
      this.#turnAgainSoon = true;
      return;
    }
    const slots = new Map<string, ClaimedDelivery[]>();
    for (const d of claimed) {
      const run = slots.get(d.lease_token);
      if (run) run.push(d);
      else slots.set(d.lease_token, [d]);
    }
    for (const run of slots.values()) {
      const slot = this.#runSlot(run, leaseEndsAt).finally(() => {
        this.#slots.delete(slot);
        this.#wake();
      });
      this.#slots.add(slot);
    }
    // Every free slot filled: there may be more due right away.
    if (slots.size === free) this.#again = true;
  }

  /**
   * The endpoint's feed after its position into deliveries, one batch: 'more' when the batch was
   * full (more of its feed may wait), 'some' or 'none' when it was not, and 'held' when another
   * transaction holds the endpoint (another process enqueuing, an attempt being settled, the
   * owner's command).
   */
  async #enqueue(endpointId: string): Promise<'more' | 'some' | 'none' | 'held'> {
    const { db } = this.#deps;
    return db.transaction(async (tx) => {
      const endpoint = await webhooksRepository.lockForEnqueue(tx, endpointId);
      if (!endpoint) return 'held';
      const readable = readableResourceTypes(new Set(endpoint.scopes as Scope[]));
      const found = await webhooksRepository.enqueue(
        tx,
        endpointId,
        endpoint.workspace_id,
        endpoint.position,
        readable,
        endpoint.event_types,
        ENQUEUE_BATCH,
      );
      if (found.found > 0) {
        // Retention may have deleted events after the position (an endpoint paused for longer than
        // the retention period): they can never be delivered, and the owner must know.
        const problem = await eventsRepository.positionProblem(tx, endpoint.workspace_id, endpoint.position, readable);
        if (problem === 'expired') {
          await webhooksRepository.setStatus(
            tx,
            endpointId,
            'failing',
            'events after its position were deleted by retention before they were delivered; replay after a later event to resume',
            true,
          );
          return 'none';
        }
      }
      let next: EventPosition = found.last ?? endpoint.position;
      const clock: EventPosition = [found.clock, LAST_SEQ];
      if (found.found < ENQUEUE_BATCH && after(clock, next)) next = clock;
      if (after(next, endpoint.position)) await webhooksRepository.movePosition(tx, endpointId, next);
      return found.found === ENQUEUE_BATCH ? 'more' : found.found > 0 ? 'some' : 'none';
    });
  }

  /**
   * A slot's deliveries, one after another, while each is answered 2xx and the lease outlasts
   * another attempt and the recording of its result. A slot whose run was full (a backlog) asks
   * for its next run while it still has some to send, under its own lease, for up to
   * `SLOT_TENURE_MS`: the backlog goes out without a gap, and then the slot ends so the claim
   * deals slots in turn again. What it did not send is released for any process to take. The slot
   * ends once its answers are recorded.
   */
  async #runSlot(run: ClaimedDelivery[], leaseEndsAt: number): Promise<void> {
    const { db, config, log } = this.#deps;
    const leased = (ds: ClaimedDelivery[], endsAt: number) => inFeedOrder(ds).map((d) => ({ d, leaseEndsAt: endsAt }));
    const queue = leased(run, leaseEndsAt);
    const { endpoint_id: endpointId, lease_token: token, probe } = run[0]!;
    const leaseMs = config.timeoutMs + LEASE_MARGIN_MS;
    // Drawn per slot, so slots that started together do not all end together.
    const tenureEndsAt = Date.now() + withJitter(SLOT_TENURE_MS);
    const recorded: Promise<void>[] = [];
    let sent = 0;
    let refillable = run.length >= RUN_PER_SLOT && !probe;
    let refilling: Promise<void> | null = null;
    /** the claim's turn was taken: the next refill waits a moment */
    let turnTaken = false;
    const refill = (): Promise<void> => {
      // Taken before the statement: the new leases end no earlier than this.
      const endsAt = Date.now() + leaseMs;
      return webhooksRepository
        .refill(db, endpointId, token, REFILL_SIZE, leaseMs)
        .then(
          (more) => {
            turnTaken = more === null;
            if (more === null) return;
            queue.push(...leased(more, endsAt));
            // a partial run: the backlog's end is near, and new deliveries are the claim's
            refillable = more.length === REFILL_SIZE;
          },
          (err: unknown) => {
            refillable = false;
            this.#warn(err, 'webhook slot could not take its next run');
          },
        )
        .finally(() => {
          refilling = null;
        });
    };
    try {
      while (!this.#stopped) {
        if (refillable && !refilling && queue.length - sent <= REFILL_SIZE / 2 && Date.now() < tenureEndsAt) {
          if (turnTaken && sent === queue.length) await sleep(REFILL_RETRY_MS);
          refilling = refill();
        }
        if (sent === queue.length) {
          if (!refilling) break;
          await refilling;
          continue;
        }
        const { d, leaseEndsAt } = queue[sent]!;
        if (sent > 0 && Date.now() + config.timeoutMs + RECORD_RETRY.maxMs >= leaseEndsAt) break;
        sent++;
        const answered = await this.#attempt(d, leaseEndsAt);
        if (!answered) break;
        recorded.push(
          answered.recorded.catch((err: unknown) => {
            log.warn(
              { endpoint_id: d.endpoint_id, err: (err as Error).message },
              'webhook attempt could not be recorded before its lease ended; it will be sent again',
            );
          }),
        );
      }
    } catch (err) {
      log.warn(
        { endpoint_id: endpointId, err: (err as Error).message },
        'webhook attempt could not be recorded before its lease ended; it will be sent again',
      );
    } finally {
      refillable = false;
      await refilling;
      await Promise.all(recorded);
      // Not released (the store is unreachable): their lease expires and any process takes them.
      await webhooksRepository
        .releaseUnsent(
          db,
          queue.slice(sent).map((q) => q.d),
        )
        .catch(() => undefined);
    }
  }

  /**
   * One attempt. A 2xx gives the promise of its recording (the slot goes on meanwhile); anything
   * else is recorded before it returns null, and the slot's run stops.
   */
  async #attempt(d: ClaimedDelivery, leaseEndsAt: number): Promise<{ recorded: Promise<void> } | null> {
    const { db, config, metrics, log } = this.#deps;
    const eventId = (await this.#deps.eventIds()).encode(d.workspace_id, [d.stamp, d.seq]);
    if (d.feed_json === null) {
      await db.transaction(async (tx) => {
        await webhooksRepository.setStatus(
          tx,
          d.endpoint_id,
          'failing',
          `event ${eventId} was deleted by retention before it was delivered; replay after a later event to resume`,
          true,
        );
        await webhooksRepository.release(tx, d);
      });
      log.warn({ endpoint_id: d.endpoint_id, event_id: eventId }, 'webhook event deleted by retention before delivery');
      return null;
    }
    // The event as GET /v2/events writes it, built now: data erased since (a deleted contact) is
    // not sent.
    const body = `{"id":"${eventId}",${d.feed_json.slice(1)}`;
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = d.previous_secret ? [d.secret, d.previous_secret] : [d.secret];
    const result = await sendOnce({
      url: d.url,
      body,
      headers: {
        'webhook-id': eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(eventId, timestamp, body, secrets),
      },
      timeoutMs: config.timeoutMs,
      targets: config.targets,
    });
    metrics.attempt(result.outcome, result.durationMs / 1000);
    const attempt = d.attempts + 1;
    log.info(
      {
        endpoint_id: d.endpoint_id,
        event_id: eventId,
        attempt,
        outcome: result.outcome,
        status: result.status,
        duration_ms: result.durationMs,
        ...(result.error ? { error: result.error } : {}),
      },
      'webhook attempt',
    );
    const eventType = eventTypeOf(d.feed_json);
    if (result.outcome === 'acked') {
      return {
        recorded: this.#acks.record(
          { delivery: d, status: result.status!, durationMs: result.durationMs, messageId: eventId, eventType },
          leaseEndsAt,
        ),
      };
    }
    // Recorded while the lease is held, however many tries that takes.
    await recordRetrying(
      () =>
        db.transaction(async (tx) => {
          await this.#settleFailure(tx, d, result, attempt);
          await webhooksRepository.recordAttempt(tx, {
            endpointId: d.endpoint_id,
            messageId: eventId,
            eventType,
            outcome: result.outcome,
            status: result.status,
            durationMs: result.durationMs,
            error: result.error,
          });
        }),
      (nextTryAt) => !this.#stopped && nextTryAt < leaseEndsAt - RECORD_RETRY.maxMs,
    );
    return null;
  }

  async #settleFailure(tx: Queryable, d: ClaimedDelivery, r: AttemptResult, attempt: number): Promise<void> {
    const schedule = this.#deps.config.retryScheduleMs;
    const gone = r.status === 410;
    // A probe leaves the delivery's own schedule as it was: the endpoint's pause governs.
    const spent = !d.probe && attempt > schedule.length;
    await webhooksRepository.holdAgainstEnqueue(tx, d.endpoint_id);
    const held = d.probe
      ? await webhooksRepository.releaseAfterProbe(tx, d, r)
      : await webhooksRepository.reschedule(tx, d, {
          ...r,
          retryInMs: gone || spent ? null : withJitter(schedule[attempt - 1]!),
        });
    if (!held) return;
    const health = await webhooksRepository.recordFailure(tx, d.endpoint_id, d.probe, {
      ...ENDPOINT_PAUSE,
      firstMs: Math.min(schedule[0] ?? ENDPOINT_PAUSE.firstMs, ENDPOINT_PAUSE.firstMs),
    });
    const last = r.status !== null ? `HTTP ${r.status}` : (r.error ?? r.outcome);
    // Failing as long as the whole schedule lasts, whether by one event's retries or by probes.
    const failingMs = Date.now() - Date.parse(health.since);
    const scheduleMs = schedule.reduce((a, b) => a + b, 0);
    if (gone) {
      await webhooksRepository.setStatus(tx, d.endpoint_id, 'disabled', 'the receiver answered 410 Gone', true);
    } else if (spent) {
      await webhooksRepository.setStatus(
        tx,
        d.endpoint_id,
        'failing',
        `last attempt: ${last} after ${attempt} attempts`,
        true,
      );
    } else if (d.probe && failingMs > scheduleMs) {
      await webhooksRepository.setStatus(
        tx,
        d.endpoint_id,
        'failing',
        `last attempt: ${last}; no 2xx since ${health.since} (${health.failures} attempts in a row)`,
        true,
      );
    }
  }
}
