import { RawImage, Tensor, type PreTrainedModel } from '@huggingface/transformers';
import { EngineError, type ChatImage, type ImageLimits } from '../../engine/index.ts';
import { readImage, type ImageBytes } from '../image-input.ts';

/** What a vision model's prompt is made of besides its tokens: how it turns images into its input. */
export interface VisionParts {
  /** The image processor (`preprocessor_config.json`): images to `pixel_values`, resized and normalised. */
  processor: (images: RawImage[]) => Promise<{ pixel_values: Tensor }>;
  /** The token its chat template prints where an image goes (LLaVA's `<image>`: `image_token_index`). */
  imageToken: number;
  /**
   * How many positions an image takes (its features), once the first image encoded has said: LLaVA's layout resizes
   * every image to one size, so every image gives the same number.
   */
  tokensPerImage?: number;
}

/** Limits for a request that came without them (a caller of the engine, not the handler): the handler's defaults. */
const DEFAULT_LIMITS: ImageLimits = { maxBytes: 20 * 2 ** 20, maxPixels: 7680 * 4320, fetchTimeoutMs: 15_000 };

/**
 * A prompt with images, as the decode loop takes it: token ids in which each image's positions hold ids of their own
 * (negative, from a 32-bit hash of the image's bytes: two requests with the same image at the same place share a
 * cached prefix, a different image one in four billion times), and the embeddings of any span of it, the image features
 * at the image positions.
 */
export interface ImagePrompt {
  ids: number[];
  /** `inputs_embeds` `[1, to - from, hidden]` of prompt positions `from` to `to`, computed in the realm's queue. */
  embed(from: number, to: number): Promise<Tensor>;
}

/**
 * Reads, decodes and encodes a request's images (the vision encoder in `run`, the realm's queue), and places each
 * image's features where the template printed its image token: LLaVA's layout, one token per image in the template,
 * expanded here to as many positions as the encoder gives features (transformers.js' `LlavaProcessor` expands only a
 * prompt's first). Every failure of one image is a 400 naming its part.
 */
export async function imagePrompt(
  model: PreTrainedModel,
  vision: VisionParts,
  tokens: readonly number[],
  images: readonly ChatImage[],
  options: {
    limits?: ImageLimits | undefined;
    signal?: AbortSignal | undefined;
    run: <T>(task: () => Promise<T>) => Promise<T>;
  },
): Promise<ImagePrompt> {
  const at = tokens.flatMap((token, i) => (token === vision.imageToken ? [i] : []));
  if (at.length !== images.length) {
    throw new Error(
      `The chat template printed ${at.length} image tokens for ${images.length} images: it does not place images.`,
    );
  }
  const limits = options.limits ?? DEFAULT_LIMITS;
  const read = await Promise.all(images.map((image) => readImage(image, limits, options.signal)));
  // Decoded and encoded once, when a prefill first needs an image's positions: a later turn of the conversation whose
  // cached prefix holds the images (the usual case) never runs the encoder again.
  let encoded: Promise<Float32Array> | undefined;
  const features = () =>
    (encoded ??= (async () => {
      const decoded = await Promise.all(read.map((bytes, i) => decodeImage(bytes, images[i]!)));
      const tensor = await options.run(async () => {
        const { pixel_values } = await vision.processor(decoded);
        const out = await (model as unknown as VisionModel).encode_image({ pixel_values });
        return out.type === 'float32' ? out : out.to('float32');
      });
      vision.tokensPerImage ??= tensor.size / tensor.dims.at(-1)! / images.length;
      return tensor.data as Float32Array;
    })());
  if (vision.tokensPerImage === undefined) await features();
  const perImage = vision.tokensPerImage!;

  // The prompt, each image token expanded to the image's positions; `rows[i]`: the feature row at position i, or -1.
  const ids: number[] = [];
  const rows: number[] = [];
  const text = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      ids.push(tokens[i]!);
      rows.push(-1);
    }
  };
  let from = 0;
  for (const [k, position] of at.entries()) {
    text(from, position);
    const key = contentKey(read[k]!.bytes);
    for (let p = 0; p < perImage; p++) {
      ids.push(-1 - (key * perImage + p));
      rows.push(k * perImage + p);
    }
    from = position + 1;
  }
  text(from, tokens.length);

  return {
    ids,
    async embed(start, end) {
      const data = rows.slice(start, end).some((row) => row >= 0) ? await features() : undefined;
      return options.run(async () => {
        const span = ids.slice(start, end).map((id) => (id < 0 ? vision.imageToken : id));
        const input_ids = new Tensor('int64', BigInt64Array.from(span, BigInt), [1, span.length]);
        let embeds = await (model as unknown as VisionModel).encode_text({ input_ids });
        if (embeds.type !== 'float32') embeds = embeds.to('float32');
        const hidden = embeds.dims.at(-1)!;
        const out = new Float32Array(embeds.data as Float32Array);
        for (let i = start; data && i < end; i++) {
          const row = rows[i]!;
          if (row >= 0) out.set(data.subarray(row * hidden, (row + 1) * hidden), (i - start) * hidden);
        }
        return new Tensor('float32', out, [1, span.length, hidden]);
      });
    },
  };
}

/** The parts of a transformers.js image-text-to-text model the prompt uses (its `vision_encoder` and `embed_tokens`). */
interface VisionModel {
  encode_image(inputs: { pixel_values: Tensor }): Promise<Tensor>;
  encode_text(inputs: { input_ids: Tensor }): Promise<Tensor>;
}

/**
 * An image's pixels, by the platform's decoder: `createImageBitmap` and an OffscreenCanvas in a browser or worker,
 * sharp in Node (both through transformers.js' RawImage).
 */
async function decodeImage(image: ImageBytes, part: ChatImage): Promise<RawImage> {
  try {
    return await RawImage.fromBlob(new Blob([image.bytes as BlobPart], { type: image.type }));
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new EngineError('invalid_request', `The image could not be decoded as ${image.type}: ${why}`, {
      param: part.param,
    });
  }
}

/** A 32-bit FNV-1a hash of an image's bytes: what its prompt positions are keyed by. */
function contentKey(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}
