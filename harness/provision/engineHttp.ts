// The HTTP paths by which the launcher tells that an engine is up, per engine, as data: each
// engine adapter states where its server answers, so the launcher holds no engine's URL.
// A container spec that carries `healthPath` / `modelsPath` overrides the table.

export interface EngineHttp {
  /** Answers 200 once the model is loaded (vLLM, llama.cpp's server and the simulated engine all use /health). */
  healthPath: string;
  /** The OpenAI-style model list; readiness also waits until it names a model. */
  modelsPath: string;
}

const OPENAI_SERVER: EngineHttp = { healthPath: '/health', modelsPath: '/v1/models' };

const BY_ENGINE: Record<string, EngineHttp> = {
  vllm: OPENAI_SERVER,
  sarathi: OPENAI_SERVER,
  sim: OPENAI_SERVER,
  // llama.cpp's server: /health is 503 while loading the model, 200 once it can serve.
  llamacpp: OPENAI_SERVER,
};

/** The engine's readiness paths: the spec's own when it carries them, else the engine's entry. */
export function engineHttp(spec: { engine: string; healthPath?: string; modelsPath?: string }): EngineHttp {
  const base = BY_ENGINE[spec.engine] ?? OPENAI_SERVER;
  return { healthPath: spec.healthPath ?? base.healthPath, modelsPath: spec.modelsPath ?? base.modelsPath };
}
