/**
 * Reads CloudWatch embedded-metric-format lines back into metrics, the way CloudWatch does:
 * the metric names, units and dimension names come from the `_aws` directive, the values from
 * the members it names.
 */
export interface EmfMetric {
  readonly namespace: string;
  readonly name: string;
  readonly unit: string;
  /** Every declared dimension with its value. */
  readonly dimensions: Readonly<Record<string, string>>;
  readonly values: readonly number[];
}

interface Directive {
  readonly Namespace: string;
  readonly Dimensions: string[][];
  readonly Metrics: Array<{ Name: string; Unit: string }>;
}

export function parseEmf(lines: readonly string[]): EmfMetric[] {
  const metrics: EmfMetric[] = [];
  for (const line of lines) {
    const document = JSON.parse(line) as Record<string, unknown> & {
      _aws?: { CloudWatchMetrics?: Directive[] };
    };
    for (const directive of document._aws?.CloudWatchMetrics ?? []) {
      const dimensions: Record<string, string> = {};
      for (const name of directive.Dimensions.flat()) dimensions[name] = String(document[name]);
      for (const { Name, Unit } of directive.Metrics) {
        const value = document[Name];
        metrics.push({
          namespace: directive.Namespace,
          name: Name,
          unit: Unit,
          dimensions,
          values: (Array.isArray(value) ? value : [value]).map(Number),
        });
      }
    }
  }
  return metrics;
}

/** The metrics of one name, optionally with these dimension values. */
export function metricsNamed(
  metrics: readonly EmfMetric[],
  name: string,
  dimensions: Readonly<Record<string, string>> = {},
): EmfMetric[] {
  return metrics.filter(
    (metric) =>
      metric.name === name &&
      Object.entries(dimensions).every(([key, value]) => metric.dimensions[key] === value),
  );
}

/** Every value of the metrics given, in order. */
export function valuesOf(metrics: readonly EmfMetric[]): number[] {
  return metrics.flatMap((metric) => metric.values);
}
