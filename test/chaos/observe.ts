import { setTimeout as sleep } from "node:timers/promises";
import type { SecretScanner } from "./secrets.ts";

/**
 * What the harness watches beside the traffic: every node's head (directly, and as each
 * provider shows it through its fault shim) and the gateway's status route.
 */

export interface HeadSample {
  /** When the answer arrived (ms since the epoch). */
  readonly at: number;
  readonly number: number;
  /** Block timestamp (s). */
  readonly timestamp: number;
}

export interface HeadSource {
  readonly name: string;
  readonly url: string;
}

/** Longer than any delay a scenario injects, so a slow provider still shows its head. */
const SAMPLE_TIMEOUT_MS = 1_500;

/** Samples `eth_getBlockByNumber("latest")` of each source every `intervalMs`. */
export class HeadTracker {
  readonly #sources: readonly HeadSource[];
  readonly #intervalMs: number;
  readonly #samples = new Map<string, HeadSample[]>();
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(sources: readonly HeadSource[], intervalMs: number) {
    this.#sources = sources;
    this.#intervalMs = intervalMs;
    for (const source of sources) this.#samples.set(source.name, []);
  }

  start(): void {
    // One loop per source, so a source that hangs or answers slowly delays only its own samples.
    this.#running = Promise.all(
      this.#sources.map(async (source) => {
        while (!this.#stopped) {
          const started = Date.now();
          await this.#sample(source);
          const wait = this.#intervalMs - (Date.now() - started);
          if (wait > 0 && !this.#stopped) await sleep(wait);
        }
      }),
    ).then(() => undefined);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  async #sample(source: HeadSource): Promise<void> {
    try {
      const response = await fetch(source.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}',
        signal: AbortSignal.timeout(SAMPLE_TIMEOUT_MS),
      });
      const answer = (await response.json()) as {
        result?: { number?: unknown; timestamp?: unknown };
      };
      const number = hexToNumber(answer.result?.number);
      const timestamp = hexToNumber(answer.result?.timestamp);
      if (number === null || timestamp === null) return;
      this.#samples.get(source.name)?.push({ at: Date.now(), number, timestamp });
    } catch {
      // A faulted source (hang, refuse, garbage) has no new sample: its last one stands.
    }
  }

  /** The source's last sample at or before `at`. */
  at(name: string, at: number): HeadSample | undefined {
    const samples = this.#samples.get(name) ?? [];
    let found: HeadSample | undefined;
    for (const sample of samples) {
      if (sample.at > at) break;
      found = sample;
    }
    return found;
  }

  /** The highest block timestamp any of `names` showed by `at` (each source's last sample). */
  maxTimestampAt(names: readonly string[], at: number): number | null {
    let best: number | null = null;
    for (const name of names) {
      const sample = this.at(name, at);
      if (sample && (best === null || sample.timestamp > best)) best = sample.timestamp;
    }
    return best;
  }

  /** The lowest head any of `names` showed most recently. */
  minNumberNow(names: readonly string[]): number | null {
    let best: number | null = null;
    for (const name of names) {
      const samples = this.#samples.get(name) ?? [];
      const last = samples[samples.length - 1];
      if (last && (best === null || last.number < best)) best = last.number;
    }
    return best;
  }
}

function hexToNumber(value: unknown): number | null {
  return typeof value === "string" && /^0x[0-9a-f]+$/i.test(value)
    ? Number.parseInt(value, 16)
    : null;
}

/** The parts of `GET /{network}/status` the harness reads. */
export interface ProviderStatus {
  readonly name: string;
  readonly state: string;
  readonly in_quorum: boolean;
  readonly quorum_reason: string | null;
  readonly head: { number: number | null; timestamp: number | null; lag_seconds: number | null };
  readonly strikes: number;
  readonly blacklist: { reason: string; until: string } | null;
  readonly last_probe: { at: string; result: string; detail: string } | null;
}

export interface NetworkStatusJson {
  readonly monitor: { last_tick_at: string | null; stale: boolean };
  readonly quorum: { head: number | null; head_timestamp: number | null; members: string[] };
  readonly active_provider: string | null;
  readonly providers: ProviderStatus[];
  readonly served_head: { readonly served: number | null };
}

export interface StatusSample {
  /** When the status request was sent: the document was computed after this. */
  readonly sentAt: number;
  /** When the answer arrived: the document was computed before this. */
  readonly at: number;
  readonly status: NetworkStatusJson;
}

/** Polls the status route every `intervalMs`; every document goes through the secret scan. */
export class StatusPoller {
  readonly samples: StatusSample[] = [];
  readonly #url: string;
  readonly #intervalMs: number;
  readonly #scanner: SecretScanner;
  #running: Promise<void> | null = null;
  #stopped = false;
  #errors = 0;

  constructor(url: string, intervalMs: number, scanner: SecretScanner) {
    this.#url = url;
    this.#intervalMs = intervalMs;
    this.#scanner = scanner;
  }

  get errors(): number {
    return this.#errors;
  }

  start(): void {
    this.#running = (async () => {
      while (!this.#stopped) {
        const started = Date.now();
        await this.poll();
        const wait = this.#intervalMs - (Date.now() - started);
        if (wait > 0 && !this.#stopped) await sleep(wait);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  /** One status read, recorded; undefined when the route did not answer. */
  async poll(): Promise<NetworkStatusJson | undefined> {
    const sentAt = Date.now();
    try {
      const response = await fetch(this.#url, { signal: AbortSignal.timeout(5_000) });
      const text = await response.text();
      this.#scanner.scan("status", text);
      for (const [name, value] of response.headers)
        this.#scanner.scan("status", `${name}: ${value}`);
      if (!response.ok) {
        this.#errors++;
        return undefined;
      }
      const status = JSON.parse(text) as NetworkStatusJson;
      this.samples.push({ sentAt, at: Date.now(), status });
      return status;
    } catch {
      this.#errors++;
      return undefined;
    }
  }

  latest(): StatusSample | undefined {
    return this.samples[this.samples.length - 1];
  }
}

export function providerOf(
  status: NetworkStatusJson | undefined,
  name: string,
): ProviderStatus | undefined {
  return status?.providers.find((provider) => provider.name === name);
}

/** Polls `check` every `intervalMs` until it is true; false when `timeoutMs` ran out. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(intervalMs);
  }
}
