/**
 * Small inline SVG charts for the status page: a row of bars or a few lines over a fixed
 * number of slots (one per minute), with optional markers at event times. Everything is drawn
 * from numbers computed here, and every text goes through the caller's escaping, so a chart
 * carries nothing a provider sent. No external asset, no script: the page renders from the
 * Lambda's answer alone.
 */

export interface ChartSeries {
  /** One value per slot, oldest first; null is a slot without data (a gap in a line). */
  readonly values: ReadonlyArray<number | null>;
  /** CSS class of the bars or the line (its colour comes from the page's style). */
  readonly className: string;
}

export interface ChartMarker {
  /** Position in slots from the left edge (fractional: an event inside a minute). */
  readonly position: number;
  readonly className: string;
  /** Shown as the marker's tooltip; already escaped by the caller. */
  readonly title: string;
}

export interface ChartOptions {
  /** The chart's accessible name (already escaped). */
  readonly label: string;
  /** Slots along the x axis. */
  readonly slots: number;
  readonly bars?: ChartSeries;
  readonly lines?: readonly ChartSeries[];
  /** The top of the y axis; default: a round number above the largest value. */
  readonly max?: number;
  readonly markers?: readonly ChartMarker[];
}

const WIDTH = 240;
const HEIGHT = 48;
/** Room above the tallest value, so a peak is never cut by the frame. */
const TOP_MARGIN = 2;

const round = (value: number) => Math.round(value * 10) / 10;

/** The smallest of 1, 2 and 5 times a power of ten that is at least `value` (1 for none). */
export function niceCeiling(value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= value) return step * power;
  }
  return 10 * power;
}

function largest(options: ChartOptions): number {
  const values = [options.bars, ...(options.lines ?? [])].flatMap((series) =>
    (series?.values ?? []).filter((value): value is number => value !== null),
  );
  return Math.max(0, ...values);
}

export function chart(options: ChartOptions): string {
  const slots = Math.max(1, options.slots);
  const slotWidth = WIDTH / slots;
  const max = options.max ?? niceCeiling(largest(options));
  const y = (value: number) =>
    round(HEIGHT - (Math.min(Math.max(value, 0), max) / max) * (HEIGHT - TOP_MARGIN));
  const parts: string[] = [
    `<line class="axis" x1="0" y1="${HEIGHT - 0.5}" x2="${WIDTH}" y2="${HEIGHT - 0.5}"/>`,
  ];
  if (options.bars) {
    const rects = options.bars.values.flatMap((value, index) => {
      if (value === null || value <= 0) return [];
      const top = y(value);
      return [
        `<rect x="${round(index * slotWidth + 0.5)}" y="${top}" width="${round(Math.max(slotWidth - 1, 0.5))}" height="${round(HEIGHT - top)}"/>`,
      ];
    });
    parts.push(`<g class="${options.bars.className}">${rects.join("")}</g>`);
  }
  for (const line of options.lines ?? []) {
    parts.push(`<path class="${line.className}" d="${linePath(line.values, slotWidth, y)}"/>`);
  }
  for (const marker of options.markers ?? []) {
    const x = round(Math.min(Math.max(marker.position, 0), slots) * slotWidth);
    parts.push(
      `<line class="marker ${marker.className}" x1="${x}" y1="0" x2="${x}" y2="${HEIGHT}"><title>${marker.title}</title></line>`,
    );
  }
  return `<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" preserveAspectRatio="none" role="img" aria-label="${options.label}" data-max="${max}"><title>${options.label}</title>${parts.join("")}</svg>`;
}

/** A line through the slots' centres, broken where a slot has no value. */
function linePath(
  values: ReadonlyArray<number | null>,
  slotWidth: number,
  y: (value: number) => number,
): string {
  const commands: string[] = [];
  let drawing = false;
  values.forEach((value, index) => {
    if (value === null) {
      drawing = false;
      return;
    }
    const x = round((index + 0.5) * slotWidth);
    commands.push(`${drawing ? "L" : "M"}${x} ${y(value)}`);
    // A lone point would draw nothing: a zero-length segment with round caps is a dot.
    if (!drawing && values[index + 1] == null) commands.push("l0.01 0");
    drawing = true;
  });
  return commands.join(" ") || "M0 0";
}
