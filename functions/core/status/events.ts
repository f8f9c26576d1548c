/**
 * The operator's history of a network: what happened to which provider, when and why. Events
 * are recorded where they happen (the proxy on the failure paths that already write state,
 * the monitor on every verdict that changes something) and shown newest first on the status
 * route. Everything here is pure: building an event (its free text scrubbed and bounded),
 * merging lists newest first, the view the status JSON shows, and the rules that turn a new
 * quorum, head or config into events.
 */

import type { QuorumReason } from "../chain/quorum.ts";
import type { Config } from "../config/config-schema.ts";
import type { ConfigSourceInfo } from "../config/network-model.ts";
import { fingerprint, type GatewayModel } from "../config/network-model.ts";

export type EventKind =
  /** An incident blacklisted the provider (reason: the cooldown reason). */
  | "blacklisted"
  /** One method of the provider is blacklisted (detail names it). */
  | "capability_blacklisted"
  /** Unclassified errors in a row moved traffic away from the provider. */
  | "force_rotated"
  /** The recovery probe failed: blacklisted again (reason: the blacklist it was under). */
  | "probe_failed"
  /** The recovery probe passed: back in service (reason: the blacklist it was under). */
  | "probe_passed"
  /** The monitor's quorum left the provider out (reason: the quorum reason). */
  | "quorum_excluded"
  /** The provider is back in the quorum (reason: why it had been out). */
  | "quorum_rejoined"
  /** A new config came into force (reason: its source; detail: the ETag). */
  | "config_changed"
  /** The quorum head has not moved for too many block times. */
  | "head_stalled"
  /** The quorum head moves again after a stall. */
  | "head_resumed"
  /**
   * A log answer of the provider was missing data its block's header commits to (reason:
   * `missing_data`, a bloom hit the receipts confirmed, or `stale_log`, a log of another block
   * hash); at most one per provider every few minutes (docs/behaviour.md §12.12).
   */
  | "logs_missing_data"
  /** The chain position reset to the quorum's: a restarted chain or a finality break (reason). */
  | "chain_reset"
  /**
   * Providers answered a read consensus call differently and no answer had a majority (detail:
   * the block and each answer's digest); at most one a minute per network and container
   * (docs/behaviour.md §17.5).
   */
  | "consensus_disputed"
  /** Found in consensus's minority too often: left out of consensus routing for a while. */
  | "consensus_sat_out";

export interface GatewayEvent {
  readonly network: string;
  /** When it happened (ms since the epoch). */
  readonly at: number;
  /** The provider it happened to; null for the network as a whole. */
  readonly provider: string | null;
  readonly kind: EventKind;
  readonly reason: string;
  readonly detail: string;
}

/** An event as stored: `id` orders events of the same millisecond and tells copies apart. */
export interface StoredEvent extends GatewayEvent {
  readonly id: string;
}

/** One entry of the status JSON's `events` (newest first). */
export interface EventStatus {
  readonly at: string;
  readonly provider: string | null;
  readonly kind: EventKind;
  readonly reason: string;
  readonly detail: string;
}

/** The status shows at most this many events per network. */
export const EVENTS_SHOWN = 100;

/**
 * Free text is cut to these lengths: details quote upstream answers, which can be long, and
 * every event is read by every status request.
 */
export const EVENT_REASON_MAX_CHARS = 100;
export const EVENT_DETAIL_MAX_CHARS = 400;

/** Where events go; recording never throws and never makes its caller wait. */
export interface EventSink {
  record(event: GatewayEvent): void;
}

/** What the monitor does with the event log besides recording. */
export interface EventLog extends EventSink {
  /** Resolves once every event recorded so far is written or given up. Never rejects. */
  settled(): Promise<void>;
  /** Keeps the newest `keep` events of the network; older ones expire. */
  tidy(network: string, keep: number): Promise<void>;
  /**
   * True only the first time `version` is claimed for the network across every container, so
   * a config change is recorded once however many monitors load it.
   */
  claimConfigVersion(network: string, version: string): Promise<boolean>;
}

/** How long the network's events are kept (`events.retention_days`), in seconds. */
export function eventRetentionSeconds(model: GatewayModel, network: string): number {
  const settings = model.networks.get(network)?.settings;
  if (settings === undefined) throw new Error(`no network ${network} in the config in force`);
  return settings.events.retention_days * 86_400;
}

function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * An event ready to store: reason and detail scrubbed of secrets (they may quote upstream
 * text) and cut to their bounds. Scrubbing runs before cutting, so a cut never leaves half a
 * secret the scrubber no longer recognises.
 */
export function makeEvent(event: GatewayEvent, scrub: (text: string) => string): GatewayEvent {
  return {
    ...event,
    reason: bounded(scrub(event.reason), EVENT_REASON_MAX_CHARS),
    detail: bounded(scrub(event.detail), EVENT_DETAIL_MAX_CHARS),
  };
}

/** Newest first: later `at`, then the larger id (ids lead with the time, then a random part). */
function newerFirst(a: StoredEvent, b: StoredEvent): number {
  if (a.at !== b.at) return b.at - a.at;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * Merges lists of events (the store's, and this container's not yet written), each event once
 * by id, newest first, at most `limit`.
 */
export function newestFirst(
  lists: ReadonlyArray<readonly StoredEvent[]>,
  limit: number,
): StoredEvent[] {
  const byId = new Map<string, StoredEvent>();
  for (const list of lists) for (const event of list) byId.set(event.id, event);
  return [...byId.values()].sort(newerFirst).slice(0, Math.max(0, limit));
}

export function eventStatus(event: GatewayEvent): EventStatus {
  return {
    at: new Date(event.at).toISOString(),
    provider: event.provider,
    kind: event.kind,
    reason: event.reason,
    detail: event.detail,
  };
}

/** A head as the stall rule sees it: its block's timestamp (s), and when it was read (ms). */
export interface ObservedHead {
  readonly number: number | null;
  /** Block timestamp, seconds; null when there is no head. */
  readonly timestamp: number | null;
  /** When the head was read (ms since the epoch). */
  readonly at: number;
}

export interface HeadStallRule {
  /** The network's expected time between blocks (`block_time_seconds`). */
  readonly blockTimeSeconds: number;
  /** Block times without a new block after which the head counts as stalled. */
  readonly stallBlockTimes: number;
}

export interface HeadStallTransition {
  readonly kind: "head_stalled" | "head_resumed";
  readonly reason: string;
  readonly detail: string;
}

/**
 * The least age that counts as stalled, whatever the block time: block timestamps are whole
 * seconds and a reading takes a moment, so on a chain of sub-second blocks (0.25 s on
 * Arbitrum) a moving head is routinely older than five block times when it is read.
 */
export const HEAD_STALL_FLOOR_SECONDS = 10;

function stallLimitSeconds(rule: HeadStallRule): number {
  return Math.max(rule.stallBlockTimes * rule.blockTimeSeconds, HEAD_STALL_FLOOR_SECONDS);
}

/** Whether the head had not moved for more than the allowed block times when it was read. */
export function headStalled(head: ObservedHead, rule: HeadStallRule): boolean {
  if (head.number === null || head.timestamp === null) return false;
  return head.at / 1000 - head.timestamp > stallLimitSeconds(rule);
}

/**
 * The event a new reading of a head calls for: "head_stalled" when it has stalled since the
 * previous reading, "head_resumed" when a stalled head moves again, else null. Judged from the
 * head block's own timestamp, so it needs no memory between monitor runs: a stall is reported
 * once, by the first reading that sees it. A reading without a head (no quorum) changes
 * nothing; the quorum's own events tell that story.
 */
export function headStallTransition(
  previous: ObservedHead | null,
  current: ObservedHead,
  rule: HeadStallRule,
): HeadStallTransition | null {
  if (current.number === null || current.timestamp === null) return null;
  const wasStalled = previous !== null && headStalled(previous, rule);
  const isStalled = headStalled(current, rule);
  const age = Math.max(0, Math.round(current.at / 1000 - current.timestamp));
  const blockTimes = `${rule.stallBlockTimes} block times of ${rule.blockTimeSeconds} s`;
  const limit =
    stallLimitSeconds(rule) > rule.stallBlockTimes * rule.blockTimeSeconds
      ? `${HEAD_STALL_FLOOR_SECONDS} s (the least, above ${blockTimes})`
      : blockTimes;
  if (isStalled && !wasStalled) {
    return {
      kind: "head_stalled",
      reason: "no_new_block",
      detail: `head ${current.number} is ${age} s old, over ${limit}`,
    };
  }
  if (wasStalled && !isStalled) {
    return {
      kind: "head_resumed",
      reason: "new_block",
      detail: `head ${current.number} is ${age} s old, within ${limit}`,
    };
  }
  return null;
}

/**
 * The network event a new reading of a head calls for (`headStallTransition`), ready to
 * record; null when there is nothing to tell. For the quorum head, and for any other head the
 * monitor follows (the served head).
 */
export function headStallEvent(
  network: string,
  previous: ObservedHead | null,
  current: ObservedHead,
  rule: HeadStallRule,
): GatewayEvent | null {
  const transition = headStallTransition(previous, current, rule);
  return transition && { network, at: current.at, provider: null, ...transition };
}

/** Quorum membership as the events need it. */
export interface Membership {
  readonly members: readonly string[];
  readonly excluded: Readonly<Record<string, QuorumReason>>;
}

export interface QuorumTransition {
  readonly provider: string;
  readonly kind: "quorum_excluded" | "quorum_rejoined";
  /** Why it is out now, or why it had been out. */
  readonly reason: QuorumReason;
}

/**
 * Who left the quorum and who came back since the previous snapshot. A provider that stays
 * out for another reason (no answer, then failed recently) is still the same exclusion. With
 * no previous snapshot (the network's first check) every excluded provider is reported, since
 * nothing earlier tells the operator it is out.
 */
export function quorumTransitions(
  previous: Membership | null,
  current: Membership,
): QuorumTransition[] {
  const transitions: QuorumTransition[] = [];
  for (const [provider, reason] of Object.entries(current.excluded)) {
    if (previous === null || !(provider in previous.excluded)) {
      transitions.push({ provider, kind: "quorum_excluded", reason });
    }
  }
  if (previous !== null) {
    for (const provider of current.members) {
      const reason = previous.excluded[provider];
      if (reason !== undefined) transitions.push({ provider, kind: "quorum_rejoined", reason });
    }
  }
  return transitions;
}

export interface ConfigChange {
  /** Tells one config in force from another: the same version is recorded once. */
  readonly version: string;
  readonly reason: ConfigSourceInfo["kind"];
  readonly detail: string;
}

/**
 * What a config in force is, as an event. A config is known by its source and a fingerprint
 * of its content, which every container computes alike: the same config loaded by another
 * container, or again after a restart, is the same version; an edit, or a fall back to the
 * bundled copy, is a new one.
 */
export function configChange(source: ConfigSourceInfo, config: Config): ConfigChange {
  const print = fingerprint(JSON.stringify(config));
  const where = {
    s3: `the S3 config object, ETag ${source.etag ?? "unknown"}`,
    bundled: "the copy bundled with the function: the S3 object could not be used",
    file: "a local config file",
  }[source.kind];
  return {
    version: `${source.kind}:${print}`,
    reason: source.kind,
    detail: `${where} (content ${print})`,
  };
}
