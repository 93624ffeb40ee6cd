import {
  AutoTokenizer,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type PretrainedModelOptions,
  type ProgressInfo,
} from '@huggingface/transformers';
import type { LoadProgress } from '../../engine-interface/index.ts';
import { defaultCpuThreads } from '../cpu-threads.ts';
import { yieldToEventLoop } from './yield-to-event-loop.ts';

/** Where transformers.js runs a model: `cpu` in Node, `wasm` or `webgpu` in a browser. */
export type TransformersDevice = 'cpu' | 'wasm' | 'webgpu';

/** Weight formats of a transformers.js model folder (`onnx/model.onnx`, `onnx/model_quantized.onnx`, ...). */
export type TransformersDtype = 'fp32' | 'fp16' | 'q8' | 'q4' | 'q4f16';

export interface TransformersLoadOptions {
  /** Default: what transformers.js picks (`cpu` in Node, `wasm` in a browser). */
  device?: TransformersDevice;
  dtype?: TransformersDtype;
  /** Node (`cpu`): the threads onnxruntime computes each operator with. Default: {@link defaultCpuThreads}. */
  threads?: number | undefined;
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
      ...(options.device === 'cpu' && {
        session_options: { intraOpNumThreads: options.threads ?? defaultCpuThreads() },
      }),
    }),
  ]).catch((error: unknown) => {
    throw loadFailure(error);
  });
  // generate() and pipelines call `this.forward()` once per step: each step starts on a fresh macrotask, so an abort
  // message reaches the caller's AbortSignal within one token (see yieldToEventLoop).
  const forward = model.forward.bind(model);
  model.forward = async (inputs) => {
    await yieldToEventLoop();
    return forward(inputs);
  };
  return [tokenizer, model];
}

/**
 * What a failed load says, with the cause a reader can act on in front of transformers.js' own words: its files are
 * missing (a folder or file not there, a 404), or are not a model (a config it could not read: transformers.js then
 * fails with a TypeError on the config it did not get). Other failures (a weights file onnxruntime cannot parse, a
 * device that refuses the session) say what they say. The words keep their paths: the router cuts them out of what
 * a key holder sees, while the operator's log keeps them.
 */
function loadFailure(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const missing =
    error.name === 'ModelFileNotFoundError' ||
    /\b(ENOENT|404|not found|could not locate|file missing)\b/i.test(error.message);
  if (missing) return new Error(`its files are missing (${error.message})`, { cause: error });
  if (error instanceof TypeError)
    return new Error(`its files are missing or are not a model (${error.message})`, { cause: error });
  return error;
}

/** transformers.js' progress callback, translated to the engine interface's LoadProgress. */
export function progressCallback(options: TransformersLoadOptions): ((info: ProgressInfo) => void) | undefined {
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
