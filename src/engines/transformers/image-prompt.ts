import { cat, RawImage, Tensor, type PreTrainedModel } from '@huggingface/transformers';
import { EngineError, throwIfAborted, type ChatImage, type ImageLimits } from '../../engine-interface/index.ts';
import {
  DEFAULT_IMAGE_LIMITS,
  readImages,
  type DecodeImage,
  type ImageAccess,
  type ImageBytes,
} from '../../inputs/image-input.ts';
import { imageId } from './image-ids.ts';

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

/**
 * A prompt with images, as the decode loop takes it: token ids in which each image's positions hold ids of their own
 * (negative, from the image's SHA-256 digest, see imageId: two requests with the same image at the same place share a
 * cached prefix, and no different image ever does), and the embeddings of any span of it, the image features at the
 * image positions.
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
 * prompt's first). Every failure of one image is a 400 naming its part. The images are read (readImages: fetched,
 * their sizes from every frame's header, within each image's and the request's pixel limits) and then decoded one at a
 * time, each image's pixels let go once the processor has shrunk them: a request holds one decoded image at once.
 * `access` is how this realm fetches and decodes (see ImageAccess; absent, the page's fetch and RawImage).
 */
export async function imagePrompt(
  model: PreTrainedModel,
  vision: VisionParts,
  tokens: readonly number[],
  images: readonly ChatImage[],
  options: {
    limits?: ImageLimits | undefined;
    access?: ImageAccess | undefined;
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
  const limits = options.limits ?? DEFAULT_IMAGE_LIMITS;
  const read = await readImages(images, limits, { fetch: options.access?.fetch, signal: options.signal });
  // Decoded and encoded once, when a prefill first needs an image's positions: a later turn of the conversation whose
  // cached prefix holds the images (the usual case) never runs the encoder again.
  let encoded: Promise<Float32Array> | undefined;
  const features = () =>
    (encoded ??= (async () => {
      // Issue 41: three images decoded at once (Promise.all) took the server to 7.8 GB; one at a time, at most one
      // image's pixels are held. The processor takes each alone: LLaVA's resizes every image to one size, so the
      // stacked results are what it gives for all of them at once.
      const pixels: Tensor[] = [];
      for (const [i, bytes] of read.entries()) {
        throwIfAborted(options.signal);
        const decoded = await decodeImage(bytes, images[i]!, limits.maxPixels, options.access?.decode);
        pixels.push((await vision.processor([decoded])).pixel_values);
      }
      const pixel_values = pixels.length === 1 ? pixels[0]! : cat(pixels, 0);
      const tensor = await options.run(async () => {
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
  const keys = await Promise.all(read.map((image) => imageId(image.bytes)));
  let from = 0;
  for (const [k, position] of at.entries()) {
    text(from, position);
    const key = keys[k]!;
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
 * An image's pixels, by the realm's decoder (`decode`: in Node, sharp told the pixel limit) or else transformers.js'
 * RawImage: `createImageBitmap` and an OffscreenCanvas in a browser or worker, which take no pixel limit, so there the
 * limit holds by readImage's reading of every frame's size before this is called.
 */
async function decodeImage(
  image: ImageBytes,
  part: ChatImage,
  maxPixels: number,
  decode: DecodeImage | undefined,
): Promise<RawImage> {
  try {
    if (decode) {
      const { data, width, height, channels } = await decode(image, maxPixels, part);
      return new RawImage(data, width, height, channels);
    }
    return await RawImage.fromBlob(new Blob([image.bytes as BlobPart], { type: image.type }));
  } catch (error) {
    if (error instanceof EngineError) throw error;
    const why = error instanceof Error ? error.message : String(error);
    throw new EngineError('invalid_request', `The image could not be decoded as ${image.type}: ${why}`, {
      param: part.param,
    });
  }
}
