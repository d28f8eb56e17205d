// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const profileCommand: VerbFactory = () => ({
  command: 'profile <recipe>',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"profile" is not built yet');
  },
});
