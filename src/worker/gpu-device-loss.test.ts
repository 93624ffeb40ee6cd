import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine-interface/index.ts';
import { GpuDeviceWatch, type DeviceLoss } from './gpu-device-loss.ts';

/** What onnxruntime-web's WebGPU build threw in Chromium after `Browser.crashGpuProcess` (paths shortened). */
const ORT_AFTER_CRASH =
  'failed to call OrtRun(). ERROR_CODE: 1, ERROR_MESSAGE: buffer_manager.cc:643 void onnxruntime::webgpu::' +
  'BufferManager::Download(WGPUBuffer, void *, size_t) const map_async_result.status == wgpu::MapAsyncStatus::Success ' +
  "was false. Failed to download data from buffer. wgpu::MapAsyncStatus value: 4, message: Failed to execute 'mapAsync' " +
  "on 'GPUBuffer': A valid external Instance reference no longer exists.\n";

/** A device whose loss the test decides. */
function device() {
  let lose!: (info: { reason: string; message: string }) => void;
  const lost = new Promise<GPUDeviceLostInfo>((resolve) => (lose = (info) => resolve(info as GPUDeviceLostInfo)));
  return { lost, lose };
}

describe('GpuDeviceWatch', () => {
  it("explains a call's failure as device_lost once its device is lost, in the browser's words", async () => {
    const losses: DeviceLoss[] = [];
    const watch = new GpuDeviceWatch((loss) => losses.push(loss));
    const gpu = device();
    watch.watch(gpu);
    gpu.lose({ reason: 'unknown', message: 'A valid external Instance reference no longer exists.' });
    const error = await watch.explain(new Error(ORT_AFTER_CRASH));
    expect(error).toBeInstanceOf(EngineError);
    expect(error!.kind).toBe('device_lost');
    expect(error!.message).toBe(
      'The GPU device was lost (A valid external Instance reference no longer exists.): the engine restarts; retry ' +
        'the request.',
    );
    expect(losses).toEqual([{ reason: 'unknown', message: 'A valid external Instance reference no longer exists.' }]);
  });

  it('waits for the loss when the failure comes first, and recognises it by cause, whatever the words', async () => {
    const watch = new GpuDeviceWatch(() => {});
    const gpu = device();
    watch.watch(gpu);
    const explained = watch.explain(new Error('failed to call OrtRun(). ERROR_CODE: 1'));
    setTimeout(() => gpu.lose({ reason: 'unknown', message: 'GPU connection lost' }), 20);
    expect((await explained)?.message).toBe(
      'The GPU device was lost (GPU connection lost): the engine restarts; retry the request.',
    );
  });

  it('leaves other failures alone: an intact device, a device destroyed on purpose, a client error', async () => {
    const watch = new GpuDeviceWatch(() => {});
    const destroyed = device();
    watch.watch(device());
    watch.watch(destroyed);
    destroyed.lose({ reason: 'destroyed', message: 'Device was destroyed.' });
    expect(await watch.explain(new Error('out of memory'), 20)).toBeUndefined();
    expect(watch.lost).toBeUndefined();
    const refused = new EngineError('invalid_request', 'A device lost its way in the prompt.');
    expect(await watch.explain(refused, 20)).toBeUndefined();
  });

  it("knows a loss by the browser's words where it watches no device, with the browser's sentence", async () => {
    const watch = new GpuDeviceWatch(() => {});
    const error = await watch.explain(new Error(ORT_AFTER_CRASH));
    expect(error?.message).toBe(
      "The GPU device was lost (Failed to execute 'mapAsync' on 'GPUBuffer': A valid external Instance reference no " +
        'longer exists.): the engine restarts; retry the request.',
    );
  });

  it('watches every device requested in the realm once installed', async () => {
    const gpu = device();
    class FakeAdapter {
      async requestDevice() {
        return gpu as unknown as GPUDevice;
      }
    }
    const losses: DeviceLoss[] = [];
    const watch = new GpuDeviceWatch((loss) => losses.push(loss));
    watch.install({ GPUAdapter: FakeAdapter as unknown as typeof GPUAdapter });
    expect(await new FakeAdapter().requestDevice()).toBe(gpu);
    gpu.lose({ reason: 'unknown', message: 'lost' });
    await expect.poll(() => losses).toEqual([{ reason: 'unknown', message: 'lost' }]);
  });
});
