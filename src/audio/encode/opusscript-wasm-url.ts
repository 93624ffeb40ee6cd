/// <reference types="vite/client" />
/**
 * Where the bundle keeps opusscript's `.wasm`: a browser-only module (Node reads the file beside opusscript's script
 * itself), imported only where there is no `process`, so that Node never meets the `?url` suffix.
 */
import wasmUrl from 'opusscript/build/opusscript_native_wasm.wasm?url';

export const OPUSSCRIPT_WASM_URL: string = wasmUrl;
