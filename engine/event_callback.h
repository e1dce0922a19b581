#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace clustersim {

// The callback of a scheduled event: a move-only callable taking and returning nothing, as
// std::function<void()> but cheaper to move, which an event queue does several times per event.
//
// A callable of up to kInlineBytes bytes (alignment up to 8) that moves without throwing is stored
// inline: the model's lambdas (a `this` and a few indices) and a std::function<void()> itself (32
// bytes with libstdc++), where std::function keeps only 16 bytes inline and allocates beyond them.
// A callable that is also trivially copyable and destructible moves by copying bytes and needs no
// destruction, so moving and destroying it make no indirect call. Larger callables live on the heap
// (one allocation when stored, none when moved). An empty std::function gives an empty callback.
// Invoking an empty callback throws InternalError.
class EventCallback {
 public:
  static constexpr size_t kInlineBytes = 32;

  EventCallback() noexcept = default;
  EventCallback(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): as std::function
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, EventCallback> && std::is_invocable_v<std::decay_t<F>&>)
  EventCallback(F&& f) {  // NOLINT(google-explicit-constructor): a lambda converts, as to std::function
    store(std::forward<F>(f));
  }

  EventCallback(EventCallback&& other) noexcept { take(other); }
  EventCallback& operator=(EventCallback&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  EventCallback(const EventCallback&) = delete;
  EventCallback& operator=(const EventCallback&) = delete;
  ~EventCallback() { reset(); }

  explicit operator bool() const noexcept { return invoke_ != nullptr; }

  // Calls the callable. Throws InternalError when empty.
  void operator()() {
    if (invoke_ == nullptr) throw InternalError("an event callback without a callable was invoked");
    invoke_(storage_);
  }

  // Replaces the callable with `f` (a callable, or an EventCallback to move from), constructed in
  // place: what an event queue does to put a callback in a slot without moving it there.
  template <class F>
    requires(std::is_same_v<std::remove_cvref_t<F>, EventCallback> || std::is_invocable_v<std::decay_t<F>&>)
  void emplace(F&& f) {
    reset();
    if constexpr (std::is_same_v<std::remove_cvref_t<F>, EventCallback>) {
      static_assert(!std::is_lvalue_reference_v<F>, "an EventCallback is moved, not copied");
      if (&f != this) take(f);
    } else {
      store(std::forward<F>(f));
    }
  }

  // Destroys the callable, leaving the callback empty.
  void reset() noexcept {
    if (manage_ != nullptr) manage_(Operation::kDestroy, storage_, nullptr);
    invoke_ = nullptr;
    manage_ = nullptr;
  }

 private:
  // Stores `f` in this empty callback.
  template <class F>
  void store(F&& f) {
    using T = std::decay_t<F>;
    if constexpr (std::is_same_v<T, std::function<void()>>) {
      if (!f) return;
    }
    if constexpr (kStoredInline<T>) {
      ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
      invoke_ = [](void* p) { (*static_cast<T*>(p))(); };
      if constexpr (!(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>)) {
        manage_ = [](Operation op, void* from, void* to) {
          T* source = static_cast<T*>(from);
          if (op == Operation::kMove) ::new (to) T(std::move(*source));
          source->~T();
        };
      }
    } else {
      T* held = new T(std::forward<F>(f));
      std::memcpy(storage_, &held, sizeof held);
      invoke_ = [](void* p) {
        T* callable = nullptr;
        std::memcpy(&callable, p, sizeof callable);
        (*callable)();
      };
      manage_ = [](Operation op, void* from, void* to) {
        if (op == Operation::kMove) {
          std::memcpy(to, from, sizeof(T*));
          return;
        }
        T* callable = nullptr;
        std::memcpy(&callable, from, sizeof callable);
        delete callable;
      };
    }
  }

  enum class Operation { kMove, kDestroy };  // kMove: move-construct at `to`, then destroy `from`
  template <class T>
  static constexpr bool kStoredInline =
      sizeof(T) <= kInlineBytes && alignof(T) <= 8 && std::is_nothrow_move_constructible_v<T>;

  void take(EventCallback& other) noexcept {
    if (other.manage_ != nullptr) {
      other.manage_(Operation::kMove, other.storage_, storage_);
    } else {
      std::memcpy(storage_, other.storage_, kInlineBytes);
    }
    invoke_ = other.invoke_;
    manage_ = other.manage_;
    other.invoke_ = nullptr;
    other.manage_ = nullptr;
  }

  alignas(8) std::byte storage_[kInlineBytes];
  void (*invoke_)(void*) = nullptr;
  void (*manage_)(Operation, void*, void*) = nullptr;
};

}  // namespace clustersim
