import { PreTrainedModel } from '@huggingface/transformers';

/**
 * Fault injection: while `run` runs, every transformers.js model sees an all-ones attention mask, as an export whose
 * attention reads only how many tokens each row holds would (ONNX Runtime's GroupQueryAttention).
 */
export async function ignoringAttentionMask<T>(run: () => Promise<T>): Promise<T> {
  const prototype = PreTrainedModel.prototype as { forward: (inputs: Record<string, unknown>) => Promise<unknown> };
  const forward = prototype.forward;
  prototype.forward = function (this: PreTrainedModel, inputs: Record<string, unknown>) {
    (inputs.attention_mask as { data: BigInt64Array } | undefined)?.data.fill(1n);
    return forward.call(this, inputs);
  };
  try {
    return await run();
  } finally {
    prototype.forward = forward;
  }
}
