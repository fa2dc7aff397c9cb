// oneDNN alone on a list of convolution shapes: benchdnn's measurement, small enough to build
// with one g++ line (bench/conv_peak.py does it). Each convolution runs as the engine runs it:
// f32, forward_inference, activations channels-last (NHWC), weights in the layout oneDNN
// picks (reordered once, not timed), bias. Threads: OMP_NUM_THREADS.
//
// stdin: one convolution a line, 13 integers
//   N C H W OC KH KW stride_h stride_w pad_h pad_w groups dilation
// stdout: one line per convolution, "median_ms gflop", then nothing else.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unordered_map>
#include <vector>

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  long n, c, h, w, oc, kh, kw, sh, sw, ph, pw, g, dil;
  while (std::cin >> n >> c >> h >> w >> oc >> kh >> kw >> sh >> sw >> ph >> pw >> g >> dil) {
    const long ekh = (kh - 1) * dil + 1, ekw = (kw - 1) * dil + 1;
    const long oh = (h + 2 * ph - ekh) / sh + 1, ow = (w + 2 * pw - ekw) / sw + 1;
    const auto f32 = memory::data_type::f32;
    memory::desc src({n, c, h, w}, f32, memory::format_tag::nhwc);
    memory::desc dst({n, oc, oh, ow}, f32, memory::format_tag::nhwc);
    memory::desc bias({oc}, f32, memory::format_tag::a);
    memory::dims wd = g == 1 ? memory::dims{oc, c, kh, kw} : memory::dims{g, oc / g, c / g, kh, kw};
    memory::desc wAny(wd, f32, memory::format_tag::any);
    memory::desc wPlain(wd, f32, g == 1 ? memory::format_tag::oihw : memory::format_tag::goihw);
    convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, src,
                                wAny, bias, dst, {sh, sw}, {dil - 1, dil - 1}, {ph, pw}, {ph, pw});
    convolution_forward::primitive_desc pd(d, eng);
    memory srcM(src, eng), dstM(dst, eng), biasM(bias, eng), wM(pd.weights_desc(), eng),
        wU(wPlain, eng);
    for (auto* m : {&srcM, &biasM, &wU}) {
      float* p = static_cast<float*>(m->get_data_handle());
      const size_t k = m->get_desc().get_size() / sizeof(float);
      for (size_t i = 0; i < k; ++i) p[i] = static_cast<float>((i * 7919) % 13) * 0.01f - 0.06f;
    }
    reorder(wU, wM).execute(strm, wU, wM);
    convolution_forward conv(pd);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, srcM}, {DNNL_ARG_WEIGHTS, wM}, {DNNL_ARG_BIAS, biasM}, {DNNL_ARG_DST, dstM}};
    std::vector<double> ms;
    for (int r = 0; r < runs + 3; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      conv.execute(strm, args);
      strm.wait();
      auto t1 = std::chrono::steady_clock::now();
      if (r >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double gflop = 2.0 * n * oc * oh * ow * (c / g) * kh * kw * 1e-9;
    std::printf("%.6f %.6f\n", ms[ms.size() / 2], gflop);
    std::fflush(stdout);
  }
  return 0;
}
