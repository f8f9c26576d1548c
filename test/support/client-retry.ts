import { BaseError, HttpRequestError, RpcRequestError } from "viem";
import { buildRequest } from "viem/utils";

/**
 * Whether viem's own retry rule (`buildRequest`'s `shouldRetry`, which every viem transport
 * applies) retries an error a viem client surfaced: the transport's error inside it is thrown
 * again into a real `buildRequest` allowed one retry, and the tries are counted.
 */
export async function viemRetries(error: Error): Promise<boolean> {
  const cause =
    error instanceof BaseError
      ? error.walk((inner) => inner instanceof RpcRequestError || inner instanceof HttpRequestError)
      : null;
  let tries = 0;
  const request = buildRequest(
    async () => {
      tries++;
      throw cause ?? error;
    },
    { retryCount: 1, retryDelay: 0 },
  );
  await request({ method: "eth_blockNumber" }).catch(() => undefined);
  return tries > 1;
}
