// Which SLO and which first-token deadline D_p an analysis uses, decided once from the run's files
// and the flags (pure: the caller reads the files). Precedence, most specific first:
//   D_p:        --ttft-deadline (fixed for every request) > prefill fit D_p(P) + TTFT slack >
//               (a run or probe directory without a fit) the TTFT slack alone, as a standalone probe judges
//   TTFT slack: --ttft-slack > the run's fluidity SLO > fit.json's ttftSlackS > 0.3 s
//   SLO:        the run's slo (capacity.json, else manifest.json) + flag overrides; Metron's
//               default fluidity SLO when the run names none (a lone timelines file).
import { UserError } from '../util/errors.ts';
import { formatDurationS } from '../util/duration.ts';
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import { applySloOverrides, fluiditySource, DEFAULT_FLUIDITY, type Slo, type SloOverrides } from '../metrics/slo.ts';

/** Inputs gathered by the caller: the run's fit and SLO when found, and the flags. */
export interface DeadlineInputs {
  fit: PrefillFit | null;
  /** Where the fit was looked for, to name it in the error when it is missing. */
  fitPath: string;
  runSlo: Slo | null;
  overrides: SloOverrides & { ttftDeadlineS?: number };
  /** Without a fit, use D_p = TTFT slack instead of refusing (the data sits in a run or probe directory). */
  slackOnlyWithoutFit?: boolean;
}

/** The resolved analysis plan: SLO to judge, fluidity parameters, and D_p per prompt length. */
export interface DeadlinePlan {
  slo: Slo;
  tbtDeadlineS: number;
  ttftSlackS: number;
  percentile: number;
  minFluidity: number;
  /** How D_p is obtained, in words (printed above the table and in the JSON summary). */
  firstTokenDeadline: { source: 'fixed' | 'fit' | 'slack'; text: string; fixedS?: number; fit?: PrefillFit; ttftSlackS?: number };
  /** D_p and the predicted prefill (without slack; undefined when D_p is fixed) for a prompt. */
  deadlineFor(promptTokens: number): { dpS: number; prefillS?: number };
}

/** Resolves the plan or throws UserError naming the missing input. */
export function planDeadlines(inputs: DeadlineInputs): DeadlinePlan {
  const { fit, runSlo, overrides } = inputs;
  // A lone file (or a run without an SLO) is judged by Metron's default, with the fit's slack.
  const fallback = { ...DEFAULT_FLUIDITY, ttftSlackS: fit?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS };
  const slo = applySloOverrides(runSlo ?? { fluidity: { ...fallback, source: fluiditySource(fallback) } }, overrides);
  const ttftSlackS = slo.fluidity?.ttftSlackS ?? overrides.ttftSlackS ?? fallback.ttftSlackS;
  const f = slo.fluidity ?? { ...DEFAULT_FLUIDITY, ttftSlackS };
  const common = {
    slo,
    tbtDeadlineS: f.tbtDeadlineS,
    ttftSlackS,
    percentile: f.percentile,
    minFluidity: f.minFluidity,
  };
  if (overrides.ttftDeadlineS !== undefined) {
    const dpS = overrides.ttftDeadlineS;
    return {
      ...common,
      firstTokenDeadline: { source: 'fixed', fixedS: dpS, text: `fixed ${formatDurationS(dpS)} for every request (--ttft-deadline)` },
      deadlineFor: () => ({ dpS }),
    };
  }
  if (!fit && inputs.slackOnlyWithoutFit) {
    return {
      ...common,
      firstTokenDeadline: {
        source: 'slack',
        ttftSlackS,
        text: `TTFT slack ${formatDurationS(ttftSlackS)} for every request: no prefill fit (${inputs.fitPath} absent), so no predicted prefill is added, as the probe judged itself; --ttft-deadline sets another`,
      },
      deadlineFor: () => ({ dpS: ttftSlackS }),
    };
  }
  if (!fit) {
    throw new UserError(
      `${inputs.fitPath}: not found; the first-token deadline D_p needs the run's prefill fit, or pass --ttft-deadline <s>`,
    );
  }
  const text = `prefill fit ${fit.a.toPrecision(4)} + ${fit.b.toPrecision(4)}·P + ${fit.c.toPrecision(4)}·P² s (R² ${fit.r2.toFixed(4)}, n ${fit.n}) + ttft slack ${formatDurationS(ttftSlackS)}`;
  return {
    ...common,
    firstTokenDeadline: { source: 'fit', fit, ttftSlackS, text },
    deadlineFor: (promptTokens) => {
      const prefillS = predictPrefillS(fit, promptTokens);
      return { dpS: prefillS + ttftSlackS, prefillS };
    },
  };
}
