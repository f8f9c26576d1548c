import type { Network, Provider } from "../config/network-model.ts";
import type { HistoryProbe, ProbedResource, ProviderHistory } from "../history/bounds.ts";
import type { HistoryResource } from "../history/resources.ts";
import { type EdgeSearchStart, type StateRead, searchStateEdge } from "../history/state-edge.ts";
import {
  CAPABILITIES_REASK_MS,
  HISTORY_PROBE_AFTER_LESSON_MS,
  PRUNED_CLAIM_RECENT_BLOCKS,
} from "../policies.ts";
import type { StateStore, Telemetry, Upstream } from "../ports.ts";
import { boundOf } from "../routing/history-routing.ts";
import { type NetworkState, quorumInForce } from "../routing/network-state.ts";
import { type Answer, askProvider, type CallOptions } from "./upstream-calls.ts";

/**
 * The monitor's history probe (docs/behaviour.md §16.3): every `history_bounds.probe_seconds`
 * per provider (sooner, at most once a minute, after a provider refused state that named no
 * oldest block), within the probe's timeout: `eth_capabilities` (where the node answers it:
 * each resource's oldest block), and state reads (`eth_getBalance` of the zero address) that
 * test what is believed and find where a pruned provider's state starts (state-edge.ts). A
 * served read of a lesson's block forgets the lesson; a refusal is learned as a live one is.
 */

export interface HistoryProbeDeps {
  readonly upstream: Upstream;
  readonly store: Pick<
    StateStore,
    "recordHistoryProbe" | "recordHistoryBound" | "forgetHistoryBound"
  >;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly scrub: (text: string) => string;
}

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
const CAPABILITY_RESOURCES: ReadonlyArray<readonly [string, HistoryResource]> = [
  ["state", "state"],
  ["stateproofs", "proofs"],
  ["blocks", "bodies"],
  ["receipts", "receipts"],
  ["logs", "logs"],
];
const hex = (block: number) => `0x${block.toString(16)}`;

/** Whether `provider` is due a probe: its interval passed, or it refused since the last one. */
function isDue(history: ProviderHistory | undefined, now: number, everyMs: number): boolean {
  const last = history?.probe?.at;
  if (last === undefined || now - last >= everyMs) return true;
  const lesson = history?.learned.get("state");
  return (
    lesson !== undefined &&
    lesson.until > now &&
    lesson.at > last &&
    lesson.from === lesson.refusedAt + 1 &&
    now - last >= HISTORY_PROBE_AFTER_LESSON_MS
  );
}

/** Probes every provider of `network` that is due; `state` carries this tick's quorum. */
export async function runHistoryProbes(
  deps: HistoryProbeDeps,
  network: Network,
  state: NetworkState,
  checkIntervalSeconds: number,
): Promise<void> {
  const everyMs = network.settings.history_bounds.probe_seconds * 1000;
  if (everyMs <= 0) return;
  const now = deps.clock();
  const members = quorumInForce(state, now, checkIntervalSeconds)
    ? (state.quorum?.members ?? [])
    : null;
  const due = network.providers.filter(
    (provider) =>
      (members === null || members.includes(provider.name)) &&
      isDue(state.history.get(provider.name), now, everyMs),
  );
  await Promise.all(
    due.map((provider) =>
      probeOne(deps, network, state, provider).catch((error: unknown) => {
        deps.telemetry.log("warn", "history probe could not complete", {
          network: network.name,
          provider: provider.name,
          error: deps.scrub(error instanceof Error ? error.message : String(error)),
        });
      }),
    ),
  );
}

async function probeOne(
  deps: HistoryProbeDeps,
  network: Network,
  state: NetworkState,
  provider: Provider,
): Promise<void> {
  const now = deps.clock();
  const head = state.quorum?.head ?? state.head?.latest.number ?? null;
  const history = state.history.get(provider.name);
  const previous = history?.probe ?? null;
  const deadline = now + network.settings.probe.timeout_ms;
  const options = (): CallOptions => ({
    upstream: deps.upstream,
    timeoutMs: Math.max(1, deadline - deps.clock()),
    maxResponseBytes: network.settings.max_response_bytes,
    scrub: deps.scrub,
  });
  const askCapabilities =
    previous?.capabilities !== "unsupported" ||
    now - previous.capabilitiesAt >= CAPABILITIES_REASK_MS;
  const read = async (block: number): Promise<StateRead> => {
    if (deps.clock() >= deadline) return { kind: "failed", error: "out of time" };
    const call = { method: "eth_getBalance", params: [ZERO_ADDRESS, hex(block)] };
    const answer = await askProvider(options(), provider, call, head);
    if ("result" in answer) return { kind: "served" };
    if (answer.pruned !== undefined) {
      return answer.pruned.oldest === undefined
        ? { kind: "refused" }
        : { kind: "refused", oldest: answer.pruned.oldest };
    }
    return { kind: "failed", error: answer.error };
  };
  const [capabilities, search] = await Promise.all([
    askCapabilities
      ? askProvider(options(), provider, { method: "eth_capabilities", params: [] })
      : null,
    searchStateEdge(searchStart(provider, history, { network, state, now }, head), read, STEPS),
  ]);
  const claimed = capabilities === null ? null : capabilitiesOf(capabilities, head);
  const resources: Partial<Record<HistoryResource, ProbedResource>> = {
    ...(claimed === null ? (previous?.resources ?? {}) : claimed),
  };
  // A block served is a fact, and beats what the provider claims of its state.
  if (search.served !== null) {
    resources.state = { from: search.served, window: null, how: "balance" };
  } else if (claimed?.state === undefined && resources.state?.how === "balance") {
    delete resources.state;
  }
  const lesson = history?.learned.get("state");
  if (search.stale && lesson !== undefined) {
    await deps.store.forgetHistoryBound(network.name, provider.name, "state", lesson.refusedAt);
  }
  if (search.refused !== null) {
    const from = Math.max(search.refused + 1, search.named ?? 0);
    await deps.store.recordHistoryBound(network.name, provider.name, "state", {
      from,
      refusedAt: search.refused,
      at: now,
      until: now + network.settings.history_bounds.learned_ttl_seconds * 1000,
    });
  }
  const support =
    capabilities === null
      ? (previous?.capabilities ?? "unknown")
      : claimed !== null
        ? "supported"
        : "error" in capabilities && capabilities.reason === "capability"
          ? "unsupported"
          : (previous?.capabilities ?? "unknown");
  const notes = [...(claimed === null ? [] : ["eth_capabilities answered"]), ...search.notes];
  const probe: HistoryProbe = {
    at: deps.clock(),
    capabilities: support,
    capabilitiesAt: capabilities === null ? (previous?.capabilitiesAt ?? 0) : now,
    resources,
    detail: deps.scrub(notes.join("; ")).slice(0, 300),
  };
  await deps.store.recordHistoryProbe(network.name, provider.name, probe);
  deps.telemetry.log("info", "history probe", {
    network: network.name,
    provider: provider.name,
    capabilities: support,
    detail: probe.detail,
  });
}

/** State reads one probe may make: a gallop and a halving over a chain of 2^20 blocks. */
const STEPS = 24;

/** Where the search starts from what is believed of the provider. */
function searchStart(
  provider: Provider,
  history: ProviderHistory | undefined,
  view: { readonly network: Network; readonly state: NetworkState; readonly now: number },
  head: number | null,
): EdgeSearchStart {
  const lesson = history?.learned.get("state");
  const inForce = lesson !== undefined && lesson.until > view.now ? lesson : null;
  const probe = history?.probe ?? null;
  const found = probe?.resources.state;
  const served = found?.how === "balance" && found.from !== null ? found.from : null;
  const bound = boundOf(provider, "state", view);
  // Block 0 is no test: a full node keeps its genesis state.
  const believed = Math.max(1, served ?? (bound.source === "config" ? bound.from : 1));
  const top = head === null ? null : head - PRUNED_CLAIM_RECENT_BLOCKS;
  return {
    refused: inForce?.refusedAt ?? null,
    named: inForce !== null && inForce.from > inForce.refusedAt + 1 ? inForce.from : null,
    // What the last probe proved, if it is no older than the lesson.
    served: inForce === null || probe === null || probe.at < inForce.at ? null : served,
    believed: Number.isFinite(believed) && (top === null || believed <= top) ? believed : 1,
    top: top !== null && top > 0 ? top : null,
  };
}

const HEX = /^0x[0-9a-f]{1,16}$/i;

/** The resources an `eth_capabilities` result claims; null for no usable answer. */
export function capabilitiesOf(
  answer: Answer,
  head: number | null,
): Partial<Record<HistoryResource, ProbedResource>> | null {
  if (!("result" in answer)) return null;
  const result = answer.result as Record<string, unknown> | null;
  if (typeof result !== "object" || result === null) return null;
  const out: Partial<Record<HistoryResource, ProbedResource>> = {};
  for (const [name, resource] of CAPABILITY_RESOURCES) {
    const entry = result[name] as
      | { disabled?: unknown; oldestBlock?: unknown; deleteStrategy?: unknown }
      | undefined;
    if (typeof entry !== "object" || entry === null) continue;
    if (entry.disabled === true) {
      out[resource] = { from: null, window: null, how: "capabilities" };
      continue;
    }
    if (typeof entry.oldestBlock !== "string" || !HEX.test(entry.oldestBlock)) continue;
    const from = Number.parseInt(entry.oldestBlock, 16);
    // A claim about blocks past every known head is no claim: a lie, or another chain.
    if (!Number.isSafeInteger(from) || (head !== null && from > head)) continue;
    const strategy = entry.deleteStrategy as
      | { type?: unknown; retentionBlocks?: unknown }
      | undefined;
    const retention =
      strategy?.type === "window" &&
      typeof strategy.retentionBlocks === "string" &&
      HEX.test(strategy.retentionBlocks)
        ? Number.parseInt(strategy.retentionBlocks, 16)
        : null;
    out[resource] = {
      from,
      window:
        retention !== null && retention > 0 && Number.isSafeInteger(retention) ? retention : null,
      how: "capabilities",
    };
  }
  return Object.keys(out).length === 0 ? null : out;
}
