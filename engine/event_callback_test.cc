#include "engine/event_callback.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"

namespace clustersim {
namespace event_callback_test {

TEST(EventCallback, ASmallLambdaIsStoredInlineAndRunsAfterMoves) {
  int ran = 0;
  EventCallback a = [&ran, add = 3] { ran += add; };
  EventCallback b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): a moved-from callback is empty
  EXPECT_TRUE(b);
  EventCallback c;
  c = std::move(b);
  c();
  c();
  EXPECT_EQ(ran, 6);
}

// A callable that owns something (here a shared_ptr) is moved, not copied, and destroyed once: the
// owner's count returns to one when the last callback holding it goes.
TEST(EventCallback, AnOwningCallableIsDestroyedExactlyOnce) {
  auto owned = std::make_shared<int>(7);
  int seen = 0;
  {
    EventCallback a = [owned, &seen] { seen = *owned; };
    EXPECT_EQ(owned.use_count(), 2);
    EventCallback b = std::move(a);
    EventCallback c;
    c = std::move(b);
    EXPECT_EQ(owned.use_count(), 2);
    c();
    EXPECT_EQ(seen, 7);
    c.reset();
    EXPECT_EQ(owned.use_count(), 1);
    EXPECT_FALSE(c);
  }
  EXPECT_EQ(owned.use_count(), 1);
}

// Beyond kInlineBytes a callable lives on the heap; moves pass the pointer and it is freed once.
TEST(EventCallback, ALargeCallableLivesOnTheHeapAndIsFreedOnce) {
  auto owned = std::make_shared<std::string>("payload");
  std::array<char, 64> big{};
  big[0] = 'x';
  std::string seen;
  static_assert(sizeof(big) > EventCallback::kInlineBytes);
  {
    EventCallback a = [owned, big, &seen] { seen = *owned + big[0]; };
    EventCallback b = std::move(a);
    EXPECT_EQ(owned.use_count(), 2);
    b();
    EXPECT_EQ(seen, "payloadx");
  }
  EXPECT_EQ(owned.use_count(), 1);
}

TEST(EventCallback, AStdFunctionIsHeldWholeAndAnEmptyOneGivesAnEmptyCallback) {
  int ran = 0;
  std::function<void()> f = [&ran] { ++ran; };
  EventCallback a = f;  // a copy of the function
  EventCallback b = std::move(f);
  a();
  b();
  EXPECT_EQ(ran, 2);
  std::function<void()> empty;
  EventCallback c = empty;
  EXPECT_FALSE(c);
  EXPECT_THROW(c(), InternalError);
  EventCallback d = nullptr;
  EXPECT_FALSE(d);
  EXPECT_THROW(d(), InternalError);
}

TEST(EventCallback, EmplaceDestroysTheOldCallableAndTakesTheNew) {
  auto first = std::make_shared<int>(1);
  int seen = 0;
  EventCallback c = [first, &seen] { seen = *first; };
  EXPECT_EQ(first.use_count(), 2);
  c.emplace([&seen] { seen = 2; });
  EXPECT_EQ(first.use_count(), 1);
  c();
  EXPECT_EQ(seen, 2);
  EventCallback other = [&seen] { seen = 3; };
  c.emplace(std::move(other));
  EXPECT_FALSE(other);  // NOLINT(bugprone-use-after-move)
  c();
  EXPECT_EQ(seen, 3);
}

}  // namespace event_callback_test
}  // namespace clustersim
