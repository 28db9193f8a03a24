// Objects behind public handles (contexts, libraries) are never returned
// to the heap: a destroyed one is buried here, its magic set to
// kDeadMagic, and the next creation of the same kind reuses the oldest.
// A stale handle (a second ucc_finalize, progress on a destroyed context)
// then reads a dead magic and is refused, instead of reading freed memory.
// Memory held is the peak number alive at once. Teams keep a list of
// their own (team.cc).
//
// Threads: any (a spin lock per kind).
#pragma once

#include <cstddef>

namespace ucc::host {

enum class Grave : int { kLib = 0, kContext = 1, kCount };

// Memory for one object of `bytes` bytes (64-byte aligned; every call for
// a kind must ask for the same size): a buried one, or fresh. nullptr
// when out of memory. The caller constructs the object in it.
void* grave_take(Grave kind, size_t bytes);
// Buries an object whose destructor has run: its first 4 bytes become
// kDeadMagic (the handle's magic), the next bytes link it in.
void grave_bury(Grave kind, void* obj);

}  // namespace ucc::host
