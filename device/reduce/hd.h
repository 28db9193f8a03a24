// UCC_HD marks a function callable from host code and from CUDA device
// code: the reduction arithmetic (half.h, reduce_ops.h) is written once and
// compiled by the host compiler for the engine and by nvcc for the GPU
// kernels (device/gpu/gpu_kernels.cu). Empty outside nvcc.
#pragma once

#if defined(__CUDACC__)
#define UCC_HD __host__ __device__
#else
#define UCC_HD
#endif
