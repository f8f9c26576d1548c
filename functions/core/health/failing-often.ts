import type { Settings } from "../config/config-schema.ts";
import type { RequestWindow } from "./request-stats.ts";

/**
 * "Failing often" (docs/behaviour.md §5.3): a provider that answers the quorum check but fails much of
 * its real traffic, or keeps missing checks, is kept out for `exclude_seconds`.
 */

export type FailingOftenSettings = Settings["quorum"]["failing_often"];

/** Appends one check's outcome (true = missed), keeping only the newest `missedChecks`. */
export function recordCheck(
  recentChecks: readonly boolean[],
  missed: boolean,
  missedChecks: number,
): boolean[] {
  return [...recentChecks, missed].slice(-missedChecks);
}

function failsTooManyRequests(window: RequestWindow, settings: FailingOftenSettings): boolean {
  // Too few requests say nothing: one failure out of one is not a pattern.
  if (window.requests < settings.min_requests) return false;
  return window.errors / window.requests >= settings.error_ratio;
}

function missesTooManyChecks(
  recentChecks: readonly boolean[],
  settings: FailingOftenSettings,
): boolean {
  // A short history is not evidence either: a new provider earns exclusion with a full one.
  if (recentChecks.length < settings.missed_checks) return false;
  const missed = recentChecks.slice(-settings.missed_checks).filter(Boolean).length;
  return missed / settings.missed_checks >= settings.missed_ratio;
}

export function isFailingOften(
  window: RequestWindow,
  recentChecks: readonly boolean[],
  settings: FailingOftenSettings,
): boolean {
  return failsTooManyRequests(window, settings) || missesTooManyChecks(recentChecks, settings);
}
