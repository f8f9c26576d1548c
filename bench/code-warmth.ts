/**
 * How much slower the same code runs right after the process waited on I/O than back to back,
 * on this machine: the request parser over a JSON-RPC call, 4 times per sample, timed (a) in a
 * hot loop, (b) right after an HTTP exchange with another process (anvil), (c) right after a
 * 1 ms timer. A handler runs its code after an I/O wait on every request, so the more code a
 * request runs, the more of this it pays: the reason the gateway's CPU ratios against minimal
 * handlers are far above what its code costs in a hot loop (bench/RESULTS.md, Notes).
 *
 *   npx tsx bench/code-warmth.ts
 */
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { parseRequest } from "../functions/core/jsonrpc.ts";
import { startAnvil } from "../local/anvil.ts";

const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';
const LIMITS = { maxBodyBytes: 1_048_576, maxBatch: 100, maxDepth: 64 };
const SAMPLES = 3000;

function work(): void {
  for (let i = 0; i < 4; i++) parseRequest(BODY, LIMITS);
}

function timed(): bigint {
  const started = process.hrtime.bigint();
  work();
  return process.hrtime.bigint() - started;
}

const microsPerSample = (total: bigint) => Number(total) / SAMPLES / 1000;

const anvil = await startAnvil({ chainId: 31337 });
try {
  for (let i = 0; i < 20_000; i++) work();
  let hot = 0n;
  for (let i = 0; i < SAMPLES; i++) hot += timed();
  let afterExchange = 0n;
  for (let i = 0; i < SAMPLES; i++) {
    const answer = await request(anvil.url, {
      method: "POST",
      body: BODY,
      headers: { "content-type": "application/json" },
    });
    await answer.body.text();
    afterExchange += timed();
  }
  let afterTimer = 0n;
  for (let i = 0; i < SAMPLES; i++) {
    await sleep(1);
    afterTimer += timed();
  }
  const base = microsPerSample(hot);
  console.log(`back to back:                 ${base.toFixed(2)} µs`);
  for (const [name, total] of [
    ["after an HTTP exchange:      ", afterExchange],
    ["after a 1 ms timer:          ", afterTimer],
  ] as const) {
    const value = microsPerSample(total);
    console.log(`${name} ${value.toFixed(2)} µs = ${(value / base).toFixed(2)}×`);
  }
} finally {
  await anvil.stop();
}
