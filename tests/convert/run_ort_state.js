// Runs an exported model with module state (convert/onnx/module_state.h) in ONNX Runtime twice,
// as PyTorch's consecutive calls: call 1 feeds the state the export wrote (MODEL.onnx.state/
// NAME.npy), call 2 the state outputs NAME.out of call 1. Each call's outputs and state outputs
// are compared with gen_export_state_cases.py's (CASE/callC/outK.npy, callC/state/NAME.npy).
// Usage: node run_ort_state.js MODEL.onnx CASE_DIR RTOL ATOL
// Prints one JSON line: {"ok": bool, "max_abs": x, "state": [names], "error": "..."}.
const fs = require('fs');
const path = require('path');
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
  throw new Error('unsupported dtype ' + descr + ' in ' + file);
}

async function main() {
  const [model, dir, rtol, atol] = process.argv.slice(2);
  const stateDir = model + '.state';
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, executionProviders: ['cpu']});
  const state = session.inputNames.filter(n => fs.existsSync(path.join(stateDir, n + '.npy')));
  if (state.length === 0) throw new Error('no state inputs (nothing in ' + stateDir + ')');
  const plain = session.inputNames.filter(n => !state.includes(n));
  const userOuts = session.outputNames.filter(n => !state.includes(n.replace(/\.out$/, '')));
  let ok = true, maxAbs = 0;
  const compare = (what, got, want) => {
    if (want.dims.join(',') !== got.dims.join(',')) {
      ok = false;
      console.error(`${what}: shape [${got.dims}] != [${want.dims}]`);
      return;
    }
    for (let i = 0; i < want.data.length; ++i) {
      const a = Number(got.data[i]), b = Number(want.data[i]);
      const d = Math.abs(a - b);
      maxAbs = Math.max(maxAbs, d);
      if (!(d <= Number(atol) + Number(rtol) * Math.abs(b))) {
        if (ok) console.error(`${what}[${i}]: ${a} != ${b}`);
        ok = false;
      }
    }
  };
  let current = {};
  for (const n of state) current[n] = readNpy(path.join(stateDir, n + '.npy'));
  for (const c of [1, 2]) {
    const cd = path.join(dir, `call${c}`);
    const feeds = {...current};
    plain.forEach((n, i) => { feeds[n] = readNpy(path.join(cd, `in${i}.npy`)); });
    const results = await session.run(feeds);
    userOuts.forEach((n, k) => compare(`call ${c} output ${n}`, results[n], readNpy(path.join(cd, `out${k}.npy`))));
    const outs = fs.readdirSync(cd).filter(f => /^out\d+\.npy$/.test(f)).length;
    if (outs !== userOuts.length) {
      ok = false;
      console.error(`model has ${userOuts.length} outputs besides the state, PyTorch ${outs}`);
    }
    current = {};
    for (const n of state) {
      const got = results[n + '.out'];
      if (!got) throw new Error(`no state output ${n}.out`);
      compare(`call ${c} state ${n}`, got, readNpy(path.join(cd, 'state', n + '.npy')));
      current[n] = got;
    }
  }
  console.log(JSON.stringify({ok, max_abs: maxAbs, state}));
}
main().catch(e => { console.log(JSON.stringify({ok: false, error: e.message})); process.exit(1); });
