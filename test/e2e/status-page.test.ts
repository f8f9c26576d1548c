import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { findChromium, UNDER_CI } from "../support/environment.ts";

/**
 * GET /status with Accept: text/html is a readable page: rendered here by headless Chromium,
 * found on PATH (Debian's package; .ci/run installs it). Without Chromium the test is skipped,
 * except under CI, where it fails.
 */
const CHROMIUM = findChromium();
const run = promisify(execFile);

let node: AnvilNode;
let stack: LocalStack;
let profile: string;

beforeAll(async () => {
  if (!CHROMIUM) {
    if (UNDER_CI) throw new Error("no Chromium on PATH: install Debian's chromium (see .ci/run)");
    return;
  }
  node = await startAnvil({ chainId: 31337 });
  stack = await startLocalStack({
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          providers: [
            { name: "anvil-main", url: node.url, priority: 2 },
            { name: "paid-backup", url: "http://127.0.0.1:9/v2/SECRETKEY0123456789", backup: true },
          ],
        },
      },
    },
  });
  profile = await mkdtemp(join(tmpdir(), "chromium-profile-"));
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await node?.stop();
  if (profile) await rm(profile, { recursive: true, force: true });
});

describe("status page", () => {
  it.skipIf(!CHROMIUM && !UNDER_CI)(
    "renders every network and provider, redacted, auto-refreshing",
    async () => {
      // Some traffic first, so the page shows stats.
      await fetch(`${stack.url}/devnet`, {
        method: "POST",
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      });
      const { stdout } = await run(
        CHROMIUM as string,
        [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          `--user-data-dir=${profile}`,
          "--dump-dom",
          `${stack.url}/status`,
        ],
        { timeout: 60_000 },
      );
      expect(stdout).toContain("<h1>RPC gateway status</h1>");
      expect(stdout).toContain("devnet");
      expect(stdout).toContain("anvil-main");
      expect(stdout).toContain("paid-backup");
      expect(stdout).toContain('http-equiv="refresh"');
      expect(stdout).toMatch(/<table>[\s\S]*<td>anvil-main<\/td>/);
      expect(stdout).not.toContain("SECRETKEY0123456789");
    },
  );
});
