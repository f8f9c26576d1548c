/**
 * Where a pruned provider's state starts (docs/behaviour.md §16.3): the monitor's search for
 * the oldest block whose state a provider still serves, by reading state at chosen blocks. A
 * node prunes from the oldest end, so every block below a refused one is gone and every block
 * above a served one is kept: the search gallops down from the recent blocks every node keeps
 * (most windows sit near the head), then halves the gap, and stops when the edge is found or
 * its budget is spent. What it proved so far is the next search's start, so a search cut short
 * goes on at the next probe.
 */

/** One state read's outcome: served, refused as pruned (with the oldest block named), or failed. */
export type StateRead =
  | { readonly kind: "served" }
  | { readonly kind: "refused"; readonly oldest?: number }
  | { readonly kind: "failed"; readonly error: string };

export interface EdgeSearchStart {
  /** The highest block it is known to have refused (a lesson in force), or null. */
  readonly refused: number | null;
  /** The oldest block it named itself (reth, Erigon, dRPC), or null. */
  readonly named: number | null;
  /** The lowest block a state read proved it keeps (the last probe's), or null. */
  readonly served: number | null;
  /** The block to test when nothing is known: the configured bound, else 1. */
  readonly believed: number;
  /** The newest block that is not among the recent ones every node keeps, or null (no head). */
  readonly top: number | null;
}

export interface EdgeSearchResult {
  /** The highest block refused, or null; `stale`: the lesson's own block was served. */
  readonly refused: number | null;
  readonly stale: boolean;
  /** The oldest block the provider named, when it did and no read contradicted it. */
  readonly named: number | null;
  /** The lowest block served, or null. */
  readonly served: number | null;
  /** What was read, in one line. */
  readonly notes: readonly string[];
}

/** The galloping search's first step below the top, doubled at every block served. */
const FIRST_STRIDE = 64;

export async function searchStateEdge(
  start: EdgeSearchStart,
  read: (block: number) => Promise<StateRead>,
  steps: number,
): Promise<EdgeSearchResult> {
  let left = steps;
  let refused: number | null = null;
  let served = start.served;
  let named = start.named;
  let stale = false;
  const notes: string[] = [];
  /** Reads one block; false when the search must stop (a read failed, or no steps left). */
  const test = async (block: number): Promise<boolean> => {
    if (left <= 0) return false;
    left--;
    const outcome = await read(block);
    if (outcome.kind === "failed") {
      notes.push(`state read at block ${block} failed: ${outcome.error}`);
      return false;
    }
    // A newer read wins over what an older one proved (a window moves with the head).
    if (outcome.kind === "served") {
      served = served === null ? block : Math.min(served, block);
      if (refused !== null && refused >= block) refused = null;
      if (named !== null && block < named) named = null;
      return true;
    }
    refused = refused === null ? block : Math.max(refused, block);
    if (served !== null && served <= block) served = null;
    if (outcome.oldest !== undefined && outcome.oldest > block) {
      named = start.top === null ? outcome.oldest : Math.min(outcome.oldest, start.top);
    }
    return true;
  };

  // What is believed first: the lesson's block (still refused?), else the configured bound.
  if (start.refused !== null) {
    if (!(await test(start.refused))) return finish();
    if (refused === null) {
      stale = true;
      notes.push(`block ${start.refused}, refused before, served`);
    }
  } else if (!(await test(start.believed))) {
    return finish();
  }
  if (refused === null) return finish();
  // The edge the last probe found still served? A window moves with the head.
  if (start.served !== null && start.served > refused && served === start.served) {
    served = null;
    if (!(await test(start.served))) return finish();
  }
  // Its own word on its oldest block, checked with one read, settles it.
  if (named !== null && named > refused && (served === null || served > named)) {
    if (!(await test(named))) return finish();
  }
  if (named !== null && served === named) {
    refused = named - 1;
    return finish();
  }
  if (start.top === null) return finish();
  const bracketed = served !== null && served > refused;
  let high = bracketed ? (served as number) : start.top;
  // With no block proved served yet, gallop down from the top while blocks are served; then
  // halve the gap.
  let stride = FIRST_STRIDE;
  while (!bracketed && high - stride > (refused as number)) {
    const block = high - stride;
    const before = refused;
    if (!(await test(block))) return finish();
    if (refused !== before) break;
    high = block;
    stride *= 2;
  }
  while (high - (refused as number) > 1) {
    const block = Math.floor(((refused as number) + high) / 2);
    if (!(await test(block))) return finish();
    if (served === block) high = block;
  }
  return finish();

  function finish(): EdgeSearchResult {
    const found =
      refused !== null && served !== null && served === refused + 1
        ? `: keeps state from block ${served}`
        : "";
    notes.unshift(
      `${steps - left} state read${steps - left === 1 ? "" : "s"}` +
        (refused === null ? "" : `, refused at ${refused}`) +
        (served === null ? "" : `, served at ${served}`) +
        found,
    );
    return { refused, stale, named, served, notes };
  }
}
