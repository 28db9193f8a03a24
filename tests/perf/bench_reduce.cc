// Throughput of the reduction kernels against memcpy.
//
// Convention: bytes processed = bytes of dst written per call
// (count * element size), for every benchmark, memcpy included. A reduce
// also reads two inputs, so it moves 3x those bytes (2x in place) through
// memory; counting dst only puts each kernel on memcpy's scale, where
// "as fast as memcpy" means the kernel is bound by the same memory traffic
// per output byte, not that it moves fewer bytes.
//
// Args: the dst size in bytes (4 KiB: L1, 64 KiB: L2, 1 MiB: L2/LLC,
// 16 MiB: mostly DRAM on small-cache parts).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/reduce/half.h"
#include "device/reduce/reduce.h"
#include "offload/types.h"

namespace {

using ucc::off::DType;
using ucc::off::ROp;

// Buffers of `bytes` each, filled with values that stay normal (no
// denormal slow paths) however many times the in-place sum runs.
template <typename T>
struct Buffers {
  explicit Buffers(size_t bytes, T va, T vb)
      : a(bytes / sizeof(T), va),
        b(bytes / sizeof(T), vb),
        d(bytes / sizeof(T)) {}
  size_t count() const { return a.size(); }
  std::vector<T> a, b, d;
};

void set_bytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          state.range(0));
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}

template <typename T>
void run_reduce(benchmark::State& state, DType dt, ROp op, T va, T vb,
                bool in_place) {
  Buffers<T> buf(static_cast<size_t>(state.range(0)), va, vb);
  T* dst = in_place ? buf.a.data() : buf.d.data();
  for (auto _ : state) {
    ucc::dev::reduce(op, dt, dst, buf.a.data(), buf.b.data(), buf.count());
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}

void BM_SumFloat32(benchmark::State& state) {
  run_reduce<float>(state, DType::kFloat32, ROp::kSum, 1.0f, 0.5f, false);
}
void BM_SumFloat32InPlace(benchmark::State& state) {
  run_reduce<float>(state, DType::kFloat32, ROp::kSum, 1.0f, 0.5f, true);
}
void BM_SumFloat64(benchmark::State& state) {
  run_reduce<double>(state, DType::kFloat64, ROp::kSum, 1.0, 0.5, false);
}
void BM_SumBfloat16(benchmark::State& state) {
  run_reduce<uint16_t>(state, DType::kBfloat16, ROp::kSum,
                       ucc::dev::float_to_bf16(1.0f),
                       ucc::dev::float_to_bf16(0.5f), false);
}
void BM_SumFloat16(benchmark::State& state) {
  run_reduce<uint16_t>(state, DType::kFloat16, ROp::kSum,
                       ucc::dev::float_to_half(1.0f),
                       ucc::dev::float_to_half(0.5f), false);
}
void BM_MaxInt32(benchmark::State& state) {
  run_reduce<int32_t>(state, DType::kInt32, ROp::kMax, -3, 7, false);
}

#define SIZES Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)

BENCHMARK(BM_Memcpy)->SIZES;
BENCHMARK(BM_SumFloat32)->SIZES;
BENCHMARK(BM_SumFloat32InPlace)->SIZES;
BENCHMARK(BM_SumFloat64)->SIZES;
BENCHMARK(BM_SumBfloat16)->SIZES;
BENCHMARK(BM_SumFloat16)->SIZES;
BENCHMARK(BM_MaxInt32)->SIZES;

}  // namespace
