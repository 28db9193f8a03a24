// Inputs and result check of ucc_perftest: deterministic, rank-dependent
// data for one size, and the expected value of every output element.
//
// Words used below:
//   count  - the perftest's count for one size (see Setup::count)
//   block  - count elements: the unit that moves between two ranks in
//            allgather / alltoall / reduce_scatter
//   poison - 0xFF in every byte: what output buffers hold before the
//            collective, so that elements nobody wrote are caught (it is -1
//            or the maximum for integers and a NaN for floating types, never
//            a value the check expects)
//
// Values are small integers, exact in every datatype including float16 and
// bfloat16, chosen per reduction so that results stay small (sum: 1..4 per
// rank, prod: a 2 and a 3 spread over the ranks, logical: 0/1 patterns,
// bitwise: hashed bits). Integer results are compared bit-exact after
// truncation to the element width (wrap-around included); floating results
// within a rounding tolerance that grows with the rank count.
//
// Threads: stateless, any thread.
#pragma once

#include <ucc/api/ucc.h>

#include <string>
#include <vector>

#include "tests/common/types.h"

namespace ucct::perf {

struct Setup {
  ucc_coll_type_t coll;
  const DtypeInfo* dt;
  ucc_reduction_op_t op;
  int rank;
  int size;
  uint64_t count;  // per-rank block for allgather / alltoall / reduce_scatter,
                   // whole vector for allreduce / bcast / reduce
  uint64_t root;
  bool inplace;  // only where the collective has an in-place form
};

// The buffers of a setup as UCC defines them for `type` (s.coll, or its
// v form): element counts of src and dst, and whether this rank passes
// each (not in place, not bcast's dst, a reduce's dst at the root only).
struct Shape {
  uint64_t src_count = 0;
  uint64_t dst_count = 0;
  bool src_here = false;
  bool dst_here = false;
};
Shape shape_of(const Setup& s, ucc_coll_type_t type);

// Persistent collective arguments over src and dst of that shape (op and
// root where the collective has them). The v forms spell out the regular
// layout (every block count elements, packed in rank order) in *v's
// 64-bit arrays, which must outlive the arguments.
struct VArrays {
  std::vector<ucc_count_t> counts;
  std::vector<ucc_aint_t> displs;
};
ucc_coll_args_t coll_args(const Setup& s, ucc_coll_type_t type, const Shape& sh,
                          void* src, void* dst, ucc_memory_type_t mt,
                          VArrays* v);

// Why the result of this setup is not checked; nullptr when it is.
const char* check_skip_reason(const Setup& s);

// Poisons dst (dst_count elements) and writes this rank's inputs into src
// and / or dst, following the UCC buffer rules of s.coll and s.inplace.
// src / dst may be null where the collective has no such buffer here.
void fill_inputs(const Setup& s, void* src, uint64_t src_count, void* dst,
                 uint64_t dst_count);

// Checks this rank's output (the buffer that holds the result: dst, or the
// bcast buffer). Returns true when correct or nothing to check on this
// rank; false with a one-line description of the first wrong element in
// *why.
bool check_result(const Setup& s, const void* src, const void* dst,
                  std::string* why);

}  // namespace ucct::perf
