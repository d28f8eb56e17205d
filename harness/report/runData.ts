// What a report is rendered from: the run directory's files, already read and checked, as plain
// data. Everything but capacity.json's SPEC §4 fields is optional, because runs written by older
// versions (or by hand, as the committed examples are) carry less; the renderer says what is absent.
import type { CapacityJson, GpuTelemetrySummary, PrefillFitResult, PrefillLine, ProbeSummary } from '../runDir/schema.ts';
import type { FluidRateResult } from '../metrics/fluidRate.ts';
import type { Slo } from '../metrics/slo.ts';
import type { ManifestRead } from '../runDir/read.ts';

/** Every field optional, at any depth (files from older runs lack some). */
export type DeepPartial<T> = T extends (infer U)[]
  ? DeepPartial<U>[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** One probe row of capacity.json: SPEC §4 guarantees its rate, the rest may be absent. */
export type CapacityProbe = DeepPartial<CapacityJson['probes'][number]> & { qps: number };

/** capacity.json as read: SPEC §4's required fields checked, the others as the run wrote them. */
export type CapacityFile = Omit<DeepPartial<CapacityJson>, 'capacityQps' | 'probes' | 'slo' | 'fluidTokenRateAtCapacity'> & {
  capacityQps: number;
  probes: CapacityProbe[];
  slo: Slo;
  fluidTokenRateAtCapacity?: DeepPartial<FluidRateResult> | null;
};

/** manifest.json as read: any field may be absent in a run of an older version. */
export type ManifestFile = ManifestRead;

/** One line of profile/prefill.jsonl (the isolated prefills behind the fit). */
export type PrefillPointLine = PrefillLine;

export type { GpuTelemetrySummary };

/** The GPU profile's price as gpu-profiles/<name>.yaml states it. */
export interface GpuPrice {
  usdPerGpuHour: number;
  source: string;
  date: string;
}

/** One probe: capacity.json's row plus its summary.json and gpu.jsonl when present. */
export interface ProbeData {
  /** The probe's number: as recorded, else its position in capacity.json (run order). */
  index: number;
  row: CapacityProbe;
  summary: DeepPartial<ProbeSummary> | null;
  gpu: GpuTelemetrySummary | null;
}

/** Everything the renderers need; built by loadRun (I/O) or by tests from literals. */
export interface RunReportData {
  runId: string;
  capacity: CapacityFile;
  manifest: ManifestFile | null;
  fit: DeepPartial<PrefillFitResult> | null;
  prefill: PrefillPointLine[];
  probes: ProbeData[];
  /** null with a reason when the profile has no price or is unknown here. */
  price: GpuPrice | null;
  priceNote: string | null;
  /** Files that were absent or unreadable; stated in the report instead of failing it. */
  notes: string[];
}
