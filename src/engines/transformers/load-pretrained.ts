import {
  AutoTokenizer,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type PretrainedModelOptions,
  type ProgressInfo,
} from '@huggingface/transformers';
import type { LoadProgress } from '../../engine/index.ts';
import { yieldToEventLoop } from './yield-to-event-loop.ts';

/** Where transformers.js runs a model: `cpu` in Node, `wasm` or `webgpu` in a browser. */
export type TransformersDevice = 'cpu' | 'wasm' | 'webgpu';

/** Weight formats of a transformers.js model folder (`onnx/model.onnx`, `onnx/model_quantized.onnx`, ...). */
export type TransformersDtype = 'fp32' | 'fp16' | 'q8' | 'q4' | 'q4f16';

export interface TransformersLoadOptions {
  /** Default: what transformers.js picks (`cpu` in Node, `wasm` in a browser). */
  device?: TransformersDevice;
  dtype?: TransformersDtype;
  /** The public model ID the progress events are reported under. */
  id: string;
  onProgress?: ((progress: LoadProgress) => void) | undefined;
}

/** An Auto* model class of transformers.js (`AutoModel`, `AutoModelForCausalLM`, ...). */
interface AutoModelClass {
  from_pretrained(source: string, options: PretrainedModelOptions): Promise<PreTrainedModel>;
}

/** Loads a model folder's tokenizer and weights in parallel, reporting progress under the public model ID. */
export async function loadPretrained(
  source: string,
  Model: AutoModelClass,
  options: TransformersLoadOptions,
): Promise<[PreTrainedTokenizer, PreTrainedModel]> {
  const progress_callback = progressCallback(options);
  const [tokenizer, model] = await Promise.all([
    AutoTokenizer.from_pretrained(source, { progress_callback }),
    Model.from_pretrained(source, {
      progress_callback,
      ...(options.device && { device: options.device }),
      ...(options.dtype && { dtype: options.dtype }),
    }),
  ]);
  // generate() and pipelines call `this.forward()` once per step: each step starts on a fresh macrotask, so an abort
  // message reaches the caller's AbortSignal within one token (see yieldToEventLoop).
  const forward = model.forward.bind(model);
  model.forward = async (inputs) => {
    await yieldToEventLoop();
    return forward(inputs);
  };
  return [tokenizer, model];
}

/** transformers.js' progress callback, translated to the engine interface's LoadProgress. */
function progressCallback(options: TransformersLoadOptions): ((info: ProgressInfo) => void) | undefined {
  const { onProgress, id: model } = options;
  if (!onProgress) return undefined;
  return (info) => {
    switch (info.status) {
      case 'initiate':
      case 'download':
      case 'done':
        return onProgress({ status: info.status, model, file: info.file });
      case 'progress':
        return onProgress({ status: 'progress', model, file: info.file, ...pickBytes(info) });
      case 'progress_total':
        return onProgress({ status: 'progress_total', model, ...pickBytes(info) });
      case 'ready':
        return undefined; // reported once by the engine when every part of the model is loaded
    }
  };
}

const pickBytes = (info: { loaded: number; total: number; progress: number }) => ({
  loaded: info.loaded,
  total: info.total,
  progress: info.progress,
});
