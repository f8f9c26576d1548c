/**
 * Limits of the platform the runtime silently depends on. A config beyond them would load and
 * then misbehave (requests cut by API Gateway, a monitor that never ticks), so it is invalid:
 * `config:check` and the synth refuse it, and a running gateway keeps the last good config.
 */
export const PLATFORM_LIMITS = {
  /** API Gateway's 29 s integration timeout and the proxy Lambda's 29 s, less 1 s of the gateway's own work. */
  maxRequestDeadlineMs: 28_000,
  /** Lambda's 6 MB response payload, with room for the response envelope. */
  maxResponseBytes: 6_000_000,
  /** Lambda's 6 MB request payload holds the body base64-encoded (4/3 of its size) when it is not text. */
  maxBodyBytes: 4_500_000,
  /** A scheduled monitor run lasts 58 s: one tick (quorum check, then probe, then ~1 s of storage) must fit. */
  monitorRunMs: 58_000,
  monitorTickStorageMs: 1_000,
  /** Request stats are kept one hour (DynamoDB TTL): "failing often" cannot look further back. */
  statsRetentionSeconds: 3_600,
  /** Timers and polling below one second cost more than they tell. */
  minIntervalSeconds: 1,
  /** DynamoDB's 400 KB item, less room for a shared answer's key and attribute names. */
  maxSharedItemBytes: 400 * 1024 - 1024,
} as const;

export type BoundIssue = { readonly path: PropertyKey[]; readonly message: string };

/**
 * The settings the bounds read, as the schema defines them: the top level has them all, a
 * network any of them (what it leaves out comes from the top). Written out here, since the
 * schema that checks the bounds is built from this module.
 */
interface BoundedSettings {
  readonly request_deadline_ms: number;
  readonly request_timeout_ms: number;
  readonly max_response_bytes: number;
  readonly max_body_bytes: number;
  readonly max_attempts: number;
  readonly max_upstream_calls: number;
  readonly block_time_seconds: number;
  readonly quorum: {
    readonly check_timeout_ms: number;
    readonly max_ahead_blocks: number;
    readonly max_lag_seconds: number;
    readonly failing_often: { readonly window_seconds: number };
  };
  readonly probe: { readonly timeout_ms: number };
  readonly hedge: { readonly min_ms: number; readonly max_ms: number };
}

/** What a network may set of them: any key at any depth. */
type Partly<T> = { readonly [K in keyof T]?: T[K] extends object ? Partly<T[K]> : T[K] };
type NetworkBoundedSettings = Partly<BoundedSettings>;

/** The cross-field and platform bounds, on each network's merged settings (checked by `configSchema`). */
export function boundIssues(config: {
  readonly check_interval_seconds: number;
  readonly config_refresh_seconds: number;
  readonly api_keys: ReadonlyArray<{ readonly name: string }>;
  readonly networks: Readonly<Record<string, NetworkBoundedSettings>>;
  readonly [key: string]: unknown;
}): BoundIssue[] {
  const limits = PLATFORM_LIMITS;
  const issues: BoundIssue[] = [];
  for (const key of ["check_interval_seconds", "config_refresh_seconds"] as const) {
    if (config[key] < limits.minIntervalSeconds) {
      issues.push({ path: [key], message: `${key} must be at least ${limits.minIntervalSeconds}` });
    }
  }
  const keyNames = new Map<string, number>();
  config.api_keys.forEach((key, index) => {
    const first = keyNames.get(key.name);
    if (first === undefined) keyNames.set(key.name, index);
    else {
      issues.push({
        path: ["api_keys", index, "name"],
        message: `duplicate API key name "${key.name}" (also api_keys[${first}]): names key the usage counters and logs, so they must be unique`,
      });
    }
  });
  const top = config as unknown as BoundedSettings;
  for (const [name, network] of Object.entries(config.networks)) {
    /** The value in force for this network, and where to report it. */
    const setting = <T>(
      pick: (settings: NetworkBoundedSettings) => T | undefined,
      path: string[],
    ) => {
      const own = pick(network);
      return own === undefined
        ? { value: pick(top) as T, path, where: "" }
        : { value: own, path: ["networks", name, ...path], where: ` in network ${name}` };
    };
    const deadline = setting((s) => s.request_deadline_ms, ["request_deadline_ms"]);
    if (deadline.value > limits.maxRequestDeadlineMs) {
      issues.push({
        path: deadline.path,
        message: `request_deadline_ms ${deadline.value}${deadline.where} is over ${limits.maxRequestDeadlineMs}: API Gateway cuts a request at 29 s, and the proxy needs 1 s to answer`,
      });
    }
    const timeout = setting((s) => s.request_timeout_ms, ["request_timeout_ms"]);
    if (timeout.value > deadline.value) {
      issues.push({
        path: timeout.path,
        message: `request_timeout_ms ${timeout.value}${timeout.where} is over request_deadline_ms ${deadline.value}: an attempt cannot outlast its request`,
      });
    }
    const response = setting((s) => s.max_response_bytes, ["max_response_bytes"]);
    if (response.value > limits.maxResponseBytes) {
      issues.push({
        path: response.path,
        message: `max_response_bytes ${response.value}${response.where} is over ${limits.maxResponseBytes}: Lambda cannot return more than 6 MB`,
      });
    }
    const body = setting((s) => s.max_body_bytes, ["max_body_bytes"]);
    if (body.value > limits.maxBodyBytes) {
      issues.push({
        path: body.path,
        message: `max_body_bytes ${body.value}${body.where} is over ${limits.maxBodyBytes}: a larger body does not fit Lambda's 6 MB request payload`,
      });
    }
    const attempts = setting((s) => s.max_attempts, ["max_attempts"]);
    const calls = setting((s) => s.max_upstream_calls, ["max_upstream_calls"]);
    if (calls.value < attempts.value) {
      issues.push({
        path: calls.path,
        message: `max_upstream_calls ${calls.value}${calls.where} is under max_attempts ${attempts.value}: a single call could not use its attempts`,
      });
    }
    const check = setting((s) => s.quorum?.check_timeout_ms, ["quorum", "check_timeout_ms"]);
    const probe = setting((s) => s.probe?.timeout_ms, ["probe", "timeout_ms"]);
    const tick = check.value + probe.value + limits.monitorTickStorageMs;
    if (tick > limits.monitorRunMs) {
      issues.push({
        path: check.path,
        message: `quorum.check_timeout_ms ${check.value} + probe.timeout_ms ${probe.value}${check.where || probe.where} leave no room for a monitor tick: together with 1 s of storage they must fit the monitor's ${limits.monitorRunMs / 1000} s run`,
      });
    }
    const window = setting(
      (s) => s.quorum?.failing_often?.window_seconds,
      ["quorum", "failing_often", "window_seconds"],
    );
    if (window.value > limits.statsRetentionSeconds) {
      issues.push({
        path: window.path,
        message: `quorum.failing_often.window_seconds ${window.value}${window.where} is over ${limits.statsRetentionSeconds}: request stats are kept one hour`,
      });
    }
    // With two answers, the higher of two heads more than max_ahead_blocks apart is judged a lie
    // unless its timestamp is more than max_lag_seconds later: honest heads up to max_lag_seconds
    // apart must fit in max_ahead_blocks, or an honest provider ahead would be left out.
    const ahead = setting((s) => s.quorum?.max_ahead_blocks, ["quorum", "max_ahead_blocks"]);
    const lag = setting((s) => s.quorum?.max_lag_seconds, ["quorum", "max_lag_seconds"]);
    const blockTime = setting((s) => s.block_time_seconds, ["block_time_seconds"]);
    const honestLead = Math.ceil(lag.value / blockTime.value);
    if (ahead.value < honestLead) {
      issues.push({
        path: ahead.path,
        message: `quorum.max_ahead_blocks ${ahead.value}${ahead.where || lag.where || blockTime.where} is under the ${honestLead} blocks a chain of ${blockTime.value} s blocks makes in quorum.max_lag_seconds ${lag.value}: an honest provider that far ahead would be left out of the quorum as ahead`,
      });
    }
    const hedgeMin = setting((s) => s.hedge?.min_ms, ["hedge", "min_ms"]);
    const hedgeMax = setting((s) => s.hedge?.max_ms, ["hedge", "max_ms"]);
    if (hedgeMin.value > hedgeMax.value) {
      issues.push({
        path: hedgeMin.path,
        message: `hedge.min_ms ${hedgeMin.value}${hedgeMin.where || hedgeMax.where} is over hedge.max_ms ${hedgeMax.value}: the delay before a hedge is clamped between them`,
      });
    }
  }
  // One problem per path: a top-level value over a bound would be reported once per network.
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = issue.path.join(".");
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
