import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GoneException,
  PostToConnectionCommand,
} from "@aws-sdk/client-apigatewaymanagementapi";
import type { ConnectionPush } from "../../core/ports.ts";
import type { PushOutcome } from "../../core/subscriptions/subscription-records.ts";

/**
 * Pushes to WebSocket connections through API Gateway's management API (PostToConnection,
 * DeleteConnection), one client per network's stage (`<base>/<network>`): in AWS the API's
 * `https://{api}.execute-api.{region}.amazonaws.com`, locally the emulator's
 * `http://127.0.0.1:<port>`, which speaks the same API (local/websocket/websocket-management.ts).
 * Only a function that pushes imports this (it adds the client to its bundle).
 */

export interface ConnectionPushOptions {
  /** The management API's base URL, without the stage (`WEBSOCKET_MANAGEMENT_URL`). */
  readonly baseUrl: string;
  readonly region?: string;
  /** Local credentials (the emulator checks the signature's shape, not its secret). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Told of every push that failed for another reason than a gone connection. */
  readonly onError?: (network: string, connectionId: string, error: unknown) => void;
}

export class ApiGatewayConnectionPush implements ConnectionPush {
  readonly #options: ConnectionPushOptions;
  readonly #clients = new Map<string, ApiGatewayManagementApiClient>();

  constructor(options: ConnectionPushOptions) {
    this.#options = options;
  }

  async post(network: string, connectionId: string, data: string): Promise<PushOutcome> {
    try {
      await this.#client(network).send(
        new PostToConnectionCommand({
          ConnectionId: connectionId,
          Data: new TextEncoder().encode(data),
        }),
      );
      return "ok";
    } catch (error) {
      if (isGone(error)) return "gone";
      this.#options.onError?.(network, connectionId, error);
      return "failed";
    }
  }

  /** Closes the connection; API Gateway carries no code or reason (the client sees 1000). */
  async close(network: string, connectionId: string, _reason: string): Promise<void> {
    try {
      await this.#client(network).send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
    } catch (error) {
      if (!isGone(error)) throw error;
    }
  }

  /** Closes the clients' sockets (tests, shutdown). */
  destroy(): void {
    for (const client of this.#clients.values()) client.destroy();
    this.#clients.clear();
  }

  #client(network: string): ApiGatewayManagementApiClient {
    let client = this.#clients.get(network);
    if (client === undefined) {
      const { baseUrl, region, credentials } = this.#options;
      client = new ApiGatewayManagementApiClient({
        endpoint: `${baseUrl.replace(/\/+$/, "")}/${encodeURIComponent(network)}`,
        region: region ?? process.env.AWS_REGION ?? "us-east-1",
        ...(credentials ? { credentials } : {}),
        // Bounded: one slow push must not hold a block's other deliveries.
        maxAttempts: 2,
        requestHandler: {
          connectionTimeout: 1000,
          requestTimeout: 3000,
          throwOnRequestTimeout: true,
        },
      });
      this.#clients.set(network, client);
    }
    return client;
  }
}

/**
 * The connection is not there to push to (410: closed, or not yet open). A 403 is not taken
 * for gone: it is also what a missing `execute-api:ManageConnections` grant answers, which
 * must show as failures, not as every subscriber leaving.
 */
function isGone(error: unknown): boolean {
  return error instanceof GoneException;
}
