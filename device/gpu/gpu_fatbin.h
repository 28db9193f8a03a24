// The GPU kernels (gpu_kernels.cu) as nvcc built them: a fatbin embedded
// in libucc.a at build time (CMakeLists.txt; the bytes are the file nvcc
// wrote, pulled in with the assembler's .incbin). Where the build found no
// nvcc it is empty, and GPU buffers are staged.
#pragma once

#include <cstddef>

namespace ucc::gpu {

const void* fatbin();
size_t fatbin_size();  // 0: built without nvcc

}  // namespace ucc::gpu
