// Median latency of one ONNX model in ONNX Runtime (npm onnxruntime-node, CPU).
// Usage: node bench/ort_bench.js MODEL.onnx INPUT.npy THREADS RUNS WARMUP
// Prints {"median_ms": ...}. The input .npy must be float32 or int64, C order.
const fs = require('fs');
const path = require('path');
// ONNX Runtime is installed for tests (tests/package.json) by scripts/setup.sh.
const ort = require(path.join(__dirname, '..', 'tests', 'node_modules', 'onnxruntime-node'));

function readNpy(path) {
  const buf = fs.readFileSync(path);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const data = buf.subarray(10 + headerLen);
  const copy = new Uint8Array(data).buffer;
  if (descr === '<f4') return new ort.Tensor('float32', new Float32Array(copy), shape);
  if (descr === '<i8') return new ort.Tensor('int64', new BigInt64Array(copy), shape);
  throw new Error('unsupported dtype ' + descr);
}

async function main() {
  const [model, input, threads, runs, warmup] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
  });
  const feeds = {[session.inputNames[0]]: readNpy(input)};
  for (let i = 0; i < Number(warmup); ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < Number(runs); ++i) {
    const t = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  const m = times.length % 2 ? times[(times.length - 1) / 2] : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
  console.log(JSON.stringify({median_ms: m}));
}
main().catch(e => { console.error(e.message); process.exit(1); });
