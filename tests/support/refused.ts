// Asserts that a call is refused as bad input: a UserError whose message matches.
import * as assert from 'uvu/assert';
import { UserError } from '../../harness/util/errors.ts';

export function refused(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    assert.instance(err, UserError, String(err));
    assert.match((err as Error).message, pattern);
    return;
  }
  assert.unreachable(`not refused: expected ${pattern}`);
}
