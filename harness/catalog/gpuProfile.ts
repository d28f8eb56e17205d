// The GPU profile shape (gpu-profiles/<name>.yaml) as a zod schema, kept apart from the loader so
// pure code (the cost model, cost reports) can import the type without file I/O.
import { z } from 'zod';

const positive = z.number().positive();
const fraction = z.number().gt(0).lte(1);

// One GPU's peak figures, price and the efficiency factors the iteration-time model uses.
export const gpuProfileSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/, 'lowercase letters, digits, dots and dashes'),
  nvidiaSmiName: z.string().min(1),
  memoryGiB: positive,
  hbmTBps: positive,
  bf16Tflops: positive,
  nvlinkGBps: z.number().nonnegative(),
  pcieGBps: positive.default(32),
  price: z
    .strictObject({
      usdPerGpuHour: positive,
      source: z.string().min(1),
      date: z.union([z.string(), z.date().transform((d) => d.toISOString().slice(0, 10))]),
    })
    .optional(),
  efficiency: z.strictObject({
    compute: fraction,
    memory: fraction,
    attention: fraction,
    allReduce: fraction,
    allReduceLatencyUs: z.number().nonnegative(),
    iterationOverheadMs: z.number().nonnegative(),
  }),
});

// A parsed GPU profile: every number in the unit its name says.
export type GpuProfile = z.infer<typeof gpuProfileSchema>;
