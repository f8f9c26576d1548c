import type { LogComparison } from "./logs-check.ts";

/** What one scenario measured: its phases, its figures and its verdicts (computed in analysis.ts). */

/** Times (ms since the epoch) of one scenario's phases. */
export interface Timeline {
  /** Every provider in quorum, the primary active: traffic starts. */
  readonly ready: number;
  /** The fault is in force. */
  readonly fault: number;
  /** The fault is removed. */
  readonly clear: number;
  /** Traffic stopped. */
  readonly end: number;
}

export interface Verdict {
  readonly target: string;
  readonly pass: boolean;
  readonly measured: string;
}

export interface OpSample {
  readonly phase: "before" | "fault" | "after";
  readonly atMs: number;
  readonly kind: string;
  readonly error: string | null;
  readonly wrong: string | null;
  readonly providers: string;
  readonly attempts: number;
  readonly status: string;
  readonly ms: number;
  /** Seconds behind the best node, for a stale answer. */
  readonly behindSeconds?: number;
}

export interface BlacklistEpisode {
  readonly provider: string;
  readonly reason: string;
  readonly strikes: number;
  /** `until` minus when the status route first showed it (a lower bound of the cooldown). */
  readonly cooldownSeconds: number;
}

export interface AllDownFigures {
  readonly outageOps: number;
  /** Ops that got an error during the outage, as a fraction. */
  readonly errorRate: number;
  /** Outage ops whose every answer was a JSON-RPC error object (HTTP 502 or a batch of errors). */
  readonly jsonRpcErrors: number;
  /** Outage ops that ended in anything else: no answer, a client timeout, not JSON-RPC. */
  readonly otherErrors: number;
  /**
   * Outage ops answered without any provider: `eth_blockNumber` from the served head while it
   * was confirmed within a block time.
   */
  readonly servedByGateway: number;
  /** Outage ops that succeeded with a provider named: impossible with every provider down. */
  readonly fromProviders: number;
  readonly maxOutageMs: number;
  /** First op after the restore that succeeded: its end minus the restore. */
  readonly resumeMs: number | null;
  readonly afterOps: number;
  readonly afterOk: number;
}

export interface ScenarioFigures {
  readonly ops: {
    readonly total: number;
    readonly calls: number;
    readonly before: number;
    readonly fault: number;
    readonly after: number;
  };
  /** Ops counted for the success target (all ops, except the outage of "all down"). */
  readonly success: { readonly ok: number; readonly total: number };
  readonly wrong: number;
  readonly stale: {
    /** Behind by more than max_lag_seconds plus the detection allowance. */
    readonly count: number;
    /** Behind by more than max_lag_seconds. */
    readonly strict: number;
    /** Behind by more than max_lag_seconds plus the served head's trail (docs/behaviour.md §10.2). */
    readonly beyondTrail: number;
    readonly maxSeconds: number | null;
    /** Served by the primary while the status route already showed it out of service. */
    readonly afterVerdict: number;
  };
  readonly failover: {
    /** First op after the fault answered by another provider: its end minus the fault time. */
    readonly ms: number | null;
    readonly attempts: number | null;
    readonly via: string | null;
    /** The first op after the fault that was not a plain success of the primary. */
    readonly firstHit: {
      readonly ok: boolean;
      readonly attempts: number;
      /** The most attempts beyond the first that one HTTP request of the op needed. */
      readonly extraAttempts: number;
      readonly providers: string;
      /** What the op asked (`logs`, `batch`…), and the calls in it. */
      readonly kind: string;
      readonly calls: number;
    } | null;
    readonly maxAttemptsDuringFault: number;
    /** Ops during the fault that needed more than one attempt (they met a failing provider). */
    readonly retriedOps: number;
  };
  /** First op after the clear answered by the primary: its start minus the clear time. */
  readonly returnMs: number | null;
  readonly observed: {
    readonly maxStrikes: number;
    readonly blacklists: readonly BlacklistEpisode[];
    readonly quorumReasons: readonly string[];
    readonly probes: { readonly pass: number; readonly fail: number };
  };
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly allDown: AllDownFigures | null;
  /** The first few failed or wrong ops, for the report. */
  readonly failures: readonly OpSample[];
  /** The first few answers more than max_lag_seconds behind (or from a primary already out). */
  readonly staleSamples: readonly OpSample[];
  /** eth_getLogs answers compared with the node's own logs for their range. */
  readonly logs: LogComparison;
}
