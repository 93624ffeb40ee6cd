/**
 * Images whose first header understates what a decoder draws (issue 41): a GIF whose logical screen says 1 × 1 and
 * whose frame is 16,000 × 16,000 (174 KB, 1 GB once decoded), and the same trick in APNG, animated WebP and JPEG.
 */

/**
 * A GIF of one frame of `frame` pixels at `offset`, all of colour 0, on a logical screen of `screen` pixels. Its LZW
 * data is a real encoding (decoders draw it): runs of one colour, each code standing for one pixel more than the last,
 * a clear code when the table is full, so 16,000 × 16,000 pixels take about 174 KB.
 */
export function lyingGif(
  screen: readonly [number, number],
  frame: readonly [number, number],
  offset: readonly [number, number] = [0, 0],
): Uint8Array {
  const out: number[] = [];
  const u16 = (n: number) => out.push(n & 0xff, n >> 8);
  out.push(...Buffer.from('GIF89a'));
  u16(screen[0]);
  u16(screen[1]);
  out.push(0x80, 0, 0, 0, 0, 0, 255, 255, 255); // a global colour table of two colours: black, white
  out.push(0x2c);
  [offset[0], offset[1], frame[0], frame[1]].forEach(u16);
  out.push(0, MIN_CODE_SIZE);
  const data = lzwOfOneColour(frame[0] * frame[1]);
  const blocks = new Uint8Array(out.length + data.length + Math.ceil(data.length / 255) + 2);
  blocks.set(out);
  let at = out.length;
  for (let i = 0; i < data.length; i += 255) {
    const block = data.subarray(i, i + 255);
    blocks[at++] = block.length;
    blocks.set(block, at);
    at += block.length;
  }
  blocks[at++] = 0;
  blocks[at++] = 0x3b;
  return blocks.subarray(0, at);
}

const MIN_CODE_SIZE = 2;

/** GIF LZW codes for `pixels` pixels of colour 0, packed least significant bit first. */
function lzwOfOneColour(pixels: number): Uint8Array {
  const clear = 1 << MIN_CODE_SIZE;
  const end = clear + 1;
  const bytes = new Uint8Array(Math.ceil(pixels / 1000) + 4096);
  let n = 0;
  let bits = 0;
  let pending = 0;
  let size = MIN_CODE_SIZE + 1;
  let next = end + 1;
  const emit = (code: number) => {
    bits |= code << pending;
    pending += size;
    while (pending >= 8) {
      bytes[n++] = bits & 0xff;
      bits >>>= 8;
      pending -= 8;
    }
  };
  emit(clear);
  let left = pixels;
  let run = 1; // the pixels the next code stands for: code 0 for one, then each new code one more
  while (left > 0) {
    const take = Math.min(run, left);
    emit(take === 1 ? 0 : end + take - 1);
    left -= take;
    if (left === 0) break;
    if (next === 4096) {
      emit(clear);
      size = MIN_CODE_SIZE + 1;
      next = end + 1;
      run = 1;
    } else {
      if (next >= 1 << size) size++;
      next++;
      run++;
    }
  }
  emit(end);
  if (pending > 0) bytes[n++] = bits & 0xff;
  return bytes.subarray(0, n);
}

/** A PNG chunk: length, type, data, and a CRC (zeros: the header readers under test do not check it). */
function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const chunk = new Uint8Array(12 + data.length);
  new DataView(chunk.buffer).setUint32(0, data.length);
  chunk.set(Buffer.from(type, 'latin1'), 4);
  chunk.set(data, 8);
  return chunk;
}

const u32be = (...values: number[]) => {
  const bytes = new Uint8Array(4 * values.length);
  values.forEach((v, i) => new DataView(bytes.buffer).setUint32(4 * i, v));
  return bytes;
};

/** An APNG whose IHDR says `ihdr` and whose one frame control (`fcTL`) says `frame` at `offset`. */
export function lyingApng(
  ihdr: readonly [number, number],
  frame: readonly [number, number],
  offset: readonly [number, number] = [0, 0],
): Uint8Array {
  const header = new Uint8Array([...u32be(ihdr[0], ihdr[1]), 8, 6, 0, 0, 0]);
  const control = new Uint8Array([...u32be(0, frame[0], frame[1], offset[0], offset[1]), 0, 1, 0, 1, 0, 0]);
  return Buffer.concat([
    Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'),
    pngChunk('IHDR', header),
    pngChunk('acTL', u32be(1, 0)),
    pngChunk('fcTL', control),
    pngChunk('IEND', new Uint8Array()),
  ]);
}

/** A RIFF chunk: fourcc, little-endian length, data, padded to an even length. */
function riffChunk(fourcc: string, data: Uint8Array): Uint8Array {
  const chunk = new Uint8Array(8 + data.length + (data.length & 1));
  chunk.set(Buffer.from(fourcc, 'latin1'));
  new DataView(chunk.buffer).setUint32(4, data.length, true);
  chunk.set(data, 8);
  return chunk;
}

const u24le = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff];

/** An animated WebP whose `VP8X` canvas says `canvas` and whose one `ANMF` frame says `frame` (no bitstream). */
export function lyingWebp(canvas: readonly [number, number], frame: readonly [number, number]): Uint8Array {
  const vp8x = new Uint8Array([0x02, 0, 0, 0, ...u24le(canvas[0] - 1), ...u24le(canvas[1] - 1)]);
  const anmf = new Uint8Array([...u24le(0), ...u24le(0), ...u24le(frame[0] - 1), ...u24le(frame[1] - 1), 0, 0, 0, 0]);
  const body = Buffer.concat([
    Buffer.from('WEBP', 'latin1'),
    riffChunk('VP8X', vp8x),
    riffChunk('ANIM', new Uint8Array(6)),
    riffChunk('ANMF', anmf),
  ]);
  const riff = riffChunk('RIFF', body);
  return riff;
}

/** A JPEG with a second frame header after its first scan, saying `size` (`jpeg` a baseline JPEG, e.g. sharp's). */
export function jpegWithSecondFrame(jpeg: Uint8Array, size: readonly [number, number]): Uint8Array {
  const end = jpeg.length - 2; // the EOI marker
  const sof = new Uint8Array([0xff, 0xc0, 0, 11, 8, size[1] >> 8, size[1] & 0xff, size[0] >> 8, size[0] & 0xff, 1]);
  return Buffer.concat([jpeg.subarray(0, end), sof, new Uint8Array([1, 0x11, 0]), jpeg.subarray(end)]);
}
