import type { LogitProcessor } from '@mlc-ai/web-llm';

/**
 * What Lantern reads of web-llm's `LLMChatPipeline`, the loaded model's generation state, which web-llm 0.2.86 keeps
 * private (`MLCEngine.loadedModelIdToPipeline`): the lowest level at which web-llm executes a whole sampling plan.
 * Below it, `forwardTokensAndSample` samples with the chat config's values only (no request temperature, top_p, seed,
 * penalties, bias or grammar: `sampleFromRawLogits(logits)` without a generation config), and the engine's own
 * requests are what build its conversation and keep its KV cache; so requests go through `chat.completions.create`,
 * and the tokens it samples are read here, where they already are, without the logits ever leaving the GPU.
 */
export interface WebLLMPipeline {
  /**
   * The ids this generation has written (`processNextToken` pushes each sampled token, its end token excepted; a
   * switched-off thinking block's ids come first, pushed by `forwardPrefill`), reset when the next one starts.
   */
  readonly outputIds: readonly number[];
  /**
   * The processor web-llm runs at every step (from `logitProcessorRegistry`, at load): set, each step copies the
   * logits to the CPU and back (`sampleFromRawLogits`); unset, none (`commitSamplerState` skips it too).
   */
  logitProcessor: LogitProcessor | undefined;
}

/** The pipeline of `modelId` in a loaded web-llm engine; undefined where the engine does not show it as 0.2.86 does. */
export function webLLMPipeline(engine: object, modelId: string): WebLLMPipeline | undefined {
  const pipelines = (engine as { loadedModelIdToPipeline?: unknown }).loadedModelIdToPipeline;
  const pipeline: unknown = pipelines instanceof Map ? pipelines.get(modelId) : undefined;
  return typeof pipeline === 'object' &&
    pipeline !== null &&
    'logitProcessor' in pipeline &&
    Array.isArray((pipeline as { outputIds?: unknown }).outputIds)
    ? (pipeline as WebLLMPipeline)
    : undefined;
}
