import type { Network, Provider } from "../config/network-model.ts";
import type { HistoryProbe, ProbedResource, ProviderHistory } from "../history/bounds.ts";
import type { HistoryResource } from "../history/resources.ts";
import { CAPABILITIES_REASK_MS, PRUNED_CLAIM_RECENT_BLOCKS } from "../policies.ts";
import type { StateStore, Telemetry, Upstream } from "../ports.ts";
import { boundOf } from "../routing/history-routing.ts";
import { type NetworkState, quorumInForce } from "../routing/network-state.ts";
import { type Answer, askProvider, type CallOptions } from "./upstream-calls.ts";

/**
 * The monitor's history probe (docs/behaviour.md §15.3): at most every
 * `history_bounds.probe_seconds` per provider, two calls at once, within the probe's timeout:
 * `eth_capabilities` (where the node answers it: each resource's oldest block), and one state
 * read, `eth_getBalance` of the zero address, at the block that tests what is believed: the
 * block a learned bound refused (served now: the lesson is stale and forgotten), the bound the
 * config or its capabilities claim (refused: a lie caught, learned as any refusal), or block 1
 * when nothing is known (is it an archive?).
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
  const due = network.providers.filter((provider) => {
    if (members !== null && !members.includes(provider.name)) return false;
    const last = state.history.get(provider.name)?.probe?.at;
    return last === undefined || now - last >= everyMs;
  });
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
  const options: CallOptions = {
    upstream: deps.upstream,
    timeoutMs: network.settings.probe.timeout_ms,
    maxResponseBytes: network.settings.max_response_bytes,
    scrub: deps.scrub,
  };
  const askCapabilities =
    previous?.capabilities !== "unsupported" ||
    now - previous.capabilitiesAt >= CAPABILITIES_REASK_MS;
  const block = blockToTest(provider, history, { network, state, now }, head);
  const [capabilities, balance] = await Promise.all([
    askCapabilities
      ? askProvider(options, provider, { method: "eth_capabilities", params: [] })
      : null,
    block === null
      ? null
      : askProvider(
          options,
          provider,
          { method: "eth_getBalance", params: [ZERO_ADDRESS, hex(block)] },
          head,
        ),
  ]);
  const claimed = capabilities === null ? null : capabilitiesOf(capabilities, head);
  const resources: Partial<Record<HistoryResource, ProbedResource>> = {
    ...(claimed === null ? (previous?.resources ?? {}) : claimed),
  };
  const notes: string[] = [];
  if (balance !== null && block !== null) {
    if ("result" in balance) {
      notes.push(`state read at block ${block} served`);
      if (resources.state === undefined)
        resources.state = { from: block, window: null, how: "balance" };
      const learned = history?.learned.get("state");
      if (learned !== undefined && learned.from > block) {
        await deps.store.forgetHistoryBound(network.name, provider.name, "state", block);
        notes.push(`forgot the learned bound from ${learned.from}`);
      }
    } else if (balance.pruned !== undefined) {
      const oldest = balance.pruned.oldest;
      const from =
        oldest !== undefined && oldest > block && (head === null || oldest <= head)
          ? oldest
          : block + 1;
      notes.push(`state read at block ${block} refused: keeps it from ${from}`);
      await deps.store.recordHistoryBound(network.name, provider.name, "state", {
        from,
        refusedAt: block,
        at: now,
        until: now + network.settings.history_bounds.learned_ttl_seconds * 1000,
      });
    } else {
      notes.push(`state read at block ${block} failed: ${balance.error}`);
    }
  }
  const support =
    capabilities === null
      ? (previous?.capabilities ?? "unknown")
      : claimed !== null
        ? "supported"
        : "error" in capabilities && capabilities.reason === "capability"
          ? "unsupported"
          : (previous?.capabilities ?? "unknown");
  if (claimed !== null) notes.unshift("eth_capabilities answered");
  const probe: HistoryProbe = {
    at: now,
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

/** The state block whose read tests what is believed of the provider; null: none worth it. */
function blockToTest(
  provider: Provider,
  history: ProviderHistory | undefined,
  view: { readonly network: Network; readonly state: NetworkState; readonly now: number },
  head: number | null,
): number | null {
  const learned = history?.learned.get("state");
  const believed =
    learned !== undefined && learned.until > view.now
      ? learned.refusedAt
      : (boundOf(provider, "state", view)?.from ?? 1);
  if (!Number.isFinite(believed)) return null;
  // A state read this close to the head proves nothing: every node keeps it.
  if (head !== null && believed > head - PRUNED_CLAIM_RECENT_BLOCKS) return null;
  return Math.max(0, believed);
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
