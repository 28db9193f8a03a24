#include "host/api/graveyard.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "host/api/objects.h"

namespace ucc::host {
namespace {

// A buried object: the magic where the live object keeps its own, then
// the link.
struct Buried {
  uint32_t magic;
  uint32_t pad;
  Buried* next;
};

struct Yard {
  SpinLock lock;
  Buried* head = nullptr;
  Buried* tail = nullptr;
};

Yard& yard(Grave kind) {
  static Yard y[static_cast<int>(Grave::kCount)];
  return y[static_cast<int>(kind)];
}

}  // namespace

void* grave_take(Grave kind, size_t bytes) {
  Yard& y = yard(kind);
  {
    Guard g(y.lock, true);
    Buried* b = y.head;
    if (b != nullptr) {
      y.head = b->next;
      if (y.head == nullptr) y.tail = nullptr;
      return b;
    }
  }
  const size_t n = (bytes + 63) & ~size_t{63};
  return aligned_alloc(64, n < sizeof(Buried) ? 64 : n);
}

void grave_bury(Grave kind, void* obj) {
  Buried b{kDeadMagic, 0, nullptr};
  memcpy(obj, &b, sizeof(b));
  Yard& y = yard(kind);
  Guard g(y.lock, true);
  auto* p = static_cast<Buried*>(obj);
  if (y.tail != nullptr)
    y.tail->next = p;
  else
    y.head = p;
  y.tail = p;
}

}  // namespace ucc::host
