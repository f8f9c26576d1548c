import { Agent, request } from "undici";
import type { NetworkStatus, ProviderStatus } from "../../functions/core/status/status.ts";

/** What a caller sees of one HTTP answer. */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

export interface RpcMember {
  readonly jsonrpc: string;
  readonly id: unknown;
  readonly result?: unknown;
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown };
}

/**
 * A caller of the gateway (or of a node directly) on a private connection pool, so faults
 * that reset connections in one test file never reach another's sockets.
 */
export class GatewayClient {
  readonly #agent = new Agent({ keepAliveTimeout: 1000 });

  /** POSTs `body` as written (JSON content type); GET when `body` is undefined. */
  async send(url: string, body?: string): Promise<HttpAnswer> {
    const response = await request(url, {
      dispatcher: this.#agent,
      method: body === undefined ? "GET" : "POST",
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body,
    });
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    return { status: response.statusCode, headers, text: await response.body.text() };
  }

  /** The network's status JSON from the gateway at `base`. */
  async status(base: string, network: string): Promise<NetworkStatus> {
    const answer = await this.send(`${base}/${network}/status`);
    if (answer.status !== 200) throw new Error(`status of ${network}: HTTP ${answer.status}`);
    return JSON.parse(answer.text) as NetworkStatus;
  }

  /** Each provider of the network's status, by name. */
  async providers(base: string, network: string): Promise<Map<string, ProviderStatus>> {
    const status = await this.status(base, network);
    return new Map(status.providers.map((provider) => [provider.name, provider]));
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

/** A JSON-RPC call's text, members in the usual order. */
export function rpcCall(method: string, params: unknown, id: unknown = 1): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
}
