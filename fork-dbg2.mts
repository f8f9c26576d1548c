import { startAnvil } from "./local/anvil.ts";
import { blockAt } from "./functions/monitor/upstream-calls.ts";
import { createUpstream } from "./functions/adapters/upstream.ts";
const n = await startAnvil({chainId:31337});
await n.rpc("anvil_mine",["0x64"]);
const upstream = createUpstream();
console.log(await blockAt({upstream, timeoutMs: 5000, maxResponseBytes: 1e6, scrub: (t)=>t}, {name:"a", url:n.url} as any, 36));
await upstream.close?.(); await n.stop();
