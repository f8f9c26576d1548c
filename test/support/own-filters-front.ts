import { type LyingFront, startLyingFront } from "./lying-front.ts";

/**
 * A provider in front of a node that several providers share, standing for a node of its own
 * as far as filters go: the filters installed through it are its own, and an id it did not
 * give out is geth's "filter not found" (-32000), as any other node answers it. So a filter
 * polled through another provider than the one that installed it is lost, as between real
 * providers.
 */
export async function startOwnFiltersFront(nodeUrl: string): Promise<LyingFront> {
  const issued = new Set<string>();
  return startLyingFront(nodeUrl, async (call, forward) => {
    const params = Array.isArray(call.params) ? (call.params as unknown[]) : [];
    if (/^eth_new\w*Filter$/.test(call.method)) {
      const answer = await forward();
      if (typeof answer.result === "string") issued.add(answer.result);
      return answer;
    }
    if (/^eth_(getFilterChanges|getFilterLogs|uninstallFilter)$/.test(call.method)) {
      if (!issued.has(String(params[0]))) {
        return { error: { code: -32000, message: "filter not found" } };
      }
    }
    return forward();
  });
}
