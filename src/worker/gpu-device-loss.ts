import { EngineError } from '../engine-interface/index.ts';

/** Why a GPU device was lost, in the browser's words (`GPUDeviceLostInfo`). */
export interface DeviceLoss {
  reason: string;
  message: string;
}

/**
 * How a call that met a lost device fails, in the browser's words as the engines pass them on: Chromium's when its GPU
 * process crashed (through onnxruntime-web's WebGPU build: "Failed to execute 'mapAsync' on 'GPUBuffer': A valid
 * external Instance reference no longer exists."), and WebGPU's "device lost" in Chromium's, Firefox's and web-llm's
 * phrasings. For a failure that comes before the device's `lost` promise has settled, or on a device this realm did not
 * see requested.
 */
const LOSS_WORDS = /valid external Instance reference no longer exists|device (?:is |was |has been )?lost|lost device/i;

/**
 * How long a failed call waits for a device's `lost` promise before it is judged on its own: the failure can come first
 * (in Chromium the run's `mapAsync` rejected about 80 ms after `Browser.crashGpuProcess`, and before `lost` settled,
 * which is delivered by another task). Long next to that, short next to an answer the client is waiting for; a run
 * that fails with the device intact pays it once, on its way to a replaced worker anyway.
 */
export const LOSS_SETTLE_MS = 500;

/** The message of Lantern's error for a lost device: what happened, in the browser's words, and what to do. */
export function deviceLostMessage(loss: DeviceLoss): string {
  const why = [loss.reason !== 'unknown' && loss.reason, loss.message].filter(Boolean).join(': ');
  return `The GPU device was lost (${why || 'no reason given'}): the engine restarts; retry the request.`;
}

/**
 * The GPU devices of this realm (the engine worker), watched for loss: a GPU process that crashed or was reset, a
 * driver update, a device removed. The engines request their devices inside their own code (onnxruntime-web's
 * WebAssembly glue, web-llm's runtime), and neither tells of a loss but through the next call's failure, in the
 * browser's words; so `install` watches every device requested in this realm from then on, and `explain` turns a
 * call's failure into Lantern's own retryable `device_lost` error when the device is why. A device destroyed on
 * purpose (a model unloaded) is not a loss.
 */
export class GpuDeviceWatch {
  readonly #onLost: (loss: DeviceLoss) => void;
  readonly #losses: Promise<DeviceLoss | undefined>[] = [];
  #loss: DeviceLoss | undefined;

  /** `onLost` is called once, on the first loss. */
  constructor(onLost: (loss: DeviceLoss) => void) {
    this.#onLost = onLost;
  }

  /** The first loss seen, if any. */
  get lost(): DeviceLoss | undefined {
    return this.#loss;
  }

  /** Watches every device that code of this realm requests from now on (where the realm has WebGPU). */
  install(scope: { GPUAdapter?: typeof GPUAdapter } = globalThis as { GPUAdapter?: typeof GPUAdapter }): void {
    const prototype = scope.GPUAdapter?.prototype;
    if (!prototype) return;
    const requestDevice = prototype.requestDevice;
    const watch = (device: GPUDevice) => {
      this.watch(device);
      return device;
    };
    prototype.requestDevice = function (this: GPUAdapter, ...args: Parameters<GPUAdapter['requestDevice']>) {
      return requestDevice.apply(this, args).then(watch);
    };
  }

  /** Watches one device. */
  watch(device: Pick<GPUDevice, 'lost'>): void {
    const loss = device.lost.then(({ reason, message }) => (reason === 'destroyed' ? undefined : { reason, message }));
    this.#losses.push(loss);
    void loss.then((seen) => {
      if (!seen || this.#loss) return;
      this.#loss = seen;
      this.#onLost(seen);
    });
  }

  /**
   * `error` as the `device_lost` EngineError when a lost device is why a call failed (waiting up to `settleMs` for the
   * loss to be told, when a device is watched), or when its words say so; otherwise undefined.
   */
  async explain(error: unknown, settleMs = LOSS_SETTLE_MS): Promise<EngineError | undefined> {
    if (error instanceof EngineError && error.kind !== 'internal' && error.kind !== 'load_failed') return undefined;
    const words = error instanceof Error ? error.message : String(error);
    // The browser's own sentence, without what the engine wrapped around it (onnxruntime's "… message: <sentence>").
    const said = words.split('\n').find((line) => LOSS_WORDS.test(line));
    let loss = this.#loss;
    if (!loss && this.#losses.length > 0) {
      const waited = new Promise<undefined>((resolve) => setTimeout(resolve, settleMs));
      const told = new Promise<DeviceLoss>((resolve) => {
        for (const device of this.#losses) void device.then((seen) => seen && resolve(seen));
      });
      loss = await Promise.race([told, waited]);
    }
    if (!loss && said) loss = { reason: 'unknown', message: said.replace(/^.*\bmessage: /, '').trim() };
    if (!loss) return undefined;
    return new EngineError('device_lost', deviceLostMessage(loss), { cause: error });
  }
}
