// A load agent's version: the orchestrator's package version and a hash of the sources the agent
// image is built from. An image or a running agent of any other version is never used: the
// orchestrator builds the image for its own version, or refuses one that claims it but differs. Pure.

/** Where agent images live; the tag is the version, so two versions never share an image. */
export const AGENT_IMAGE_REPO = 'fluidcap/agent';
/** The label an agent image carries with its version, and the one its containers carry with their role. */
export const AGENT_VERSION_LABEL = 'fluidcap.agent.version';
export const ROLE_LABEL = 'fluidcap.role';

/** `<package version>-<first 16 hex digits of the sources hash>`. */
export function agentVersion(packageVersion: string, sourcesSha256: string): string {
  if (!/^[0-9a-f]{16,}$/.test(sourcesSha256)) throw new Error(`agentVersion: not a hex digest: ${JSON.stringify(sourcesSha256)}`);
  return `${packageVersion}-${sourcesSha256.slice(0, 16)}`;
}

export function agentImageTag(version: string): string {
  return `${AGENT_IMAGE_REPO}:${version}`;
}

/** Why a version reported by an image label or an agent's hello cannot be used, or null when it matches. */
export function versionProblem(expected: string, reported: string | null | undefined, where: string): string | null {
  if (reported === expected) return null;
  return `${where} is load agent version ${reported ?? '(none)'}, this fluidcap is ${expected}: it is not used`;
}
