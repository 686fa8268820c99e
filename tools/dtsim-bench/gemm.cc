#include "gemm.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "device.h"

namespace dtsim::bench {
namespace {

// Operand types of one benchmark dtype. fp8 follows Transformer Engine's fp8 GEMMs: e4m3 inputs,
// 16-bit output; cuBLASLt's fp8 kernels need the "TN" layout used for every dtype here.
struct Types {
  cudaDataType_t in, out;
  std::size_t in_bytes;
};

Types types_of(const std::string& dtype, bool accumulate_fp32) {
  if (accumulate_fp32 && dtype == "fp8")
    throw std::invalid_argument("accumulate_fp32 needs 16-bit inputs");  // main.cc says so first
  if (dtype == "bf16") return {CUDA_R_16BF, accumulate_fp32 ? CUDA_R_32F : CUDA_R_16BF, 2};
  if (dtype == "fp16") return {CUDA_R_16F, accumulate_fp32 ? CUDA_R_32F : CUDA_R_16F, 2};
  if (dtype == "fp8") return {CUDA_R_8F_E4M3, CUDA_R_16BF, 1};
  throw std::invalid_argument("--dtype: expected bf16, fp16 or fp8, got \"" + dtype + "\"");
}

// Random finite values of magnitude 2^-5 .. 2^2 with random mantissa bits, written as raw bit
// patterns (sign, exponent, mantissa) so no float conversion is needed: what matters for the
// power a GEMM draws is that its operand bits toggle like real data, not the exact distribution.
std::vector<unsigned char> random_bits(const std::string& dtype, std::size_t bytes) {
  std::vector<unsigned char> out(bytes);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;  // xorshift64* (Marsaglia 2003; Vigna 2016)
  auto next = [&x] {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545F4914F6CDD1Dull;
  };
  if (dtype == "fp8") {
    // e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; exponents 2..9 = 2^-5 .. 2^2.
    for (auto& b : out) {
      std::uint64_t r = next();
      b = static_cast<unsigned char>(((r & 1) << 7) | ((2 + ((r >> 1) & 7)) << 3) | ((r >> 4) & 7));
    }
    return out;
  }
  // bf16: 8 exponent bits (bias 127), 7 mantissa; fp16: 5 exponent bits (bias 15), 10 mantissa.
  bool bf16 = dtype == "bf16";
  int mant_bits = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
  for (std::size_t i = 0; i + 1 < bytes; i += 2) {
    std::uint64_t r = next();
    std::uint16_t sign = static_cast<std::uint16_t>((r & 1) << 15);
    std::uint16_t exp = static_cast<std::uint16_t>(bias - 5 + static_cast<int>((r >> 1) & 7));
    std::uint16_t mant = static_cast<std::uint16_t>((r >> 4) & ((1u << mant_bits) - 1));
    std::uint16_t v = static_cast<std::uint16_t>(sign | (exp << mant_bits) | mant);
    std::memcpy(&out[i], &v, 2);
  }
  return out;
}

// Fills `buf` by repeating a 64 MiB random block (random bits, cheap to make on the host).
void fill(DeviceBuffer& buf, const std::vector<unsigned char>& block) {
  auto* dst = static_cast<unsigned char*>(buf.get());
  for (std::size_t off = 0; off < buf.size(); off += block.size()) {
    std::size_t n = std::min(block.size(), buf.size() - off);
    check(cudaMemcpy(dst + off, block.data(), n, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
}

// One cuBLASLt matmul D = A^T B (column-major: A is k x m, B is k x n, D is m x n) with the
// first algorithm cuBLASLt's heuristic returns, as frameworks call it.
class Matmul {
 public:
  Matmul(cublasLtHandle_t h, const Types& t, const GemmShape& s, std::size_t workspace, float beta)
      : h_(h), workspace_(workspace), beta_(beta) {
    check(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    check(cublasLtMatrixLayoutCreate(&a_, t.in, static_cast<std::uint64_t>(s.k), static_cast<std::uint64_t>(s.m), s.k),
          "layout A");
    check(cublasLtMatrixLayoutCreate(&b_, t.in, static_cast<std::uint64_t>(s.k), static_cast<std::uint64_t>(s.n), s.k),
          "layout B");
    check(cublasLtMatrixLayoutCreate(&d_, t.out, static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n), s.m),
          "layout D");
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_,
                                               sizeof workspace_),
          "MAX_WORKSPACE_BYTES");
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h_, desc_, a_, b_, d_, d_, pref, 1, &algo_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    check(st, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0)
      throw CudaError("cuBLASLt has no algorithm for " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                      std::to_string(s.k));
  }
  ~Matmul() {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(d_);
    cublasLtMatmulDescDestroy(desc_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  void run(const void* a, const void* b, void* d, void* workspace) const {
    float alpha = 1;  // C is D: with beta 1 the product accumulates into D
    check(cublasLtMatmul(h_, desc_, &alpha, a, a_, b, b_, &beta_, d, d_, d, d_, &algo_.algo, workspace, workspace_, 0),
          "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t h_;
  std::size_t workspace_;
  float beta_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
};

struct Operands {
  DeviceBuffer a, b, d, workspace;
};

void run_on(const Matmul& mm, Operands& o) { mm.run(o.a.get(), o.b.get(), o.d.get(), o.workspace.get()); }

}  // namespace

std::vector<GemmShape> default_gemm_shapes() {
  std::vector<GemmShape> s;
  for (std::int64_t d : {1024, 2048, 4096, 6144, 8192, 12288, 16384}) s.push_back({d, d, d});
  // m*n axis at a deep k, and k axis at a wide m*n: the two terms of the fitted curve.
  for (std::int64_t m : {256, 512, 1024, 2048}) s.push_back({m, 4096, 8192});
  for (std::int64_t k : {256, 512, 1024, 2048, 4096}) s.push_back({8192, 8192, k});
  // Training shapes: GPT-3 175B at TP 4 (whole and in Transformer Engine's 4 row chunks, wgrad
  // with k = tokens), Llama 3 8B at TP 1 and 70B at TP 4 with 8k tokens.
  for (GemmShape g : std::initializer_list<GemmShape>{{2048, 9216, 12288}, {512, 9216, 12288}, {512, 12288, 3072},
                                                      {512, 12288, 12288}, {2048, 12288, 12288}, {12288, 12288, 2048},
                                                      {4096, 6144, 4096}, {4096, 28672, 4096}, {4096, 4096, 14336},
                                                      {1024, 2560, 8192}, {1024, 14336, 8192}, {1024, 8192, 7168}})
    s.push_back(g);
  return s;
}

std::vector<GemmShape> parse_gemm_shapes(const std::string& text) {
  std::vector<GemmShape> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(';', pos);
    std::string item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    GemmShape g;
    char c1 = 0, c2 = 0;
    int used = 0;
    long long m = 0, n = 0, k = 0;
    if (std::sscanf(item.c_str(), "%lld%c%lld%c%lld%n", &m, &c1, &n, &c2, &k, &used) != 5 || c1 != ',' || c2 != ',' ||
        used != static_cast<int>(item.size()) || m < 1 || n < 1 || k < 1 || m > (1 << 20) || n > (1 << 20) ||
        k > (1 << 20))
      throw std::invalid_argument("--shapes: expected m,n,k with each in [1, 1048576], got \"" + item + "\"");
    g.m = m;
    g.n = n;
    g.k = k;
    out.push_back(g);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

nlohmann::json run_gemm(const std::vector<GemmShape>& shapes, const GemmOptions& opt) {
  Types t = types_of(opt.dtype, opt.accumulate_fp32);
  std::size_t out_bytes = opt.accumulate_fp32 ? 4 : 2;
  float beta = opt.accumulate_fp32 ? 1.0f : 0.0f;
  std::size_t a_elems = 0, b_elems = 0, d_elems = 0;
  GemmShape largest = shapes.front();
  for (const GemmShape& s : shapes) {
    a_elems = std::max(a_elems, static_cast<std::size_t>(s.m * s.k));
    b_elems = std::max(b_elems, static_cast<std::size_t>(s.k * s.n));
    d_elems = std::max(d_elems, static_cast<std::size_t>(s.m * s.n));
    if (s.m * s.n * s.k > largest.m * largest.n * largest.k) largest = s;
  }
  Operands o{DeviceBuffer(a_elems * t.in_bytes), DeviceBuffer(b_elems * t.in_bytes), DeviceBuffer(d_elems * out_bytes),
             DeviceBuffer(opt.workspace)};
  std::vector<unsigned char> block = random_bits(opt.dtype, std::size_t{64} << 20);
  fill(o.a, block);
  fill(o.b, block);
  check(cudaMemset(o.d.get(), 0, o.d.size()), "cudaMemset");  // accumulation starts from zeros
  cublasLtHandle_t h = nullptr;
  check(cublasLtCreate(&h), "cublasLtCreate");
  nlohmann::json results = nlohmann::json::array();
  try {
    {
      Matmul warm(h, t, largest, opt.workspace, beta);
      if (opt.warmup_s > 0) (void)time_window([&] { run_on(warm, o); }, opt.warmup_s);
    }
    for (const GemmShape& s : shapes) {
      Matmul mm(h, t, s, opt.workspace, beta);
      Window w = time_window([&] { run_on(mm, o); }, opt.seconds);
      double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
      results.push_back({{"m", s.m}, {"n", s.n}, {"k", s.k},
                         {"tflops", flops * static_cast<double>(w.iterations) / w.seconds / 1e12},
                         {"tflops_min", flops * w.min_rate / 1e12}, {"tflops_max", flops * w.max_rate / 1e12},
                         {"iterations", w.iterations}, {"seconds", w.seconds}});
    }
  } catch (...) {
    cublasLtDestroy(h);
    throw;
  }
  cublasLtDestroy(h);
  return {{"dtype", opt.dtype}, {"accumulate", opt.accumulate_fp32 ? "fp32" : "none"}, {"layout", "TN"}, {"warmup_s", opt.warmup_s}, {"seconds_per_shape", opt.seconds},
          {"workspace_bytes", opt.workspace}, {"warmup_shape", {largest.m, largest.n, largest.k}},
          {"results", results}};
}

}  // namespace dtsim::bench
