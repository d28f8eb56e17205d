// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const compareCommand: VerbFactory = () => ({
  command: 'compare <runDirs..>',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"compare" is not built yet');
  },
});
