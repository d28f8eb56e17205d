// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const probeCommand: VerbFactory = () => ({
  command: 'probe <recipe>',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"probe" is not built yet');
  },
});
