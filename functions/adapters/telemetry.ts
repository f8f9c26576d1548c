import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit as MetricUnits } from "@aws-lambda-powertools/metrics";
import type { LogLevel, Telemetry } from "../core/ports.ts";

/**
 * Logs and CloudWatch embedded metrics through Powertools. Metrics are aggregated in memory
 * and written as EMF at most every `flushIntervalMs` (and at the end of an invocation via
 * `flush`), so a request costs no stdout write per metric. Every string that leaves here has
 * passed through `scrub`, which removes provider secrets.
 */
export interface TelemetryOptions {
  readonly serviceName: string;
  readonly namespace: string;
  readonly scrub: (text: string) => string;
  readonly clock?: () => number;
  readonly flushIntervalMs?: number;
  /** Where EMF lines go; stdout by default (CloudWatch reads them from there). */
  readonly write?: (line: string) => void;
  readonly logLevel?: string;
}

type MetricUnit = (typeof MetricUnits)[keyof typeof MetricUnits];

interface Series {
  readonly name: string;
  readonly unit: MetricUnit;
  readonly dimensions: Record<string, string>;
  sum: number;
  values: number[];
  readonly aggregate: boolean;
}

/** CloudWatch takes at most 100 values per metric in one EMF blob. */
const MAX_VALUES = 100;

export interface FlushableTelemetry extends Telemetry {
  /** Writes every pending metric now. */
  flush(): void;
  /** Writes pending metrics when the flush interval has passed (end of each invocation). */
  flushIfDue(): void;
  readonly logger: Logger;
}

export function createTelemetry(options: TelemetryOptions): FlushableTelemetry {
  const clock = options.clock ?? Date.now;
  const flushIntervalMs = options.flushIntervalMs ?? 5_000;
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const scrub = options.scrub;
  const logger = new Logger({
    serviceName: options.serviceName,
    logLevel: (options.logLevel ?? process.env.POWERTOOLS_LOG_LEVEL ?? "INFO") as "INFO",
    jsonReplacerFn: (_key, value) => (typeof value === "string" ? scrub(value) : value),
  });
  const series = new Map<string, Series>();
  let lastFlush = clock();

  function record(
    name: string,
    dimensions: Record<string, string>,
    value: number,
    unit: MetricUnit,
    aggregate: boolean,
  ): void {
    const cleanDimensions: Record<string, string> = {};
    for (const [key, dimension] of Object.entries(dimensions))
      cleanDimensions[key] = scrub(dimension);
    const id = `${name}|${unit}|${JSON.stringify(cleanDimensions)}`;
    let entry = series.get(id);
    if (!entry) {
      entry = { name, unit, dimensions: cleanDimensions, sum: 0, values: [], aggregate };
      series.set(id, entry);
    }
    if (aggregate) entry.sum += value;
    else entry.values.push(value);
    if (entry.values.length >= MAX_VALUES || clock() - lastFlush >= flushIntervalMs) flush();
  }

  function flush(): void {
    lastFlush = clock();
    if (series.size === 0) return;
    const pending = [...series.values()];
    series.clear();
    for (const entry of pending) {
      const metrics = new Metrics({
        namespace: options.namespace,
        serviceName: options.serviceName,
      });
      metrics.addDimensions(entry.dimensions);
      if (entry.aggregate) metrics.addMetric(entry.name, entry.unit, entry.sum);
      else for (const value of entry.values) metrics.addMetric(entry.name, entry.unit, value);
      write(JSON.stringify(metrics.serializeMetrics()));
      metrics.clearMetrics();
    }
  }

  const levels: Record<LogLevel, (message: string, fields: Record<string, unknown>) => void> = {
    debug: (message, fields) => logger.debug(scrub(message), fields),
    info: (message, fields) => logger.info(scrub(message), fields),
    warn: (message, fields) => logger.warn(scrub(message), fields),
    error: (message, fields) => logger.error(scrub(message), fields),
  };

  return {
    logger,
    log(level, message, fields = {}) {
      levels[level](message, fields);
    },
    count(name, dimensions, value = 1) {
      record(name, dimensions, value, MetricUnits.Count, true);
    },
    measure(name, dimensions, value, unit) {
      record(name, dimensions, value, MetricUnits[unit], false);
    },
    flush,
    flushIfDue() {
      if (clock() - lastFlush >= flushIntervalMs) flush();
    },
  };
}
