// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const cleanCommand: VerbFactory = () => ({
  command: 'clean <inventory>',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"clean" is not built yet');
  },
});
