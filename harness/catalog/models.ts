// The model catalog: architecture only (no weights), enough for the simulated engine's cost model
// and KV-cache sizing, and for provisioning to know a model's context length and weight size.

// One transformer's shape; bf16 weights and KV cache are assumed throughout.
export interface ModelSpec {
  name: string;
  hfId: string;
  aliases: string[];
  layers: number;
  hiddenSize: number;
  heads: number;
  kvHeads: number;
  intermediateSize: number;
  vocabSize: number;
  maxContextTokens: number;
  /** Hugging Face serves its files (config and tokenizer too) only to accounts that accepted its licence. */
  gated: boolean;
}

// Derived sizes the cost model and the KV manager use.
export interface ModelSizes {
  headDim: number;
  /** Parameters of the linear layers (QKV, O, gate/up/down) of one transformer layer. */
  linearParamsPerLayer: number;
  parameterCount: number;
  weightBytes: number;
  /** K and V for one token across all layers. */
  kvBytesPerToken: number;
}

const BYTES_PER_PARAM = 2;

const MODELS: ModelSpec[] = [
  {
    name: 'llama-2-7b',
    hfId: 'meta-llama/Llama-2-7b-hf',
    aliases: ['llama2-7b', 'llama-2-7b-hf', 'llama-2-7b-chat-hf', 'meta-llama/llama-2-7b-chat-hf'],
    layers: 32, hiddenSize: 4096, heads: 32, kvHeads: 32, intermediateSize: 11008, vocabSize: 32000,
    maxContextTokens: 4096,
    gated: true,
  },
  {
    name: 'llama-3-8b',
    hfId: 'meta-llama/Meta-Llama-3-8B',
    aliases: ['llama3-8b', 'meta-llama-3-8b', 'meta-llama-3-8b-instruct', 'meta-llama/meta-llama-3-8b-instruct'],
    layers: 32, hiddenSize: 4096, heads: 32, kvHeads: 8, intermediateSize: 14336, vocabSize: 128256,
    maxContextTokens: 8192,
    gated: true,
  },
  {
    name: 'llama-2-70b',
    hfId: 'meta-llama/Llama-2-70b-hf',
    aliases: ['llama2-70b', 'llama-2-70b-hf', 'llama-2-70b-chat-hf', 'meta-llama/llama-2-70b-chat-hf'],
    layers: 80, hiddenSize: 8192, heads: 64, kvHeads: 8, intermediateSize: 28672, vocabSize: 32000,
    maxContextTokens: 4096,
    gated: true,
  },
  {
    name: 'llama-3-70b',
    hfId: 'meta-llama/Meta-Llama-3-70B',
    aliases: ['llama3-70b', 'meta-llama-3-70b', 'meta-llama-3-70b-instruct', 'meta-llama/meta-llama-3-70b-instruct'],
    layers: 80, hiddenSize: 8192, heads: 64, kvHeads: 8, intermediateSize: 28672, vocabSize: 128256,
    maxContextTokens: 8192,
    gated: true,
  },
  {
    // Four Llama-2-7B layers: iterations of a few milliseconds that still scale with batch and prompt.
    name: 'tiny',
    hfId: 'fluidcap/tiny',
    aliases: ['fluidcap-tiny'],
    layers: 4, hiddenSize: 4096, heads: 32, kvHeads: 32, intermediateSize: 11008, vocabSize: 32000,
    maxContextTokens: 4096,
    gated: false,
  },
];

// Catalog names, for help texts and error messages.
export function listModels(): string[] {
  return MODELS.map((m) => m.name);
}

// Finds a model by catalog name, HF id or alias (case-insensitive; `org/` prefix optional); null when unknown.
export function findModel(nameOrHfId: string): ModelSpec | null {
  const key = nameOrHfId.trim().toLowerCase();
  const bare = key.includes('/') ? key.slice(key.lastIndexOf('/') + 1) : key;
  for (const m of MODELS) {
    const names = [m.name, m.hfId.toLowerCase(), ...m.aliases];
    const bareNames = names.map((n) => (n.includes('/') ? n.slice(n.lastIndexOf('/') + 1) : n));
    if (names.includes(key) || bareNames.includes(bare)) return m;
  }
  return null;
}

// Sizes derived from the architecture (bf16 weights, untied embeddings as in Llama).
export function modelSizes(m: ModelSpec): ModelSizes {
  const headDim = m.hiddenSize / m.heads;
  const qkv = m.hiddenSize * (m.hiddenSize + 2 * m.kvHeads * headDim);
  const out = m.hiddenSize * m.hiddenSize;
  const mlp = 3 * m.hiddenSize * m.intermediateSize;
  const linearParamsPerLayer = qkv + out + mlp;
  const perLayer = linearParamsPerLayer + 2 * m.hiddenSize;
  const parameterCount = m.layers * perLayer + 2 * m.vocabSize * m.hiddenSize + m.hiddenSize;
  return {
    headDim,
    linearParamsPerLayer,
    parameterCount,
    weightBytes: parameterCount * BYTES_PER_PARAM,
    kvBytesPerToken: 2 * m.layers * m.kvHeads * headDim * BYTES_PER_PARAM,
  };
}
