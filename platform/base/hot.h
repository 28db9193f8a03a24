// UCC_HOT marks the functions every small collective runs through (the
// post, the engine's pass and its steps, the small-message algorithms'
// steps, the reaping of completions). GCC places them together in the
// text section (.text.hot), so that they sit side by side whatever the
// order of the objects in the library, and do not evict one another from
// the instruction cache: with them scattered, a rebuild that only moved
// code between files changed small collectives' latency by several
// percent at equal instruction counts (docs/perf/small_messages.md).
#pragma once

#if defined(__GNUC__)
#define UCC_HOT __attribute__((hot))
#else
#define UCC_HOT
#endif
