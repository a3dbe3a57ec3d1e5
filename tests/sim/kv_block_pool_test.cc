#include "sim/kv_block_pool.h"

#include <gtest/gtest.h>

#include <set>

namespace tokperf::sim {
namespace {

// used + free == capacity, and a block's reference count is zero iff it is free (num_free counts
// exactly the blocks with no user).
void expect_invariants(const KvBlockPool& p) {
  EXPECT_EQ(p.num_used() + p.num_free(), p.capacity());
  int64_t zero = 0;
  for (int32_t b = 0; b < p.capacity(); ++b) zero += p.ref_count(b) == 0;
  EXPECT_EQ(zero, p.num_free());
}

TEST(KvBlockPool, StartsAllFreeAndAllocatesDistinctBlocks) {
  KvBlockPool p(4);
  EXPECT_EQ(p.capacity(), 4);
  EXPECT_EQ(p.num_free(), 4);
  std::set<int32_t> got;
  for (int i = 0; i < 4; ++i) got.insert(p.allocate());
  EXPECT_EQ(got.size(), 4u);
  EXPECT_EQ(p.num_free(), 0);
  EXPECT_EQ(p.num_used(), 4);
  for (int32_t b : got) EXPECT_EQ(p.ref_count(b), 1);
  expect_invariants(p);
}

TEST(KvBlockPool, NegativeOrZeroSizeIsAnEmptyPool) {
  EXPECT_EQ(KvBlockPool(0).capacity(), 0);
  EXPECT_EQ(KvBlockPool(-3).capacity(), 0);
  EXPECT_EQ(KvBlockPool(-3).num_free(), 0);
}

TEST(KvBlockPool, ReleasedBlocksAreReusedLeastRecentlyFreedFirst) {
  KvBlockPool p(3);
  int32_t a = p.allocate(), b = p.allocate(), c = p.allocate();
  p.release(b);
  p.release(a);
  p.release(c);
  EXPECT_EQ(p.allocate(), b);
  EXPECT_EQ(p.allocate(), a);
  EXPECT_EQ(p.allocate(), c);
  expect_invariants(p);
}

TEST(KvBlockPool, AFreedHashedBlockStaysFindableUntilEvicted) {
  KvBlockPool p(2);
  int32_t a = p.allocate();
  p.register_hash(a, 0xabc);
  EXPECT_TRUE(p.contains(0xabc));
  p.release(a);
  EXPECT_EQ(p.num_free(), 2);
  EXPECT_TRUE(p.contains(0xabc)) << "a freed block keeps its prefix until reused";

  // A cache hit on a free block takes it off the free list.
  EXPECT_EQ(p.acquire_cached(0xabc), a);
  EXPECT_EQ(p.ref_count(a), 1);
  EXPECT_EQ(p.num_free(), 1);
  expect_invariants(p);

  // Shared: a second user of the same prefix.
  EXPECT_EQ(p.acquire_cached(0xabc), a);
  EXPECT_EQ(p.ref_count(a), 2);
  EXPECT_EQ(p.num_free(), 1);
  p.release(a);
  EXPECT_EQ(p.num_free(), 1);
  p.release(a);
  EXPECT_EQ(p.num_free(), 2);
  expect_invariants(p);

  // Fresh allocations evict: the other (never hashed) block first, then the cached one.
  int32_t other = p.allocate();
  EXPECT_NE(other, a);
  EXPECT_TRUE(p.contains(0xabc));
  EXPECT_EQ(p.allocate(), a);
  EXPECT_FALSE(p.contains(0xabc)) << "reusing the block drops its hash";
  EXPECT_EQ(p.acquire_cached(0xabc), -1);
  expect_invariants(p);
}

TEST(KvBlockPool, MissReturnsMinusOneAndChangesNothing) {
  KvBlockPool p(2);
  EXPECT_EQ(p.acquire_cached(7), -1);
  EXPECT_EQ(p.num_free(), 2);
  expect_invariants(p);
}

TEST(KvBlockPool, AHashMapsToAtMostOneBlock) {
  KvBlockPool p(3);
  int32_t a = p.allocate(), b = p.allocate();
  p.register_hash(a, 1);
  p.register_hash(b, 1);  // ignored: a already holds 1
  p.register_hash(a, 2);  // ignored: a already has a hash
  EXPECT_FALSE(p.contains(2));
  p.release(a);
  p.release(b);
  EXPECT_EQ(p.acquire_cached(1), a);
  p.release(a);
  expect_invariants(p);
}

TEST(KvBlockPool, InvariantsHoldThroughAMixedSequence) {
  KvBlockPool p(8);
  std::vector<int32_t> held;
  for (int round = 0; round < 200; ++round) {
    const uint64_t h = static_cast<uint64_t>(round % 5);
    if (round % 3 != 2 && p.num_free() > 0) {
      int32_t b = p.acquire_cached(h);
      if (b < 0) {
        b = p.allocate();
        p.register_hash(b, h);
      }
      held.push_back(b);
    } else if (!held.empty()) {
      p.release(held.front());
      held.erase(held.begin());
    }
    expect_invariants(p);
    ASSERT_EQ(p.num_used(),
              static_cast<int64_t>(std::set<int32_t>(held.begin(), held.end()).size()));
  }
}

}  // namespace
}  // namespace tokperf::sim
