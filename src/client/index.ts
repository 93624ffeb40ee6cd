/** The page side of Lantern: start it, manage keys, listen to its events. */
export { LocalAPI, startLocalAPI, type LocalAPIEventMap, type LocalAPIOptions } from './local-api.ts';
export type { DeviceInfo, DevicePreference, RunReport } from '../worker/protocol.ts';
export { bundledProfile, PUBLIC_MODELS, type ModelProfile } from '../engines/model-profile.ts';
