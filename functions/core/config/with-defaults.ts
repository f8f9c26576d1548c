import * as z from "zod/mini";

/** Builds a schema with defaults and its override twin (every field optional, no defaults). */
export function withDefaults<T extends Record<string, z.ZodMiniType>>(
  fields: T,
  defaults: { [K in keyof T]: z.output<T[K]> },
) {
  const shape = Object.fromEntries(
    Object.entries(fields).map(([key, field]) => [
      key,
      z._default(field, defaults[key as keyof T] as never),
    ]),
  ) as unknown as { [K in keyof T]: z.ZodMiniDefault<T[K]> };
  const full = z.strictObject(shape);
  const override = z.partial(z.strictObject(fields));
  // prefault runs {} through the schema, so every field takes its own default.
  return { shape, full: z.prefault(full, {} as z.input<typeof full>), override };
}
