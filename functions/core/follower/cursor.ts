/**
 * The head follower's memory of one network (docs/behaviour.md "Subscriptions over
 * WebSocket", the follower): which block it delivers next, the blocks it delivered that a
 * reorg may still replace, and the lease that lets one run at a time deliver. Pure: every change is a new cursor, written by the store conditional
 * on the version it was read at, so two runs never both claim a block.
 */

/** A delivered block, as far as the follower remembers it. */
export interface RecentBlock {
  readonly number: number;
  /** `blockKey` of its hash. */
  readonly key: string;
}

export interface FollowerCursor {
  /** The first block not claimed yet. */
  readonly next: number;
  /**
   * The first block not delivered to the end: `next` when nothing is in flight; `next - 1`
   * while the block claimed last is being delivered, or when the run delivering it stopped.
   */
  readonly done: number;
  /**
   * With `done = next - 1`: the hash of the claimed block, whose header went to every
   * subscriber and its logs to none yet (a run that stopped while no provider served them; the
   * next run sends them). Null otherwise: then a stopped run left that block half-delivered.
   */
  readonly logsPending: string | null;
  /** When the pending logs were first asked for (ms): the delivery bound counts from there. */
  readonly pendingSince: number;
  /** Delivered blocks a reorg may still replace: consecutive, oldest first, the last `next - 1`. */
  readonly recent: readonly RecentBlock[];
  /** Subscriptions whose catch-up a run claimed and has not finished. */
  readonly catchingUp: readonly string[];
  /** The run holding the lease, and until when (ms). */
  readonly holder: string | null;
  readonly leaseUntil: number;
  /** The version stored: every write is conditional on it and moves it by one (0: never written). */
  readonly version: number;
}

/** Blocks remembered for reorgs (a reorg deeper than this is a finality break). */
export const RECENT_BLOCKS = 64;

/**
 * What the follower keeps of a hash: its first 48 bits, enough to tell two blocks of one
 * height apart, so the cursor stays one write unit's worth smaller.
 */
export function blockKey(hash: string): string {
  return hash.toLowerCase().slice(0, 14);
}

export function sameBlock(hash: string | null | undefined, key: string | undefined): boolean {
  return typeof hash === "string" && key !== undefined && blockKey(hash) === key;
}

/** A network's first cursor: nothing delivered, `next` the first block to deliver. */
export function newCursor(next: number): FollowerCursor {
  return {
    next,
    done: next,
    logsPending: null,
    pendingSince: 0,
    recent: [],
    catchingUp: [],
    holder: null,
    leaseUntil: 0,
    version: 0,
  };
}

/** A change of the cursor; its version moves when it is written (`FollowerStore.writeCursor`). */
const bump = (cursor: FollowerCursor, changes: Partial<FollowerCursor>): FollowerCursor => ({
  ...cursor,
  ...changes,
});

/**
 * The cursor leased to `holder` until `until`; null while another run holds an unexpired
 * lease.
 */
export function leased(
  cursor: FollowerCursor,
  holder: string,
  now: number,
  until: number,
): FollowerCursor | null {
  if (cursor.holder !== null && cursor.holder !== holder && cursor.leaseUntil > now) return null;
  return bump(cursor, { holder, leaseUntil: until });
}

/** The lease given back, with whatever the run left in flight recorded as it is. */
export function released(cursor: FollowerCursor): FollowerCursor {
  return bump(cursor, { holder: null, leaseUntil: 0 });
}

/**
 * What a run that stopped left half-delivered: the block it was delivering (unless only its
 * logs were left, which the next run sends), and the catch-ups it claimed.
 */
export function interrupted(cursor: FollowerCursor): {
  readonly block: number | null;
  readonly catchingUp: readonly string[];
} {
  const inFlight = cursor.done < cursor.next && cursor.logsPending === null;
  return { block: inFlight ? cursor.next - 1 : null, catchingUp: cursor.catchingUp };
}

/** After the subscribers of an interrupted delivery were told (their connections closed). */
export function recovered(cursor: FollowerCursor): FollowerCursor {
  const { block } = interrupted(cursor);
  return bump(cursor, {
    done: block === null ? cursor.done : cursor.next,
    catchingUp: [],
  });
}

/**
 * Claims `block` (the cursor's `next`, or a block of a new branch below it after a reorg):
 * every block before it is delivered, and it is in flight.
 */
export function claimed(cursor: FollowerCursor, block: RecentBlock): FollowerCursor {
  const kept = cursor.recent.filter((recent) => recent.number < block.number);
  const joined = kept.at(-1)?.number === block.number - 1 ? [...kept, block] : [block];
  return bump(cursor, {
    next: block.number + 1,
    done: block.number,
    logsPending: null,
    pendingSince: 0,
    recent: joined.slice(Math.max(0, joined.length - RECENT_BLOCKS)),
  });
}

/**
 * Back to the block after `fork` once a reorg's replaced logs were sent as removed: the new
 * branch is delivered from there, and what was remembered above `fork` is forgotten.
 */
export function rewound(cursor: FollowerCursor, fork: number): FollowerCursor {
  return bump(cursor, {
    next: fork + 1,
    done: fork + 1,
    logsPending: null,
    pendingSince: 0,
    recent: cursor.recent.filter((block) => block.number <= fork),
  });
}

/** The claimed block delivered to the end. */
export function completed(cursor: FollowerCursor): FollowerCursor {
  return bump(cursor, { done: cursor.next, logsPending: null, pendingSince: 0 });
}

/** A run stops with the claimed block's header sent and its logs not: the next run sends them. */
export function logsLeftPending(
  cursor: FollowerCursor,
  hash: string,
  since: number,
): FollowerCursor {
  return bump(cursor, { logsPending: hash, pendingSince: since });
}

/** Catch-ups claimed (before they are sent), or finished (`[]`). */
export function catchingUp(cursor: FollowerCursor, ids: readonly string[]): FollowerCursor {
  return bump(cursor, { catchingUp: ids });
}

/**
 * The cursor moved on to `next` without delivering the blocks before it, because no
 * subscription needs them (none is live, none waits for them). What it remembered of the
 * blocks before is not consecutive with what comes next, so it is dropped.
 */
export function skipped(cursor: FollowerCursor, next: number): FollowerCursor {
  return bump(cursor, { next, done: next, logsPending: null, pendingSince: 0, recent: [] });
}

/**
 * The cursor moved to `next` with nothing remembered: the chain restarted lower (or was
 * replaced below every block remembered).
 */
export function restarted(cursor: FollowerCursor, next: number): FollowerCursor {
  return bump(cursor, {
    next,
    done: next,
    logsPending: null,
    pendingSince: 0,
    recent: [],
    catchingUp: [],
  });
}
