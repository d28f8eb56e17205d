// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const runCommand: VerbFactory = () => ({
  command: 'run <recipe>',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"run" is not built yet');
  },
});
