// A plain double-precision mixture of SwiGLU experts: the reference that
// the moe kernel and the executor tests are checked against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace fm::kernels::reference {

/// One expert's weights, row-major nn.Linear layouts: gate, up [I][K],
/// down [K][I].
struct Expert {
  std::vector<float> gate, up, down;
};

struct Moe {
  int64_t hidden = 0, intermediate = 0, topK = 1;
  bool normTopk = true;
  std::vector<float> router; // [E][K]
  std::vector<Expert> experts;
  /// Shared expert (sharedIntermediate > 0) and its gate [1][K].
  int64_t sharedIntermediate = 0;
  Expert shared;
  std::vector<float> sharedExpertGate;

  /// y[r] (+)= moe(x[r]) for `rows` dense rows of `hidden` floats.
  void run(const float *x, int64_t rows, float *y, bool accumulate) const {
    const int64_t K = hidden, E = int64_t(experts.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * K;
      std::vector<double> out(K, 0.0);
      // Softmax over the router logits (rounded to f32 as the kernel's
      // matmul produces them), then the top k, lower index first on ties.
      std::vector<double> p(E);
      double mx = -INFINITY;
      for (int64_t e = 0; e < E; ++e) {
        p[e] = float(dot(&router[e * K], xr, K));
        mx = std::max(mx, p[e]);
      }
      double sum = 0;
      for (double &v : p)
        sum += (v = std::exp(v - mx));
      for (double &v : p)
        v /= sum;
      std::vector<int64_t> order(E);
      for (int64_t e = 0; e < E; ++e)
        order[e] = e;
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return p[a] > p[b] || (p[a] == p[b] && a < b);
      });
      double kept = 0;
      for (int64_t j = 0; j < topK; ++j)
        kept += p[order[j]];
      for (int64_t j = 0; j < topK; ++j) {
        const int64_t e = order[j];
        const double w = normTopk ? p[e] / kept : p[e];
        std::vector<double> o = swiglu(experts[e], intermediate, xr);
        for (int64_t c = 0; c < K; ++c)
          out[c] += w * o[c];
      }
      if (sharedIntermediate > 0) {
        double g = 1.0 / (1.0 + std::exp(-dot(sharedExpertGate.data(), xr, K)));
        std::vector<double> o = swiglu(shared, sharedIntermediate, xr);
        for (int64_t c = 0; c < K; ++c)
          out[c] += g * o[c];
      }
      for (int64_t c = 0; c < K; ++c)
        y[r * K + c] = float((accumulate ? double(y[r * K + c]) : 0.0) + out[c]);
    }
  }

  /// Which experts row `x` goes to, in rank order.
  std::vector<int64_t> route(const float *x) const {
    const int64_t K = hidden, E = int64_t(experts.size());
    std::vector<double> logit(E);
    for (int64_t e = 0; e < E; ++e)
      logit[e] = float(dot(&router[e * K], x, K));
    std::vector<int64_t> order(E);
    for (int64_t e = 0; e < E; ++e)
      order[e] = e;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return logit[a] > logit[b] || (logit[a] == logit[b] && a < b);
    });
    order.resize(topK);
    return order;
  }

private:
  static double dot(const float *a, const float *b, int64_t n) {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i)
      acc += double(a[i]) * b[i];
    return acc;
  }

  std::vector<double> swiglu(const Expert &x, int64_t I, const float *in) const {
    const int64_t K = hidden;
    std::vector<double> act(I);
    for (int64_t i = 0; i < I; ++i) {
      double g = dot(&x.gate[i * K], in, K), u = dot(&x.up[i * K], in, K);
      act[i] = g / (1.0 + std::exp(-g)) * u;
    }
    std::vector<double> out(K);
    for (int64_t c = 0; c < K; ++c) {
      double acc = 0;
      for (int64_t i = 0; i < I; ++i)
        acc += double(x.down[c * I + i]) * act[i];
      out[c] = acc;
    }
    return out;
  }
};

} // namespace fm::kernels::reference
