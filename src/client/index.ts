/** The page side of Lantern: start it, manage keys, listen to its events. */
export {
  LocalAPI,
  startLocalAPI,
  type LocalAPIEventMap,
  type LocalAPIOptions,
  type ModelChoice,
  type VersionMismatch,
} from './local-api.ts';
export { PROTOCOL_VERSION, type DeviceInfo, type DevicePreference, type RunReport } from '../worker/protocol.ts';
export type { ComputeDevice, LoadProgress, RunsOn } from '../engine-interface/index.ts';
export { OPENAI_VOICES } from '../engine-interface/index.ts';
export {
  bundledProfile,
  candidateKey,
  isRemote,
  OPENAI_ALIASES,
  PUBLIC_MODELS,
  validateProfile,
  type LocalCandidate,
  type AdapterLimits,
  type CandidateFailure,
  type ModelCandidate,
  type ModelChain,
  type ModelEntry,
  type ModelProfile,
  type RemoteCandidate,
  type RoutingPolicy,
  withEngines,
  withHub,
} from '../models/model-profile.ts';
export { DEFAULT_PROFILE } from '../models/model-registry.ts';
export { candidateLabel } from '../engines/engine-registry.ts';
export type { IssuedKey, KeyInfo, KeyStore } from '../keys/index.ts';
export type { OfflineStatus } from './offline-readiness.ts';
export { ModelStorage, describeStored, type StoredModelEntry, type StorageReport } from './model-storage.ts';
export type { StoredModel } from '../engines/model-files.ts';
export { LocalResponsesSocket } from './responses-socket.ts';
export { LocalRealtimeSocket, type LocalRealtimeSocketOptions } from './realtime-socket.ts';
