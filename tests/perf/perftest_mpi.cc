// The MPI side of ucc_perftest (perftest_mpi.h), built when CMake finds MPI.
#include "tests/perf/perftest_mpi.h"

#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ucct::perf {
namespace {

MPI_Comm g_oob_comm = MPI_COMM_NULL;    // the library's OOB allgathers
MPI_Comm g_bench_comm = MPI_COMM_NULL;  // the compared collectives

// ---------------------------------------------------------------------------
// OOB over MPI_Iallgather. UCC needs it non-blocking: allgather starts one,
// req_test polls it with MPI_Test.

ucc_status_t oob_allgather(void* src, void* dst, size_t len, void* info,
                           void** req) {
  auto* r = new MPI_Request;
  const MPI_Comm comm = *static_cast<MPI_Comm*>(info);
  if (MPI_Iallgather(src, static_cast<int>(len), MPI_BYTE, dst,
                     static_cast<int>(len), MPI_BYTE, comm, r) != MPI_SUCCESS) {
    delete r;
    return UCC_ERR_NO_MESSAGE;
  }
  *req = r;
  return UCC_OK;
}

ucc_status_t oob_test(void* req) {
  int done = 0;
  if (MPI_Test(static_cast<MPI_Request*>(req), &done, MPI_STATUS_IGNORE) !=
      MPI_SUCCESS)
    return UCC_ERR_NO_MESSAGE;
  return done ? UCC_OK : UCC_INPROGRESS;
}

ucc_status_t oob_free(void* req) {
  delete static_cast<MPI_Request*>(req);
  return UCC_OK;
}

// ---------------------------------------------------------------------------
// Datatypes and ops MPI has an exact counterpart for.

MPI_Datatype mpi_dt(ucc_datatype_t dt) {
  switch (dt) {
    case UCC_DT_INT8:
      return MPI_INT8_T;
    case UCC_DT_INT16:
      return MPI_INT16_T;
    case UCC_DT_INT32:
      return MPI_INT32_T;
    case UCC_DT_INT64:
      return MPI_INT64_T;
    case UCC_DT_UINT8:
      return MPI_UINT8_T;
    case UCC_DT_UINT16:
      return MPI_UINT16_T;
    case UCC_DT_UINT32:
      return MPI_UINT32_T;
    case UCC_DT_UINT64:
      return MPI_UINT64_T;
    case UCC_DT_FLOAT32:
      return MPI_FLOAT;
    case UCC_DT_FLOAT64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(ucc_reduction_op_t op) {
  switch (op) {
    case UCC_OP_SUM:
      return MPI_SUM;
    case UCC_OP_PROD:
      return MPI_PROD;
    case UCC_OP_MAX:
      return MPI_MAX;
    case UCC_OP_MIN:
      return MPI_MIN;
    case UCC_OP_LAND:
      return MPI_LAND;
    case UCC_OP_LOR:
      return MPI_LOR;
    case UCC_OP_LXOR:
      return MPI_LXOR;
    case UCC_OP_BAND:
      return MPI_BAND;
    case UCC_OP_BOR:
      return MPI_BOR;
    case UCC_OP_BXOR:
      return MPI_BXOR;
    default:
      return MPI_OP_NULL;
  }
}

}  // namespace

bool mpi_built() { return true; }

int mpi_launched_size() {
  for (const char* var :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = getenv(var);
    if (v && atoi(v) > 0) return atoi(v);
  }
  return 0;
}

int mpi_run(const std::function<int(Rank&)>& fn) {
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    std::fprintf(stderr, "ucc_perftest: MPI_Init failed\n");
    return 1;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &g_oob_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_bench_comm);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Rank r{rank, size, {}};
  r.oob.allgather = oob_allgather;
  r.oob.req_test = oob_test;
  r.oob.req_free = oob_free;
  r.oob.coll_info = &g_oob_comm;
  r.oob.n_oob_eps = static_cast<uint32_t>(size);
  r.oob.oob_ep = static_cast<uint32_t>(rank);
  int rc = fn(r);
  std::fflush(stdout);
  // Any status but kRanksDone may leave the others waiting in a collective.
  if (rc != 0 && rc != kRanksDone) MPI_Abort(MPI_COMM_WORLD, rc);
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Comm_free(&g_bench_comm);
  MPI_Comm_free(&g_oob_comm);
  MPI_Finalize();
  return worst;
}

int mpi_relaunch(int argc, char** argv, const Config& cfg) {
  const char* env = getenv("UCC_PERFTEST_MPIRUN");
  const std::string mpirun_s = env != nullptr && *env ? env : UCCT_MPIEXEC;
  const char* mpirun = mpirun_s.c_str();
  // Ours alone: the ranks' libraries would warn of an unknown UCC_ knob.
  unsetenv("UCC_PERFTEST_MPIRUN");
  // Open MPI refuses root without these; CI machines run as root.
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  // One node: shared memory only, unless the user chose.
  setenv("OMPI_MCA_btl", "self,vader", 0);
  const std::string np = std::to_string(cfg.ranks);
  std::vector<const char*> args = {mpirun, "-np", np.c_str()};
  if (cfg.bind && cfg.ranks <= usable_cpus()) {
    args.insert(args.end(), {"--bind-to", "core"});
  } else {
    args.insert(args.end(), {"--bind-to", "none", "--oversubscribe"});
  }
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    std::fprintf(stderr, "ucc_perftest: cannot find its own binary\n");
    return 1;
  }
  self[len] = '\0';
  args.push_back(self);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::fflush(stdout);
  execvp(mpirun, const_cast<char* const*>(args.data()));
  std::fprintf(stderr,
               "ucc_perftest: cannot run %s (%s); set UCC_PERFTEST_MPIRUN\n",
               mpirun, std::strerror(errno));
  return 1;
}

const char* mpi_unsupported(const Config& cfg) {
  const ucc_coll_type_t t = cfg.coll->type;
  if (t == UCC_COLL_TYPE_BARRIER) return nullptr;
  if (mpi_dt(cfg.dt->dt) == MPI_DATATYPE_NULL)
    return "MPI has no such datatype";
  if (cfg.coll->reduction && mpi_op(cfg.op) == MPI_OP_NULL)
    return "MPI has no such reduction op";
  if (cfg.inplace && t == UCC_COLL_TYPE_REDUCE_SCATTER)
    return "in-place reduce_scatter keeps its result elsewhere in MPI";
  return nullptr;
}

struct MpiCall {
  ucc_coll_type_t type;
  const void* in;  // send buffer, or MPI_IN_PLACE
  void* buf;       // bcast's buffer
  void* dst;
  int n;       // elements per rank
  int scount;  // allgather's, alltoall's send count (0 in place)
  // The v forms: n elements to / from every rank, packed in rank order.
  std::vector<int> counts, displs;
  MPI_Datatype dt;
  MPI_Op op;
  int root;
  MPI_Comm comm;
};

std::shared_ptr<const MpiCall> mpi_prepare(const Config& cfg, bool inplace,
                                           void* src, void* dst,
                                           uint64_t count) {
  if (count > static_cast<uint64_t>(INT32_MAX)) return nullptr;  // MPI's int
  auto c = std::make_shared<MpiCall>();
  c->type = cfg.coll->type;
  c->comm = g_bench_comm;
  c->dt = mpi_dt(cfg.dt->dt);
  c->op = mpi_op(cfg.op);
  c->n = static_cast<int>(count);
  c->scount = inplace ? 0 : c->n;
  c->root = static_cast<int>(cfg.root);
  c->buf = src;
  c->dst = dst;
  c->in = inplace ? MPI_IN_PLACE : src;
  int rank = 0;
  MPI_Comm_rank(c->comm, &rank);
  if (c->type == UCC_COLL_TYPE_REDUCE)
    c->in = inplace && rank == c->root ? MPI_IN_PLACE : src;
  if (cfg.coll->base != cfg.coll->type) {
    int size = 0;
    MPI_Comm_size(c->comm, &size);
    if (count * static_cast<uint64_t>(size) > INT32_MAX) return nullptr;
    c->counts.assign(static_cast<size_t>(size), c->n);
    for (int q = 0; q < size; ++q) c->displs.push_back(c->n * q);
  }
  return c;
}

bool mpi_call(const MpiCall& c) {
  int rc = MPI_ERR_OTHER;
  switch (c.type) {
    case UCC_COLL_TYPE_BARRIER:
      rc = MPI_Barrier(c.comm);
      break;
    case UCC_COLL_TYPE_ALLREDUCE:
      rc = MPI_Allreduce(c.in, c.dst, c.n, c.dt, c.op, c.comm);
      break;
    case UCC_COLL_TYPE_BCAST:
      rc = MPI_Bcast(c.buf, c.n, c.dt, c.root, c.comm);
      break;
    case UCC_COLL_TYPE_REDUCE:
      rc = MPI_Reduce(c.in, c.dst, c.n, c.dt, c.op, c.root, c.comm);
      break;
    case UCC_COLL_TYPE_ALLGATHER:
      rc = MPI_Allgather(c.in, c.scount, c.dt, c.dst, c.n, c.dt, c.comm);
      break;
    case UCC_COLL_TYPE_ALLTOALL:
      rc = MPI_Alltoall(c.in, c.scount, c.dt, c.dst, c.n, c.dt, c.comm);
      break;
    case UCC_COLL_TYPE_REDUCE_SCATTER:
      rc = MPI_Reduce_scatter_block(c.buf, c.dst, c.n, c.dt, c.op, c.comm);
      break;
    case UCC_COLL_TYPE_ALLGATHERV:
      rc = MPI_Allgatherv(c.in, c.n, c.dt, c.dst, c.counts.data(),
                          c.displs.data(), c.dt, c.comm);
      break;
    case UCC_COLL_TYPE_ALLTOALLV:
      rc = MPI_Alltoallv(c.in, c.counts.data(), c.displs.data(), c.dt, c.dst,
                         c.counts.data(), c.displs.data(), c.dt, c.comm);
      break;
    case UCC_COLL_TYPE_REDUCE_SCATTERV:
      rc =
          MPI_Reduce_scatter(c.buf, c.dst, c.counts.data(), c.dt, c.op, c.comm);
      break;
    default:
      break;
  }
  return rc == MPI_SUCCESS;
}

bool mpi_barrier() { return MPI_Barrier(g_bench_comm) == MPI_SUCCESS; }

std::string mpi_library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return "MPI";
  std::string s(v, static_cast<size_t>(len));
  const size_t cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

}  // namespace ucct::perf
