#include "tests/sim/sim_job.h"

#include <cmath>
#include <cstring>
#include <simgrid/s4u/Actor.hpp>

namespace ucct::sim {
namespace {

namespace sg4 = simgrid::s4u;

ucc_status_t oob_allgather(void* sbuf, void* rbuf, size_t len, void* coll_info,
                           void** req) {
  auto* ro = static_cast<RankOob*>(coll_info);
  Job& j = *ro->job;
  const size_t all = len * static_cast<size_t>(j.n);
  // Every rank asks for the same length in the same call; the first to
  // come sizes the buffer (the actors run one at a time).
  std::vector<char>& b = j.oob_buf[ro->round % 2];
  if (b.size() < all) b.resize(all);
  memcpy(b.data() + len * static_cast<size_t>(ro->rank), sbuf, len);
  j.barrier->wait();  // every rank's part is in
  ro->rbuf = rbuf;
  ro->len = all;
  if (ro->rank == 0) {
    ++j.oob_rounds;
    j.oob_bytes += len;
  }
  const double s = j.allgather_s(len);
  if (s > 0) sg4::this_actor::sleep_for(s);
  *req = ro;
  return UCC_OK;
}

ucc_status_t oob_test(void* req) {
  if (req == nullptr) return UCC_ERR_INVALID_PARAM;
  auto* ro = static_cast<RankOob*>(req);
  if (ro->rbuf != nullptr) {
    memcpy(ro->rbuf, ro->job->oob_buf[ro->round % 2].data(), ro->len);
    ro->rbuf = nullptr;
    ++ro->round;
  }
  return UCC_OK;
}
ucc_status_t oob_free(void*) { return UCC_OK; }

}  // namespace

double Job::allgather_s(size_t len) const {
  if (n < 2 || bw_bps <= 0) return 0;
  const double rounds = std::ceil(std::log2(static_cast<double>(n)));
  return rounds * lat_s + static_cast<double>(n - 1) * len / bw_bps;
}

ucc_oob_coll_t make_oob(RankOob* r) {
  ucc_oob_coll_t o{};
  o.allgather = &oob_allgather;
  o.req_test = &oob_test;
  o.req_free = &oob_free;
  o.coll_info = r;
  o.n_oob_eps = static_cast<uint32_t>(r->job->n);
  o.oob_ep = static_cast<uint32_t>(r->rank);
  return o;
}

}  // namespace ucct::sim
