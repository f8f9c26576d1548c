/** Polls `condition` every 20 ms until it holds; fails after `timeoutMs` (default 5 s). */
export async function waitUntil(
  condition: () => Promise<boolean>,
  timeoutMs = 5000,
): Promise<void> {
  for (const start = Date.now(); Date.now() - start < timeoutMs; ) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}
