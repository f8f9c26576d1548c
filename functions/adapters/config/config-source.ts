import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Config } from "../../core/config/config-schema.ts";
import type { ConfigSourceInfo } from "../../core/config/network-model.ts";
import { parseConfig } from "../../core/config/network-model.ts";
import { type ConfigFileProblem, describeProblems, parseConfigText } from "./config-file.ts";
import {
  type S3ObjectAnswer,
  S3ObjectError,
  S3ObjectNotText,
  type S3ObjectReader,
} from "./s3-object.ts";

/**
 * The runtime config loader (docs/behaviour.md §1): the S3 object, re-checked at most every
 * `config_refresh_seconds` with a conditional GET; a bad or unreachable object keeps the last
 * good config; at cold start the copy bundled with the function stands in.
 */

export interface LoadedConfig {
  readonly config: Config;
  readonly source: ConfigSourceInfo;
}

/** For the caller to log and count; `location` is `s3://bucket/key` or the file path. */
export type ConfigSourceEvent =
  | { readonly type: "config_changed"; readonly source: ConfigSourceInfo }
  | {
      readonly type: "config_rejected";
      readonly location: string;
      readonly problems: readonly ConfigFileProblem[];
    }
  | { readonly type: "config_source_error"; readonly location: string; readonly error: string };

interface CommonOptions {
  /** Seconds between checks; default: the loaded config's `config_refresh_seconds`. */
  readonly refreshSeconds?: number;
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly clock?: () => number;
}

export interface S3ConfigSourceOptions extends CommonOptions {
  readonly kind: "s3";
  readonly bucket: string;
  readonly key: string;
  /** Reads the object (`s3-object.ts`). */
  readonly s3: S3ObjectReader;
  /** The config bundled with the function (a parsed JSON value), used at cold start if S3 fails. */
  readonly bundled: unknown;
  /** Bound on one S3 call, so a hung S3 cannot hold requests; default `S3_READ_TIMEOUT_MS`. */
  readonly requestTimeoutMs?: number;
  /**
   * The config validated at build time for a document with exactly this text, if any
   * (`config-prepared.ts`): such a document is not parsed again.
   */
  readonly prepared?: (text: string) => Config | undefined;
}

/** A local file, re-read at the same interval so edits apply without a restart. */
export interface FileConfigSourceOptions extends CommonOptions {
  readonly kind: "file";
  readonly path: string;
}

export type ConfigSourceOptions = S3ConfigSourceOptions | FileConfigSourceOptions;

export interface ConfigSource {
  /** The config in force. Throws only when no config has ever loaded. */
  current(): Promise<LoadedConfig>;
  /** Tells `listener` of every change, rejection and outage from now on. */
  subscribe(listener: (event: ConfigSourceEvent) => void): void;
}

/**
 * A document's text and version (ETag or content hash), a document that is no text, or
 * "unchanged" from `knownVersion`.
 */
type Fetched =
  | { readonly text: string; readonly version: string }
  | { readonly notText: string; readonly version: string }
  | "unchanged";

interface Origin {
  readonly kind: "s3" | "file";
  readonly location: string;
  fetch(knownVersion: string | undefined): Promise<Fetched>;
}

/** One read of the S3 object, credentials, connection and whole body included. */
const S3_READ_TIMEOUT_MS = 3_000;

/** The longest wait between checks while S3 hangs, in refresh intervals. */
const MAX_BACKOFF_FACTOR = 8;

const contentHash = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The version of an S3 answer that came without an ETag: its content's, which S3 knows nothing of. */
const CONTENT_VERSION = "sha256:";

function s3Origin(options: S3ConfigSourceOptions): Origin {
  const { bucket, key, s3, requestTimeoutMs = S3_READ_TIMEOUT_MS } = options;
  return {
    kind: "s3",
    location: `s3://${bucket}/${key}`,
    async fetch(knownVersion) {
      const conditional = knownVersion !== undefined && !knownVersion.startsWith(CONTENT_VERSION);
      let answer: S3ObjectAnswer;
      try {
        answer = await s3.get({
          ...(conditional ? { ifNoneMatch: knownVersion } : {}),
          timeoutMs: requestTimeoutMs,
        });
      } catch (error) {
        if (!(error instanceof S3ObjectNotText)) throw error;
        return error.etag === knownVersion
          ? "unchanged"
          : { notText: error.message, version: error.etag };
      }
      if (answer === "unchanged") return answer;
      // Without an ETag (a proxy in front of S3 that drops it) every answer had the version "",
      // so a changed object was taken for the one in force and never loaded.
      const version = answer.etag || `${CONTENT_VERSION}${contentHash(answer.text)}`;
      return version === knownVersion ? "unchanged" : { text: answer.text, version };
    },
  };
}

function fileOrigin(path: string): Origin {
  return {
    kind: "file",
    location: path,
    async fetch(knownVersion) {
      const text = await readFile(path, "utf8");
      const version = contentHash(text);
      return version === knownVersion ? "unchanged" : { text, version };
    },
  };
}

export function createConfigSource(options: ConfigSourceOptions): ConfigSource {
  const origin = options.kind === "s3" ? s3Origin(options) : fileOrigin(options.path);
  const bundled = options.kind === "s3" ? options.bundled : undefined;
  const prepared = options.kind === "s3" ? options.prepared : undefined;
  const clock = options.clock ?? Date.now;

  let inForce: { loaded: LoadedConfig; version: string } | undefined;
  /** Version of the last document fetched, adopted or rejected: a rejected one is not re-read. */
  let seenVersion: string | undefined;
  let checkedAt = 0;
  let inflight: Promise<LoadedConfig> | undefined;

  const listeners: Array<(event: ConfigSourceEvent) => void> = [];
  const emit = (event: ConfigSourceEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // A failing listener must not take the config down with it.
      }
    }
  };

  const adopt = (config: Config, kind: ConfigSourceInfo["kind"], version: string): LoadedConfig => {
    if (inForce?.version === version) return inForce.loaded;
    const loaded_at = new Date(clock()).toISOString();
    const source: ConfigSourceInfo =
      kind === "s3" ? { kind, etag: version, loaded_at } : { kind, loaded_at };
    inForce = { loaded: { config, source }, version };
    emit({ type: "config_changed", source });
    return inForce.loaded;
  };

  /**
   * Failed checks in a row that were slow: each ran out of time, or took at least half of it,
   * holding its request that long (a check runs on the request path), so while S3 hangs or
   * crawls the wait before the next check doubles, up to `MAX_BACKOFF_FACTOR` times the
   * interval. A check that fails fast costs no request anything and is retried at the interval.
   */
  let slowFailuresInARow = 0;
  /** Half the read's time limit, in real time (the injected clock is the config's, not the wire's). */
  const slowAfterMs =
    options.kind === "s3" ? (options.requestTimeoutMs ?? S3_READ_TIMEOUT_MS) / 2 : Infinity;

  /** Why the origin gave no config this time, for the cold-start error. */
  const checkOrigin = async (): Promise<string | undefined> => {
    const slowFailuresBefore = slowFailuresInARow;
    slowFailuresInARow = 0;
    const startedAt = performance.now();
    try {
      const fetched = await origin.fetch(inForce ? seenVersion : undefined);
      if (fetched === "unchanged") return undefined;
      seenVersion = fetched.version;
      const config = "text" in fetched ? prepared?.(fetched.text) : undefined;
      const result =
        "notText" in fetched
          ? { ok: false as const, problems: [{ path: "(root)", message: fetched.notText }] }
          : config
            ? { ok: true as const, config }
            : parseConfigText(fetched.text);
      if (result.ok) {
        adopt(result.config, origin.kind, fetched.version);
        return undefined;
      }
      emit({ type: "config_rejected", location: origin.location, problems: result.problems });
      return describeProblems(origin.location, result.problems);
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      // The read's own deadline, not an S3 error answer that names its code TimeoutError.
      const timedOut =
        error instanceof Error &&
        error.name === "TimeoutError" &&
        !(error instanceof S3ObjectError);
      if (timedOut || performance.now() - startedAt >= slowAfterMs) {
        slowFailuresInARow = slowFailuresBefore + 1;
      }
      emit({ type: "config_source_error", location: origin.location, error: message });
      return `${origin.location}: ${message}`;
    }
  };

  const refresh = async (): Promise<LoadedConfig> => {
    const failure = await checkOrigin();
    checkedAt = clock();
    if (inForce) return inForce.loaded;
    if (bundled !== undefined) {
      const result = parseConfig(bundled);
      if (result.ok) return adopt(result.config, "bundled", "bundled");
      throw new Error(
        `no usable config: ${failure}\nand the bundled copy is invalid:\n${describeProblems("bundled", result.problems)}`,
      );
    }
    throw new Error(`no usable config: ${failure}`);
  };

  const due = (config: Config): boolean => {
    const sinceCheck = clock() - checkedAt;
    // A clock that went back says nothing of the time since the last check: check now, rather
    // than wait for it to catch up.
    if (sinceCheck < 0) return true;
    const interval = (options.refreshSeconds ?? config.config_refresh_seconds) * 1000;
    return sinceCheck >= interval * Math.min(2 ** slowFailuresInARow, MAX_BACKOFF_FACTOR);
  };

  return {
    subscribe(listener) {
      listeners.push(listener);
    },
    current() {
      if (inForce && !due(inForce.loaded.config)) return Promise.resolve(inForce.loaded);
      inflight ??= refresh().finally(() => {
        inflight = undefined;
      });
      return inflight;
    },
  };
}
