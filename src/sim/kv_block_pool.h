// The paged KV cache: a fixed pool of blocks (16 tokens each in vLLM) with reference counts and a
// prefix cache. A full block may carry the hash of the token prefix it holds; when its last user
// releases it, it stays findable by that hash on an LRU free list until a fresh allocation evicts
// it.
//
// Invariants (checked by tests): used + free == capacity; a block is on the free list iff its
// reference count is zero; a hash maps to at most one block.
// Not thread-safe: owned by one engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tokperf::sim {

class KvBlockPool {
 public:
  explicit KvBlockPool(int64_t num_blocks);

  int64_t capacity() const { return static_cast<int64_t>(ref_.size()); }
  int64_t num_free() const { return num_free_; }  // includes cached blocks nobody uses
  int64_t num_used() const { return capacity() - num_free_; }

  // Takes the least recently freed block (dropping its cached hash). REQUIRES: num_free() > 0.
  int32_t allocate();

  // A reference to the block holding `hash`, or -1 on a miss.
  int32_t acquire_cached(uint64_t hash);
  bool contains(uint64_t hash) const { return cached_.count(hash) != 0; }

  // Marks a full block as holding `hash`; ignored if another block already holds that hash.
  void register_hash(int32_t block, uint64_t hash);

  // Drops one reference; at zero the block joins the free list's most-recent end.
  void release(int32_t block);

  int32_t ref_count(int32_t block) const { return ref_[static_cast<size_t>(block)]; }

 private:
  void unlink(int32_t b);
  void push_back(int32_t b);

  std::vector<int32_t> ref_;
  std::vector<int32_t> prev_, next_;  // intrusive doubly linked free list
  std::vector<uint64_t> hash_;
  std::vector<uint8_t> has_hash_;
  std::unordered_map<uint64_t, int32_t> cached_;
  int32_t head_ = -1, tail_ = -1;  // head: least recently freed
  int64_t num_free_ = 0;
};

}  // namespace tokperf::sim
