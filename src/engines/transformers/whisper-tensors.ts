import { Tensor, type PreTrainedModel } from '@huggingface/transformers';

/**
 * What transformers.js 4.3.1 leaves behind on every Whisper generate() on WebGPU, where the decoder's keys and values
 * (`present.*`) are GPU buffers that live until they are disposed (transformers.js#1739, GPU memory growing window
 * after window until the device is lost), and what Lantern does about it:
 * - the merged decoder returns the cross-attention keys and values (`present.*.encoder.*`) at every step; generate()
 *   keeps the first step's and drops the later ones without disposing them: small constants a token in optimum's
 *   exports, a copy of the encoder's keys and values in a decoder that recomputes them (the bundled fixture's)
 *   ({@link releaseDroppedCrossAttentionCache});
 * - asked for a dict (word timestamps), generate() returns its cache alive, and each attempt of a window's temperature
 *   fallback is a generate() ({@link disposeTensors});
 * - it runs the encoder again on every generate(): Lantern runs it once per window ({@link encodeFeatures}).
 */

/** Disposes every tensor in `value`: a tensor, or what generate() returned (its cache, its cross-attentions…). */
export function disposeTensors(value: unknown): void {
  if (value instanceof Tensor) value.dispose();
  else if (Array.isArray(value)) for (const item of value) disposeTensors(item);
  else if (value !== null && typeof value === 'object') for (const item of Object.values(value)) disposeTensors(item);
}

/**
 * Wraps an encoder-decoder model's `forward` so that each step's `present.*.encoder.*`, which generate() drops for the
 * cache it already holds (getPastKeyValues: any step after the first, when a cache is passed in), is disposed as soon
 * as the step returns. Nothing reads them: generate() feeds the cache's own copies to the next step.
 */
export function releaseDroppedCrossAttentionCache(model: PreTrainedModel): void {
  const forward = model.forward.bind(model);
  model.forward = async (inputs: { past_key_values?: Record<string, unknown> | null }) => {
    const outputs = (await forward(inputs)) as Record<string, unknown>;
    const cache = inputs.past_key_values;
    if (cache) {
      for (const [name, tensor] of Object.entries(outputs)) {
        const dropped = name.startsWith('present') && name.includes('encoder');
        if (dropped && tensor instanceof Tensor && tensor !== cache[name.replace('present', 'past_key_values')]) {
          tensor.dispose();
        }
      }
    }
    return outputs;
  };
}

/** generate()'s own encoder pass, which Lantern calls once for a window (transformers.js exports no other). */
interface EncoderPass {
  _prepare_encoder_decoder_kwargs_for_generation(options: {
    inputs_tensor: Tensor;
    model_inputs: Record<string, Tensor>;
    model_input_name: string;
    generation_config: { guidance_scale: null };
  }): Promise<{ encoder_outputs: Tensor }>;
}

/**
 * Lets `model.generate()` take `encoder_outputs` (the encoder's output for its `inputs`) instead of running the encoder
 * again: transformers.js reads it only when the model's `forward_params` name it, as they do for T5 and MusicGen but
 * not for Whisper.
 */
export function acceptEncoderOutputs(model: PreTrainedModel): void {
  if (!model.forward_params.includes('encoder_outputs')) model.forward_params.push('encoder_outputs');
}

/** The encoder's output for `input_features`, through transformers.js' own encoder pass (its session and chain). */
export async function encodeFeatures(model: PreTrainedModel, inputFeatures: Tensor): Promise<Tensor> {
  const prepared = await (model as unknown as EncoderPass)._prepare_encoder_decoder_kwargs_for_generation({
    inputs_tensor: inputFeatures,
    model_inputs: { input_features: inputFeatures },
    model_input_name: 'input_features',
    generation_config: { guidance_scale: null },
  });
  return prepared.encoder_outputs;
}
