/**
 * API Gateway's WebSocket API quotas (its developer guide, "Amazon API Gateway quotas for
 * configuring and running a WebSocket API"), defined once for the stack, the socket Lambda
 * and the local emulator, so a message is bounded, timed out and closed the same way in all.
 * None of them can be raised.
 */

/** A frame, either way: larger client frames close the connection with 1009. */
export const WEBSOCKET_FRAME_BYTES = 32 * 1024;
/** A whole message (its frames together), either way: larger ones close with 1009. */
export const WEBSOCKET_MESSAGE_BYTES = 128 * 1024;
/** No message either way for this long, and API Gateway closes the connection. */
export const WEBSOCKET_IDLE_MS = 10 * 60_000;
/** A connection's longest life, whatever its traffic. */
export const WEBSOCKET_MAX_CONNECTION_MS = 2 * 60 * 60_000;
/** WebSocket APIs wait at most 29 s for an integration (HTTP APIs: 30 s). */
export const WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS = 29;
/** The socket function's timeout, under the integration's so a timeout is the function's. */
export const SOCKET_FUNCTION_TIMEOUT_SECONDS = 28;
/**
 * How long past a connection's 2-hour limit its records are kept: a `$disconnect` that comes
 * late (or never) cannot leave a record that lives on.
 */
export const CONNECTION_RECORD_MARGIN_MS = 10 * 60_000;
