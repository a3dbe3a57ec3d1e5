#include "sim/kv_block_pool.h"

#include <cassert>

namespace tokperf::sim {

KvBlockPool::KvBlockPool(int64_t num_blocks) {
  const size_t n = num_blocks > 0 ? static_cast<size_t>(num_blocks) : 0;
  ref_.assign(n, 0);
  prev_.assign(n, -1);
  next_.assign(n, -1);
  hash_.assign(n, 0);
  has_hash_.assign(n, 0);
  for (size_t b = 0; b < n; ++b) push_back(static_cast<int32_t>(b));
}

void KvBlockPool::unlink(int32_t b) {
  const auto i = static_cast<size_t>(b);
  if (prev_[i] >= 0)
    next_[static_cast<size_t>(prev_[i])] = next_[i];
  else
    head_ = next_[i];
  if (next_[i] >= 0)
    prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else
    tail_ = prev_[i];
  prev_[i] = next_[i] = -1;
  --num_free_;
}

void KvBlockPool::push_back(int32_t b) {
  const auto i = static_cast<size_t>(b);
  prev_[i] = tail_;
  next_[i] = -1;
  if (tail_ >= 0)
    next_[static_cast<size_t>(tail_)] = b;
  else
    head_ = b;
  tail_ = b;
  ++num_free_;
}

int32_t KvBlockPool::allocate() {
  assert(num_free_ > 0);
  const int32_t b = head_;
  unlink(b);
  const auto i = static_cast<size_t>(b);
  if (has_hash_[i]) {
    cached_.erase(hash_[i]);
    has_hash_[i] = 0;
  }
  ref_[i] = 1;
  return b;
}

int32_t KvBlockPool::acquire_cached(uint64_t hash) {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return -1;
  const int32_t b = it->second;
  if (ref_[static_cast<size_t>(b)]++ == 0) unlink(b);
  return b;
}

void KvBlockPool::register_hash(int32_t block, uint64_t hash) {
  const auto i = static_cast<size_t>(block);
  if (has_hash_[i] || !cached_.emplace(hash, block).second) return;
  hash_[i] = hash;
  has_hash_[i] = 1;
}

void KvBlockPool::release(int32_t block) {
  const auto i = static_cast<size_t>(block);
  assert(ref_[i] > 0);
  if (--ref_[i] == 0) push_back(block);
}

}  // namespace tokperf::sim
