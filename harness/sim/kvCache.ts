// KV-cache block accounting (vLLM's paged attention: blocks of 16 tokens). Pure bookkeeping; the
// scheduler decides who gets blocks and who is preempted when they run out.

// Tokens per KV block, as vLLM's default --block-size.
export const BLOCK_TOKENS = 16;

// Blocks needed to hold `tokens` tokens.
export function blocksFor(tokens: number): number {
  return Math.ceil(tokens / BLOCK_TOKENS);
}

// Number of blocks that fit in (GPU memory × utilization − weights), per GPU under tensor parallelism.
export function kvBlocksForMemory(args: {
  memoryGiB: number;
  gpuMemoryUtilization: number;
  weightBytes: number;
  kvBytesPerToken: number;
  tensorParallel: number;
}): number {
  const usable = args.memoryGiB * 2 ** 30 * args.gpuMemoryUtilization - args.weightBytes / args.tensorParallel;
  const perBlock = (BLOCK_TOKENS * args.kvBytesPerToken) / args.tensorParallel;
  return Math.max(0, Math.floor(usable / perBlock));
}

// The pool of free blocks, with vLLM's admission watermark (1% of blocks kept free for decodes).
export class KvBlockPool {
  readonly totalBlocks: number;
  readonly watermarkBlocks: number;
  private free: number;

  constructor(totalBlocks: number, watermarkFraction = 0.01) {
    this.totalBlocks = totalBlocks;
    this.watermarkBlocks = Math.floor(totalBlocks * watermarkFraction);
    this.free = totalBlocks;
  }

  get freeBlocks(): number {
    return this.free;
  }

  get usedFraction(): number {
    return this.totalBlocks === 0 ? 0 : 1 - this.free / this.totalBlocks;
  }

  /** Admission of a new or recomputed prompt: its blocks plus the watermark must be free. */
  canAdmit(blocks: number): boolean {
    return this.free - blocks >= this.watermarkBlocks;
  }

  canAllocate(blocks: number): boolean {
    return blocks <= this.free;
  }

  allocate(blocks: number): void {
    if (blocks > this.free) throw new Error(`KV pool: allocating ${blocks} blocks with ${this.free} free`);
    this.free -= blocks;
  }

  release(blocks: number): void {
    this.free += blocks;
    if (this.free > this.totalBlocks) throw new Error(`KV pool: released more blocks than allocated`);
  }
}
