// Runs an exported ONNX model in ONNX Runtime (npm onnxruntime-node, CPU) on a case's inputs
// and compares with PyTorch's outputs.
// Usage: node run_ort.js MODEL.onnx CASE_DIR NUM_INPUTS RTOL ATOL
// Prints one JSON line: {"ok": bool, "outputs": n, "max_abs": x, "worst": i, "error": "..."}.
const fs = require('fs');
const path = require('path');
// Installed for tests (tests/package.json) by scripts/setup.sh.
const ort = require(path.join(__dirname, '..', 'node_modules', 'onnxruntime-node'));

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const copy = new Uint8Array(buf.subarray(start + headerLen)).buffer;
  if (descr === '<f4') return new ort.Tensor('float32', new Float32Array(copy), shape);
  if (descr === '<i8') return new ort.Tensor('int64', new BigInt64Array(copy), shape);
  if (descr === '<i4') return new ort.Tensor('int32', new Int32Array(copy), shape);
  if (descr === '|b1') return new ort.Tensor('bool', new Uint8Array(copy), shape);
  if (descr === '|u1') return new ort.Tensor('uint8', new Uint8Array(copy), shape);  // int_repr
  if (descr === '|i1') return new ort.Tensor('int8', new Int8Array(copy), shape);
  throw new Error('unsupported dtype ' + descr + ' in ' + file);
}

async function main() {
  const [model, dir, nIn, rtol, atol] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, executionProviders: ['cpu']});
  const feeds = {};
  session.inputNames.forEach((name, i) => { feeds[name] = readNpy(path.join(dir, `in${i}.npy`)); });
  if (session.inputNames.length !== Number(nIn)) throw new Error(`model has ${session.inputNames.length} inputs, case ${nIn}`);
  const results = await session.run(feeds);
  let ok = true, maxAbs = 0, worst = -1;
  session.outputNames.forEach((name, k) => {
    const want = readNpy(path.join(dir, `out${k}.npy`));
    const got = results[name];
    if (want.dims.join(',') !== got.dims.join(',')) {
      ok = false;
      worst = k;
      console.error(`output ${k} (${name}): shape [${got.dims}] != [${want.dims}]`);
      return;
    }
    for (let i = 0; i < want.data.length; ++i) {
      const a = Number(got.data[i]), b = Number(want.data[i]);
      const d = Math.abs(a - b);
      if (d > maxAbs) { maxAbs = d; worst = k; }
      if (!(d <= Number(atol) + Number(rtol) * Math.abs(b))) ok = false;
    }
  });
  const outs = fs.readdirSync(dir).filter(f => /^out\d+\.npy$/.test(f)).length;
  if (outs !== session.outputNames.length) {
    ok = false;
    console.error(`model has ${session.outputNames.length} outputs, PyTorch ${outs}`);
  }
  console.log(JSON.stringify({ok, outputs: session.outputNames.length, max_abs: maxAbs, worst}));
}
main().catch(e => { console.log(JSON.stringify({ok: false, error: e.message})); process.exit(1); });
