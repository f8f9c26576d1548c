import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnOwned, stopChild, waitUntilReady } from "../../local/child-process.ts";

/**
 * Headless Chromium driven over the DevTools protocol (Node's own WebSocket, nothing to
 * install): load a page at a given viewport, read its DOM, take a screenshot. The browser
 * runs in its own throwaway profile and is stopped by `close`.
 */
export interface HeadlessPage {
  /** Loads `url` at `width` × `height` CSS pixels (a phone when `mobile`), and waits for `load`. */
  open(url: string, viewport: Viewport): Promise<void>;
  /** Evaluates an expression in the page and returns its value (JSON-serialisable). */
  evaluate<T>(expression: string): Promise<T>;
  /** A PNG of the whole page, beyond the viewport. */
  screenshot(): Promise<Buffer>;
  close(): Promise<void>;
}

export interface Viewport {
  readonly width: number;
  readonly height: number;
  readonly mobile?: boolean;
}

interface CdpAnswer {
  id?: number;
  method?: string;
  result?: Record<string, unknown>;
  error?: { message: string };
}

const COMMAND_TIMEOUT_MS = 30_000;

export async function startHeadlessChromium(binary: string): Promise<HeadlessPage> {
  const profile = await mkdtemp(join(tmpdir(), "chromium-cdp-"));
  const owned = spawnOwned(binary, [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    `--user-data-dir=${profile}`,
    "about:blank",
  ]);
  const stop = async () => {
    await stopChild(owned.child);
    // Chromium's helper processes may still be writing into the profile for a moment after the
    // browser exits (seen in CI as ENOTEMPTY): removal is retried as they finish.
    await rm(profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  };
  try {
    // Chromium writes the port it chose (and the browser's path) into the profile.
    let port = 0;
    await waitUntilReady(
      owned,
      async () => {
        const [line] = (await readFile(join(profile, "DevToolsActivePort"), "utf8")).split("\n");
        port = Number(line);
        return port > 0;
      },
      { what: "headless Chromium", timeoutMs: 30_000 },
    );
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
      type: string;
      webSocketDebuggerUrl: string;
    }>;
    const target = targets.find((candidate) => candidate.type === "page");
    if (target === undefined) throw new Error("headless Chromium opened no page");
    const socket = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => resolve(), { once: true });
      socket.addEventListener("error", () => reject(new Error("DevTools socket failed")), {
        once: true,
      });
    });
    let nextId = 1;
    const pending = new Map<number, (answer: CdpAnswer) => void>();
    const waiting = new Map<string, Array<() => void>>();
    socket.addEventListener("message", (message) => {
      const answer = JSON.parse(String(message.data)) as CdpAnswer;
      if (answer.id !== undefined) pending.get(answer.id)?.(answer);
      if (answer.method !== undefined) {
        for (const resolve of waiting.get(answer.method) ?? []) resolve();
        waiting.delete(answer.method);
      }
    });
    const send = (method: string, params: Record<string, unknown> = {}) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(
          () => reject(new Error(`${method}: no answer`)),
          COMMAND_TIMEOUT_MS,
        );
        pending.set(id, (answer) => {
          clearTimeout(timer);
          pending.delete(id);
          if (answer.error) reject(new Error(`${method}: ${answer.error.message}`));
          else resolve(answer.result ?? {});
        });
        socket.send(JSON.stringify({ id, method, params }));
      });
    const next = (event: string) =>
      new Promise<void>((resolve) => {
        waiting.set(event, [...(waiting.get(event) ?? []), resolve]);
      });
    await send("Page.enable");
    return {
      async open(url, viewport) {
        await send("Emulation.setDeviceMetricsOverride", {
          width: viewport.width,
          height: viewport.height,
          deviceScaleFactor: 1,
          mobile: viewport.mobile ?? false,
        });
        const loaded = next("Page.loadEventFired");
        await send("Page.navigate", { url });
        await loaded;
      },
      async evaluate<T>(expression: string) {
        const result = await send("Runtime.evaluate", { expression, returnByValue: true });
        const exception = result.exceptionDetails as { text?: string } | undefined;
        if (exception) throw new Error(`evaluate failed: ${exception.text ?? expression}`);
        return (result.result as { value: T }).value;
      },
      async screenshot() {
        const metrics = await send("Page.getLayoutMetrics");
        const size = metrics.cssContentSize as { width: number; height: number };
        const result = await send("Page.captureScreenshot", {
          format: "png",
          captureBeyondViewport: true,
          clip: { x: 0, y: 0, width: size.width, height: size.height, scale: 1 },
        });
        return Buffer.from(String(result.data), "base64");
      },
      async close() {
        socket.close();
        await stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
