/**
 * `npx tsx bench/logs-checks.ts`: what the log-answer checks (docs/behaviour.md §12.12) cost
 * per eth_getLogs, side by side in one run, on one anvil chain with logs in every block behind
 * two honest providers per variant (each behind a counting front), the monitor ticking:
 *
 *   on        the defaults: near the head, the query batched with the headers of its blocks
 *   separate  the same checks on providers that take no batches (max_batch 1): the header of
 *             toBlock on a call of its own after the answer (the mechanism before batching)
 *   off       logs_check_headers 0 and logs_bloom off: the reach check of §12.10 as it was
 *             (a header call only for a provider never seen at toBlock)
 *
 * Shapes: a cursor indexer near the head (1-3 new blocks a query, over the last 40 blocks),
 * the same over a quiet filter (no log matches: every block is checked against its bloom),
 * and finalized history (100-block queries more than 64 blocks under the head). Per query:
 * upstream HTTP calls (x-gateway-attempts), calls the providers bill (batch members counted
 * one by one), and latency p50/p95. Writes bench/LOGS-CHECKS.md.
 */
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { startAnvil } from "../local/anvil.ts";
import { buildLogChain } from "../local/log-chain.ts";
import { startLocalStack } from "../local/stack.ts";

const hex = (n: number) => `0x${n.toString(16)}`;
const VARIANTS = ["on", "separate", "off"] as const;
type Variant = (typeof VARIANTS)[number];

interface Counts {
  requests: number;
  billed: number;
}

interface Call {
  readonly method: string;
  readonly params?: unknown[];
}

const ofLogPath = (call: Call) =>
  call.method === "eth_getLogs" ||
  call.method === "eth_getBlockReceipts" ||
  (call.method === "eth_getBlockByNumber" && /^0x/.test(String(call.params?.[0])));

async function countingFront(nodeUrl: string, counts: Counts) {
  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString("utf8");
      const parsed = JSON.parse(body) as Call | Call[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      // The log path's calls only: the monitor's checks ask by tag, never a numbered block.
      if (calls.some(ofLogPath)) {
        counts.requests++;
        counts.billed += calls.length;
      }
      const answer = await fetch(nodeUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      const text = await answer.text();
      res.writeHead(200, { "content-type": "application/json" });
      res.end(text);
    })().catch(() => req.socket.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
};

async function main(): Promise<void> {
  const node = await startAnvil({ chainId: 31337 });
  const chain = await buildLogChain(node, { blocks: 240, every: 1 });
  const counts = Object.fromEntries(VARIANTS.map((v) => [v, { requests: 0, billed: 0 }])) as Record<
    Variant,
    Counts
  >;
  const fronts = await Promise.all(
    VARIANTS.flatMap((variant) => [0, 1].map(() => countingFront(node.url, counts[variant]))),
  );
  const settings: Record<Variant, Record<string, unknown>> = {
    on: {},
    separate: {},
    off: { logs_check_headers: 0, logs_bloom: "off" },
  };
  const stack = await startLocalStack({
    monitor: true,
    writeMetrics: () => undefined,
    config: {
      // One tick at the start, none during the measurement: its calls would count as the log path's.
      check_interval_seconds: 60,
      // Every query a miss: the cost of the checks, not of the cache.
      cache: false,
      networks: Object.fromEntries(
        VARIANTS.map((variant, index) => [
          variant,
          {
            chain_id: 31337,
            block_time_seconds: 1,
            // Its batches of numbered headers would count as the log path's.
            quorum: { fork_check: false },
            ...settings[variant],
            providers: [0, 1].map((n) => ({
              name: `${variant}-${n}`,
              url: fronts[index * 2 + n]?.url ?? "",
              ...(variant === "separate" ? { max_batch: 1 } : {}),
            })),
          },
        ]),
      ),
    },
  });
  try {
    for (let wait = 0; wait < 100; wait++) {
      const ready = await Promise.all(
        VARIANTS.map(async (variant) => {
          const status = (await fetch(`${stack.url}/${variant}/status`).then((r) => r.json())) as {
            served_head: { finalized: number | null };
          };
          return status.served_head.finalized !== null;
        }),
      );
      if (ready.every(Boolean)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const head = chain.head;
    const cursorRanges: Array<[number, number]> = [];
    for (let cursor = head - 40, step = 0; cursor < head; step++) {
      const to = Math.min(head, cursor + 1 + (step % 3));
      cursorRanges.push([cursor + 1, to]);
      cursor = to;
    }
    const historyRanges: Array<[number, number]> = [];
    for (let from = 0; from + 99 < head - 70; from += 100) historyRanges.push([from, from + 99]);
    const quiet = `0x${"ab".repeat(32)}`;
    const shapes = [
      { name: "cursor near the head (1-3 new blocks)", ranges: cursorRanges, topics: undefined },
      {
        name: "cursor near the head, quiet filter (empty answers)",
        ranges: cursorRanges,
        topics: [quiet],
      },
      { name: "finalized history (100 blocks a query)", ranges: historyRanges, topics: undefined },
    ];
    const rows: string[] = [];
    // The first pass warms connections and code paths; it is not recorded.
    for (const [index, shape] of [shapes[0], ...shapes].entries()) {
      if (shape === undefined) continue;
      for (const variant of VARIANTS) {
        const before = { ...counts[variant] };
        const latencies: number[] = [];
        let attempts = 0;
        for (const [from, to] of shape.ranges) {
          const started = performance.now();
          const response = await fetch(`${stack.url}/${variant}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: 1,
              method: "eth_getLogs",
              params: [
                {
                  address: chain.contract,
                  topics: shape.topics,
                  fromBlock: hex(from),
                  toBlock: hex(to),
                },
              ],
            }),
          });
          const body = (await response.json()) as { result?: unknown[]; error?: unknown };
          latencies.push(performance.now() - started);
          if (body.error !== undefined)
            throw new Error(`${variant}: ${JSON.stringify(body.error)}`);
          attempts += Number(response.headers.get("x-gateway-attempts") ?? 0);
        }
        const queries = shape.ranges.length;
        const requests = counts[variant].requests - before.requests;
        const billed = counts[variant].billed - before.billed;
        if (index === 0) continue;
        rows.push(
          `| ${shape.name} | ${variant} | ${queries} | ${(attempts / queries).toFixed(2)} | ${(requests / queries).toFixed(2)} | ${(billed / queries).toFixed(2)} | ${quantile(latencies, 0.5).toFixed(1)} | ${quantile(latencies, 0.95).toFixed(1)} |`,
        );
        console.info(rows.at(-1));
      }
    }
    const report = `# What the log-answer checks cost per query

Generated by \`npx tsx bench/logs-checks.ts\` (${new Date().toISOString().slice(0, 10)}): one anvil chain of ${head} blocks
with two logs in every block, the local stack with its monitor, two honest providers per variant behind
counting fronts, the answer cache off. Upstream requests: HTTP requests of the log path the providers received
(the monitor's checks left out); billed: calls the providers bill, each member of a batch
counted. Latencies are local (loopback, anvil): compare them within a row group, not with a real provider's.

| shape | variant | queries | x-gateway-attempts / query | upstream requests / query | billed calls / query | p50 ms | p95 ms |
|---|---|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}
`;
    writeFileSync(new URL("./LOGS-CHECKS.md", import.meta.url), report);
  } finally {
    await stack.close();
    await Promise.all(fronts.map((front) => front.close()));
    await node.stop();
  }
}

await main();
