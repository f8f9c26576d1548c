/**
 * API Gateway WebSocket events as the Lambda proxy integration delivers them (its developer
 * guide, "WebSocket API Lambda proxy integration"): `$connect` with the upgrade request's
 * headers (as the client wrote their names) and query string, `$default` with one message,
 * `$disconnect` with how the socket closed. The stage is the network.
 */
export interface WebSocketEvent {
  readonly requestContext: {
    readonly routeKey: string;
    readonly eventType: "CONNECT" | "MESSAGE" | "DISCONNECT";
    readonly connectionId: string;
    readonly stage: string;
    readonly connectedAt?: number;
    readonly requestTimeEpoch?: number;
    readonly requestId?: string;
    readonly messageId?: string;
    readonly domainName?: string;
    readonly apiId?: string;
    readonly disconnectStatusCode?: number;
    readonly disconnectReason?: string;
    readonly identity?: { readonly sourceIp?: string; readonly userAgent?: string };
  };
  readonly headers?: Readonly<Record<string, string | undefined>> | null;
  readonly queryStringParameters?: Readonly<Record<string, string | undefined>> | null;
  readonly body?: string | null;
  readonly isBase64Encoded?: boolean;
}

/** A route's answer: `$connect` accepts with 2xx; a `$default` body is the reply message. */
export interface WebSocketResult {
  readonly statusCode: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

/** A header of the event, whatever the case its name was sent in. */
export function headerOf(event: WebSocketEvent, name: string): string | undefined {
  const headers = event.headers;
  if (headers === undefined || headers === null) return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

/** The message's text (API Gateway base64-encodes only what it cannot pass as text). */
export function messageBody(event: WebSocketEvent): string {
  const body = event.body ?? "";
  return event.isBase64Encoded ? Buffer.from(body, "base64").toString("utf8") : body;
}
