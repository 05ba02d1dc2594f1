// A program written against onnxruntime-web 1.30's API, unchanged: tests/web runs it once
// with `ort` = onnxruntime-web and once with `ort` = onyx-web (only the import differs,
// see ort_program.html) and compares what it returns.
export async function main(ort, { modelUrl, wasmPaths, threads, x, xDims }) {
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.wasmPaths = wasmPaths;
  const session = await ort.InferenceSession.create(modelUrl, { executionProviders: ['wasm'] });
  const meta = (m) => ({ name: m.name, isTensor: m.isTensor, type: m.type, shape: [...m.shape] });
  const input = new ort.Tensor('float32', Float32Array.from(x), xDims);
  const out = await session.run({ [session.inputNames[0]]: input });
  const y = out[session.outputNames[0]];
  const result = {
    inputNames: [...session.inputNames],
    outputNames: [...session.outputNames],
    inputMetadata: session.inputMetadata.map(meta),
    outputMetadata: session.outputMetadata.map(meta),
    type: y.type,
    dims: [...y.dims],
    isFloat32Array: y.data instanceof Float32Array,
    data: Array.from(y.data),
  };
  await session.release();
  return result;
}
