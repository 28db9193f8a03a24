#include "platform/mem/proc_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "platform/os/proc_id.h"

namespace ucc::plat {
namespace {

// Each line of the maps file starts "start-end perms ", both addresses in
// hex, perms four characters ("rw-p"); the rest of the line is skipped.
// The kernel lists the mappings in ascending order without overlaps, so
// one pass decides: `cur` is the first byte of the range not yet found
// inside a mapping.
class Walk {
 public:
  Walk(uint64_t addr, uint64_t end) : cur_(addr), end_(end) {}

  // Feeds n bytes; false once the answer is known (or the file is bad).
  bool feed(const char* p, size_t n) {
    for (size_t i = 0; i < n && !done_; ++i) take(p[i]);
    return !done_;
  }
  MapState result() const {
    if (bad_) return MapState::kUnknown;
    return done_ && cur_ >= end_ ? MapState::kMapped : MapState::kUnmapped;
  }

 private:
  enum class Field : uint8_t { kStart, kEnd, kPerms, kRest };

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  void take(char c) {
    if (c == '\n') {
      end_line();
      return;
    }
    switch (field_) {
      case Field::kStart:
      case Field::kEnd: {
        const char stop = field_ == Field::kStart ? '-' : ' ';
        uint64_t& v = field_ == Field::kStart ? start_ : stop_;
        if (c == stop && digits_ != 0) {
          field_ = field_ == Field::kStart ? Field::kEnd : Field::kPerms;
          digits_ = 0;
          return;
        }
        const int d = hex(c);
        if (d < 0 || ++digits_ > 16) return fail();
        v = v << 4 | static_cast<uint64_t>(d);
        return;
      }
      case Field::kPerms:
        if (nperm_ < 2) perm_[nperm_] = c;
        if (++nperm_ == 4) field_ = Field::kRest;
        return;
      case Field::kRest:
        return;
    }
  }

  void end_line() {
    if (field_ != Field::kRest) return fail();
    const bool usable = perm_[0] == 'r' || perm_[1] == 'w';
    if (stop_ > cur_) {
      if (start_ > cur_ || !usable) {
        done_ = true;  // a hole, or a mapping nobody may touch
      } else {
        cur_ = stop_;
        done_ = cur_ >= end_;
      }
    }
    field_ = Field::kStart;
    start_ = stop_ = 0;
    digits_ = nperm_ = 0;
    perm_[0] = perm_[1] = '-';
  }

  void fail() {
    bad_ = true;
    done_ = true;
  }

  uint64_t cur_, end_;
  uint64_t start_ = 0, stop_ = 0;
  Field field_ = Field::kStart;
  uint32_t digits_ = 0, nperm_ = 0;
  char perm_[2] = {'-', '-'};
  bool done_ = false;
  bool bad_ = false;
};

}  // namespace

MapState range_mapped(pid_t pid, uint64_t addr, uint64_t len) {
  note_foreign_reach(pid);
  uint64_t end;
  if (__builtin_add_overflow(addr, len, &end)) return MapState::kUnmapped;
  if (len == 0) return MapState::kMapped;
  char path[48];
  snprintf(path, sizeof(path), "/proc/%d/maps", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MapState::kUnknown;
  Walk w(addr, end);
  char buf[4096];
  bool io_error = false;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error = true;
    if (n <= 0 || !w.feed(buf, static_cast<size_t>(n))) break;
  }
  close(fd);
  return io_error ? MapState::kUnknown : w.result();
}

}  // namespace ucc::plat
