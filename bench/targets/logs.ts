import { isDeepStrictEqual } from "node:util";
import type { ConfigInput } from "../../functions/core/config/config-schema.ts";
import { startAnvil } from "../../local/anvil.ts";
import { buildLogChain } from "../../local/log-chain.ts";
import { type LogsRangeCap, startLogsRangeCap } from "../../local/logs-range-cap.ts";
import { startLocalStack } from "../../local/stack.ts";

/**
 * The `logs` part: one eth_getLogs over a whole chain of anvil blocks with logs spread across
 * it, through the gateway (`npm start`'s stack) in front of two providers that refuse spans
 * over `cap` blocks, against the same logs asked of the node directly one `cap`-block piece at
 * a time. Counts the upstream eth_getLogs calls, times each query, and compares the logs.
 */

export interface LogsRecord {
  readonly scenario: string;
  readonly upstreamCalls: number;
  readonly refused: number;
  readonly ms: number;
  readonly logs: number;
  /** The same logs, in the same order, as the node's own. */
  readonly identical: boolean;
}

export interface LogsMeasurement {
  readonly blocks: number;
  readonly cap: number;
  readonly concurrency: number;
  readonly chainBuildMs: number;
  readonly records: readonly LogsRecord[];
}

const hex = (n: number) => `0x${n.toString(16)}`;

export async function measureLogs(
  options: { readonly blocks: number; readonly cap: number; readonly concurrency: number },
  log: (line: string) => void,
): Promise<LogsMeasurement> {
  const node = await startAnvil({ chainId: 31337 });
  const providers: LogsRangeCap[] = [];
  try {
    const building = Date.now();
    const chain = await buildLogChain(node, {
      blocks: options.blocks,
      every: Math.max(2, Math.floor(options.blocks / 80)),
    });
    const chainBuildMs = Date.now() - building;
    log(`logs: ${chain.head} blocks, ${chain.calls * 2} logs, built in ${chainBuildMs} ms`);
    providers.push(
      await startLogsRangeCap({ upstream: node.url, maxBlocks: options.cap }),
      await startLogsRangeCap({ upstream: node.url, maxBlocks: options.cap }),
    );
    const filter = { fromBlock: "0x0", toBlock: hex(chain.head) };
    const counted = async (scenario: string, fetchLogs: () => Promise<unknown[]>) => {
      const calls = providers.reduce((sum, p) => sum + p.logCalls, 0);
      const refused = providers.reduce((sum, p) => sum + p.refused, 0);
      const started = performance.now();
      const logs = await fetchLogs();
      const ms = performance.now() - started;
      return {
        scenario,
        logs,
        upstreamCalls: providers.reduce((sum, p) => sum + p.logCalls, 0) - calls,
        refused: providers.reduce((sum, p) => sum + p.refused, 0) - refused,
        ms,
      };
    };

    const direct = await counted(`node directly, ${options.cap}-block pieces in turn`, () =>
      directInPieces(providers[0] as LogsRangeCap, chain.head, options.cap),
    );
    const records: LogsRecord[] = [record(direct, direct.logs)];
    for (const configured of [false, true]) {
      const stack = await startLocalStack({ config: config(providers, options, configured) });
      try {
        const query = () => viaGateway(`${stack.url}/devnet`, filter);
        const label = configured ? "max_logs_range configured" : "limits unknown";
        records.push(record(await counted(`gateway, ${label}: first query`, query), direct.logs));
        if (!configured) {
          records.push(record(await counted(`gateway, ${label}: next query`, query), direct.logs));
        }
      } finally {
        await stack.close();
      }
    }
    for (const r of records) {
      log(`logs: ${r.scenario}: ${r.upstreamCalls} calls, ${r.ms.toFixed(0)} ms, ${r.logs} logs`);
    }
    return { ...options, chainBuildMs, records };
  } finally {
    await Promise.all(providers.map((p) => p.close()));
    await node.stop();
  }
}

function record(
  measured: {
    scenario: string;
    logs: unknown[];
    upstreamCalls: number;
    refused: number;
    ms: number;
  },
  expected: unknown[],
): LogsRecord {
  return {
    scenario: measured.scenario,
    upstreamCalls: measured.upstreamCalls,
    refused: measured.refused,
    ms: measured.ms,
    logs: measured.logs.length,
    identical: isDeepStrictEqual(measured.logs, expected),
  };
}

function config(
  providers: readonly LogsRangeCap[],
  options: { readonly cap: number; readonly concurrency: number },
  configured: boolean,
): ConfigInput {
  return {
    networks: {
      devnet: {
        chain_id: 31337,
        logs_concurrency: options.concurrency,
        providers: providers.map((provider, index) => ({
          name: `capped-${index}`,
          url: provider.url,
          priority: 2 - index,
          ...(configured ? { max_logs_range: options.cap } : {}),
        })),
      },
    },
  };
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const answer = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (answer.error !== undefined) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

async function viaGateway(url: string, filter: object): Promise<unknown[]> {
  return (await rpc(url, "eth_getLogs", [filter])) as unknown[];
}

/** What a client does without the gateway: one capped-size query after another. */
async function directInPieces(
  provider: LogsRangeCap,
  head: number,
  cap: number,
): Promise<unknown[]> {
  const logs: unknown[] = [];
  for (let from = 0; from <= head; from += cap) {
    const to = Math.min(head, from + cap - 1);
    logs.push(
      ...((await rpc(provider.url, "eth_getLogs", [
        { fromBlock: hex(from), toBlock: hex(to) },
      ])) as unknown[]),
    );
  }
  return logs;
}
