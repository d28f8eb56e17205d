// A target's secrets, read from the local environment at launch: a missing one is the user's to fix
// before anything on the host is touched. Values are never logged.
import { UserError } from '../util/errors.ts';

/** Container variable → value, for every `target.secrets` entry; throws naming the first unset variable. */
export function secretValues(secretEnv: { name: string; fromEnv: string }[], env: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  for (const s of secretEnv) {
    const v = env[s.fromEnv];
    if (v === undefined || v === '') throw new UserError(`target.secrets.${s.name} names the environment variable ${s.fromEnv}, which is not set`);
    values[s.name] = v;
  }
  return values;
}
