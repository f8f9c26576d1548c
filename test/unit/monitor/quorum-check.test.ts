import { describe, expect, it } from "vitest";
import { configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../functions/core/config/network-model.ts";
import { runQuorumCheck } from "../../../functions/core/monitor/quorum-check.ts";
import type { Upstream, UpstreamRequest } from "../../../functions/core/ports.ts";
import { reachableBlocks } from "../../../functions/core/request/head/served-head.ts";
import type { QuorumSnapshot } from "../../../functions/core/routing/network-state.ts";
import { recordingTelemetry } from "../../support/recording-telemetry.ts";

/**
 * The monitor's quorum check (docs/behaviour.md §5) as the proxy reads its snapshot: each
 * provider's head, and when it was read, from which the proxy works out the blocks a provider
 * can have reached since (§3.4, §10.4).
 */
const START = 1_800_000_000_000;
const CHECK_TIMEOUT_MS = 7_000;
const HEAD = 100;

function network() {
  const model = buildModel(
    configSchema.parse({
      networks: {
        devnet: {
          chain_id: 31337,
          block_time_seconds: 1,
          quorum: { check_timeout_ms: CHECK_TIMEOUT_MS, fork_check: false },
          providers: [
            { name: "fast", url: "http://fast.example" },
            { name: "hung", url: "http://hung.example" },
          ],
        },
      },
    }),
    (url) => url,
  );
  const devnet = model.networks.get("devnet");
  if (devnet === undefined) throw new Error("no network");
  return devnet;
}

/** `fast` answers at once, at HEAD; `hung` answers nothing until the check's timeout. */
function upstreamOn(clock: { now: number }): Upstream {
  return {
    async send(request: UpstreamRequest) {
      if (request.url.startsWith("http://hung")) {
        // Its calls are sent together: the last gives up a timeout after they were sent.
        clock.now = Math.max(clock.now, START + request.timeoutMs);
        return {
          ok: false,
          failure: { kind: "timeout", message: "no answer" },
          elapsedMs: request.timeoutMs,
        };
      }
      const call = JSON.parse(request.body) as { id: unknown; method: string };
      const result =
        call.method === "eth_chainId"
          ? "0x7a69"
          : {
              number: `0x${HEAD.toString(16)}`,
              hash: `0x${"ab".repeat(32)}`,
              parentHash: `0x${"cd".repeat(32)}`,
              timestamp: `0x${Math.floor(clock.now / 1000).toString(16)}`,
            };
      return {
        ok: true,
        status: 200,
        body: JSON.stringify({ jsonrpc: "2.0", id: call.id, result }),
        elapsedMs: 1,
      };
    },
  };
}

describe("the quorum check's snapshot", () => {
  it("regression: a member hanging until check_timeout_ms stamped the snapshot at the tick's end, so its heads read 7 s (7 blocks) old looked fresh, every candidate seemed short of the served head, latest went unpinned and receipts were shown above eth_blockNumber; now the snapshot says when its heads were read, and the blocks since count from there", async () => {
    const clock = { now: START };
    let published: QuorumSnapshot | null = null;
    const { snapshot } = await runQuorumCheck(
      {
        upstream: upstreamOn(clock),
        monitorStore: {
          writeCheckMemory: async () => true,
          writeQuorum: async (_, written) => {
            published = written;
            return true;
          },
        },
        clock: () => clock.now,
        telemetry: recordingTelemetry(),
        scrub: (text) => text,
      },
      { network: network(), previous: null, memory: {}, requestStats: {} },
    );
    expect(clock.now).toBe(START + CHECK_TIMEOUT_MS);
    expect(snapshot.heads.fast?.number).toBe(HEAD);
    expect(published).toEqual(snapshot);
    // The snapshot is still stamped when it was computed (its staleness, the store's ordering).
    expect(snapshot.computedAt).toBe(START + CHECK_TIMEOUT_MS);
    expect(snapshot.headsReadAt).toBe(START);
    // At the tick's end, `fast` can have mined a block a second since it was read.
    const reachable = reachableBlocks(snapshot, new Map(), clock.now, 1000);
    expect(reachable("fast")).toBe(HEAD + CHECK_TIMEOUT_MS / 1000);
  });
});
