import {
  type ChainHead,
  mayPublish,
  publicationDelayMs,
  reachableHead,
} from "../../chain/chain-head.ts";
import type { Network, Provider } from "../../config/network-model.ts";
import type { StateStore, Telemetry, Upstream } from "../../ports.ts";
import { type NetworkState, quorumInForce } from "../../routing/network-state.ts";
import { type SelectionContext, whyNotCandidate } from "../../routing/selection.ts";
import type { OpenCall, ServedHeadView } from "../vocabulary.ts";
import type { ObservedHeads } from "./observed-head.ts";
import { settleBlockNumbers } from "./served-head.ts";

/**
 * Keeps the served head moving (docs/behaviour.md §10.2), off the request path: after each
 * request this container publishes the highest head a quorum member showed it as a block (in
 * any answer that shows one, `headStatedBy`, a bare `eth_blockNumber` left out), when it may
 * be (higher than the newest publication, a delay after it, within the reachable head); and
 * when nothing was published for half a block time (or a delay, on faster chains) it asks one
 * quorum member for its latest block in the background, so the head moves whatever the
 * traffic. A number alone is not a block: a front whose `eth_blockNumber` ran a few blocks
 * ahead of its blocks held the served head there, above every provider, and every log query
 * up to it failed. Nothing here is awaited by a caller; every try is paced per network and
 * container.
 */

/** The poll's id says whose call it is, in a provider's logs and in tests' fronts. */
export const HEAD_POLL_BODY =
  '{"jsonrpc":"2.0","id":"gateway-head","method":"eth_getBlockByNumber","params":["latest",false]}';
const HEX_QUANTITY = /^0x[0-9a-f]{1,13}$/i;
const HASH = /^0x[0-9a-f]{64}$/i;
const NONE: ReadonlySet<string> = new Set();
const NO_NUMBERS = { answered: null, handedOut: null } as const;
/** A block without its transactions is a few KB (its logs bloom alone is 512 bytes). */
const POLL_MAX_RESPONSE_BYTES = 65_536;

export interface HeadPublisherDeps {
  readonly store: Pick<StateStore, "publishServed">;
  readonly upstream: Upstream;
  readonly clock: () => number;
  readonly random: () => number;
  readonly telemetry: Telemetry;
  readonly observed: ObservedHeads;
  /** Providers this container rotated away from (force-rotate): not asked. */
  readonly demoted: (network: Network, now: number) => ReadonlySet<string>;
}

interface Poll {
  readonly at: number;
  inFlight: boolean;
}

export class HeadPublisher {
  readonly #deps: HeadPublisherDeps;
  /** When this container last tried to publish, per network. */
  readonly #lastTry = new Map<string, number>();
  readonly #polls = new Map<string, Poll>();

  constructor(deps: HeadPublisherDeps) {
    this.#deps = deps;
  }

  /**
   * After a request through the pipeline: its `eth_blockNumber` calls answered with the served
   * head (`settleBlockNumbers`), then what it and this container saw published.
   */
  settleRequest(
    network: Network,
    state: NetworkState,
    checkIntervalSeconds: number,
    calls: { readonly open: readonly OpenCall[]; readonly view: ServedHeadView },
    fromHead: ReadonlySet<OpenCall>,
  ): void {
    const blockTimeMs = network.settings.block_time_seconds * 1000;
    const reachable = reachableHead(state.head, this.#deps.clock(), blockTimeMs);
    const numbers = settleBlockNumbers(calls.open, calls.view, fromHead, reachable);
    this.afterRequest(network, state, checkIntervalSeconds, numbers);
  }

  /**
   * Publishes the highest head this container saw a quorum member show as a block, and polls
   * when the head stood still for half a block time. Of the bare `eth_blockNumber` answers of
   * this request, one handed to a caller as it is (before any publication) is published, since
   * a caller was told it exists; any other only while the monitor's quorum is not in force
   * (then no member's block can be told from another's, and it is the one source left).
   */
  afterRequest(
    network: Network,
    state: NetworkState,
    checkIntervalSeconds: number,
    numbers: { readonly answered: number | null; readonly handedOut: number | null } = NO_NUMBERS,
  ): void {
    const head = state.head;
    // Before the monitor's first chain position there is no reachable head to bound a number.
    if (head === null) return;
    const now = this.#deps.clock();
    // Sightings need no demotions; a poll's choice of member does (computed only then).
    const context: SelectionContext = { network, state, now, checkIntervalSeconds, demoted: NONE };
    const sighted = this.#deps.observed.highestBlock(network, context);
    const numbered = quorumInForce(state, now, checkIntervalSeconds)
      ? numbers.handedOut
      : numbers.answered;
    const seen = Math.max(numbered ?? -1, sighted ?? -1);
    if (seen >= 0) this.#publish(network, head, seen, now);
    this.#pollWhenStill(network, head, context);
  }

  /**
   * Publishes `block`, seen at `seenAt`: judged against the reachable head then (a claim the
   * chain could not have reached when it was made never comes of age while it waits).
   */
  #publish(network: Network, head: ChainHead, block: number, seenAt: number): void {
    const now = this.#deps.clock();
    const delay = publicationDelayMs(network.settings.head_cache_ms);
    // Publications only go forward: one provider's number ahead of the chain would freeze
    // every container's eth_blockNumber at it.
    const reachable = reachableHead(head, seenAt, network.settings.block_time_seconds * 1000);
    if (reachable !== null && block > reachable) return;
    if (!mayPublish(head, block, now, delay)) return;
    // The copy shows this container's own publication only after its next read: without a
    // pace, every answer meanwhile would send one more conditional write (a paid write unit).
    const last = this.#lastTry.get(network.name);
    if (last !== undefined && now - last < delay) return;
    this.#lastTry.set(network.name, now);
    this.#deps.telemetry.count("head_publications", { network: network.name });
    this.#deps.store
      .publishServed(network.name, block, now, delay, head.resetAt ?? 0)
      .catch((error: unknown) =>
        this.#deps.telemetry.log("warn", "served head not published", {
          network: network.name,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
  }

  /**
   * Asks one quorum member for its latest block when nothing was published for half a block
   * time (at least a publication delay: no container publishes more often), plus a share of
   * `head_cache_ms` drawn each time, and this container has not asked within half a block
   * time; one poll in flight per network at most.
   */
  #pollWhenStill(network: Network, head: ChainHead, context: SelectionContext): void {
    const { settings } = network;
    const now = context.now;
    const every = Math.max(
      (settings.block_time_seconds * 1000) / 2,
      publicationDelayMs(settings.head_cache_ms),
    );
    // Containers see each other's publications up to head_cache_ms late: a wait drawn within
    // it keeps them from all asking at once.
    const still = every + this.#deps.random() * settings.head_cache_ms;
    if (now - (head.served?.at ?? 0) < still) return;
    const last = this.#polls.get(network.name);
    if (last !== undefined && now - last.at < (last.inFlight ? settings.request_timeout_ms : every))
      return;
    if (!quorumInForce(context.state, now, context.checkIntervalSeconds)) return;
    const member = this.#memberToAsk(network, {
      ...context,
      demoted: this.#deps.demoted(network, now),
    });
    if (member === null) return;
    void this.#poll(network, head, member, now, settings.request_timeout_ms);
  }

  /**
   * Asks one quorum member for its head now, whatever the pace, and publishes it as a poll's
   * answer is: for the head follower, which looks for a block at the time it is due (docs/
   * behaviour.md "Subscriptions over WebSocket", the follower). The number the member
   * answered, or null (no member to ask, no answer within `timeoutMs`).
   */
  pollNow(
    network: Network,
    state: NetworkState,
    checkIntervalSeconds: number,
    timeoutMs: number,
  ): Promise<number | null> {
    const head = state.head;
    const now = this.#deps.clock();
    if (head === null || !quorumInForce(state, now, checkIntervalSeconds)) {
      return Promise.resolve(null);
    }
    const demoted = this.#deps.demoted(network, now);
    const member = this.#memberToAsk(network, {
      network,
      state,
      now,
      checkIntervalSeconds,
      demoted,
    });
    if (member === null) return Promise.resolve(null);
    return this.#poll(network, head, member, now, timeoutMs);
  }

  async #poll(
    network: Network,
    head: ChainHead,
    member: Provider,
    at: number,
    timeoutMs: number,
  ): Promise<number | null> {
    const poll: Poll = { at, inFlight: true };
    this.#polls.set(network.name, poll);
    this.#deps.telemetry.count("head_polls", { network: network.name });
    const result = await this.#deps.upstream.send({
      url: member.url,
      body: HEAD_POLL_BODY,
      timeoutMs,
      maxResponseBytes: POLL_MAX_RESPONSE_BYTES,
      idempotent: true,
    });
    poll.inFlight = false;
    const block = result.ok ? blockNumberOf(result.body) : null;
    if (block === null) {
      this.#deps.telemetry.count("head_poll_failures", {
        network: network.name,
        provider: member.name,
      });
      return null;
    }
    // Judged as of when it was asked: an answer that took long claims no more for it.
    this.#deps.observed.observe(network.name, member.name, block, at);
    this.#publish(network, head, block, at);
    return block;
  }

  /** A quorum member that is a candidate for `eth_getBlockByNumber`, drawn at random; or null. */
  #memberToAsk(network: Network, context: SelectionContext): Provider | null {
    const members = context.state.quorum?.members ?? [];
    const candidates = network.providers.filter(
      (provider) =>
        members.includes(provider.name) &&
        whyNotCandidate(provider, "eth_getBlockByNumber", context) === null,
    );
    if (candidates.length === 0) return null;
    const index = Math.floor(this.#deps.random() * candidates.length);
    return candidates[Math.min(index, candidates.length - 1)] ?? null;
  }
}

/** The number of the block a poll's answer shows (with its hash), or null for anything else. */
function blockNumberOf(body: string): number | null {
  try {
    const result = (JSON.parse(body) as { result?: unknown })?.result as
      | { number?: unknown; hash?: unknown }
      | null
      | undefined;
    const { number, hash } = result ?? {};
    return typeof number === "string" &&
      HEX_QUANTITY.test(number) &&
      typeof hash === "string" &&
      HASH.test(hash)
      ? Number.parseInt(number, 16)
      : null;
  } catch {
    return null;
  }
}
