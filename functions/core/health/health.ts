import type { CooldownReason } from "../classify/verdict.ts";
import type { CooldownSeconds } from "../config/config-schema.ts";
import { SAME_INCIDENT_MS } from "../policies.ts";
import type { MinorityRecord } from "./minority.ts";

/**
 * A provider's shared health (docs/behaviour.md §6), as stored in DynamoDB. Times are ms since the epoch.
 * `version` orders concurrent writers: every write is conditional on the version it read.
 */
export interface ProviderHealth {
  readonly strikes: number;
  readonly blacklistedUntil: number;
  readonly reason: CooldownReason | null;
  /** The blacklist ends only when the monitor's probe passes, not when the timer runs out. */
  readonly probeGated: boolean;
  readonly lastProbe: ProbeRecord | null;
  readonly version: number;
  /** Times in a read consensus's minority, and a sit-out (docs/behaviour.md §17.4); absent: none. */
  readonly consensus?: MinorityRecord;
}

export interface ProbeRecord {
  readonly at: number;
  readonly result: "pass" | "fail";
  readonly detail: string;
}

export const HEALTHY: ProviderHealth = {
  strikes: 0,
  blacklistedUntil: 0,
  reason: null,
  probeGated: false,
  lastProbe: null,
  version: 0,
};

/** Reasons whose blacklist recovers on the timer alone (docs/behaviour.md §6): no probe needed. */
const TIMER_ONLY: ReadonlySet<CooldownReason> = new Set([
  "forbidden",
  "chain_unavailable",
  "wrong_chain",
  "capability",
  "force_rotate",
  "slow",
  // A probe reads the head, which cannot tell a provider that answers wrongly.
  "inconsistent",
]);

export type HealthState = "healthy" | "blacklisted" | "awaiting_probe";

export function healthState(health: ProviderHealth, now: number): HealthState {
  if (health.reason === null) return "healthy";
  if (health.blacklistedUntil > now) return "blacklisted";
  return health.probeGated ? "awaiting_probe" : "healthy";
}

export interface CooldownPolicy {
  readonly cooldownSeconds: CooldownSeconds;
  readonly maxBlacklistMinutes: number;
}

/** A network's cooldown policy, the same for live traffic and the monitor's probes. */
export function cooldownPolicy(settings: {
  readonly cooldown_seconds: CooldownSeconds;
  readonly max_blacklist_minutes: number;
}): CooldownPolicy {
  return {
    cooldownSeconds: settings.cooldown_seconds,
    maxBlacklistMinutes: settings.max_blacklist_minutes,
  };
}

/**
 * Cooldown for the given strike: base × 2^(strikes − 1), capped at max_blacklist_minutes;
 * a base above the cap is kept as is (24 h reasons stay 24 h).
 */
export function cooldownMs(
  reason: CooldownReason,
  strikes: number,
  policy: CooldownPolicy,
): number {
  const baseMs = policy.cooldownSeconds[reason] * 1000;
  const capMs = policy.maxBlacklistMinutes * 60_000;
  if (baseMs >= capMs) return baseMs;
  const escalated = baseMs * 2 ** Math.max(0, strikes - 1);
  return Math.min(escalated, capMs);
}

/** The shortest cooldown a provider's `Retry-After` can ask for. */
const MIN_REQUESTED_COOLDOWN_MS = 1000;

/**
 * The cooldown of an incident: what the provider asked for (`Retry-After`), clamped between
 * a second and `max_blacklist_minutes`, else the escalated base.
 */
function incidentCooldownMs(
  reason: CooldownReason,
  strikes: number,
  policy: CooldownPolicy,
  requestedMs: number | undefined,
): number {
  if (requestedMs === undefined) return cooldownMs(reason, strikes, policy);
  const capMs = policy.maxBlacklistMinutes * 60_000;
  return Math.min(Math.max(requestedMs, MIN_REQUESTED_COOLDOWN_MS), capMs);
}

/**
 * The health after an incident. One strike per incident: a provider already blacklisted (or
 * awaiting its probe) gets no new strike; its expiry only moves later, never earlier.
 * `requestedMs` is the cooldown the provider asked for (`Retry-After`), if any.
 * Returns null when nothing changes, so the caller skips the write.
 */
export function applyIncident(
  health: ProviderHealth,
  reason: CooldownReason,
  now: number,
  policy: CooldownPolicy,
  requestedMs?: number,
): ProviderHealth | null {
  const state = healthState(health, now);
  if (state === "healthy") {
    const strikes = health.strikes + 1;
    return {
      ...health,
      strikes,
      reason,
      blacklistedUntil: now + incidentCooldownMs(reason, strikes, policy, requestedMs),
      probeGated: !TIMER_ONLY.has(reason),
      version: health.version + 1,
    };
  }
  // Out until its probe passes: a failure now changes nothing.
  if (state === "awaiting_probe") return null;
  const until = now + incidentCooldownMs(reason, Math.max(1, health.strikes), policy, requestedMs);
  // Within a second of the stored expiry it is the same incident seen again: no write. A later
  // expiry is this failure's, and so is the reason.
  if (until <= health.blacklistedUntil + SAME_INCIDENT_MS) return null;
  return {
    ...health,
    blacklistedUntil: until,
    reason,
    probeGated: health.probeGated || !TIMER_ONLY.has(reason),
    version: health.version + 1,
  };
}

/** After a successful request: strikes back to 0 (null when they already are). */
export function applySuccess(health: ProviderHealth, now: number): ProviderHealth | null {
  if (health.strikes === 0) return null;
  if (healthState(health, now) !== "healthy") return null;
  return { ...health, strikes: 0, reason: null, blacklistedUntil: 0, version: health.version + 1 };
}

/** The probe passed: back in service. Strikes stay until a real request succeeds. */
export function applyProbePass(health: ProviderHealth, probe: ProbeRecord): ProviderHealth {
  return {
    ...health,
    reason: null,
    blacklistedUntil: 0,
    probeGated: false,
    lastProbe: probe,
    version: health.version + 1,
  };
}

/**
 * The probe failed: blacklisted again with the next strike, so the cooldown doubles, unless
 * the provider said when to come back (`requestedMs`, its `Retry-After`), as for live traffic.
 * The reason is what the probe's own failure was judged (`failedWith`, as live traffic would
 * judge it), else the reason the provider was blacklisted for.
 */
export function applyProbeFail(
  health: ProviderHealth,
  probe: ProbeRecord,
  now: number,
  policy: CooldownPolicy,
  failedWith?: CooldownReason,
  requestedMs?: number,
): ProviderHealth {
  const reason = failedWith ?? health.reason ?? "connection";
  const strikes = health.strikes + 1;
  return {
    ...health,
    strikes,
    reason,
    blacklistedUntil: now + incidentCooldownMs(reason, strikes, policy, requestedMs),
    probeGated: true,
    lastProbe: probe,
    version: health.version + 1,
  };
}
