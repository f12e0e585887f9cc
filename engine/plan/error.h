// Errors that the user can act on. Each message names the file, field or tensor, the value found,
// why it is wrong and what would work; callers print it as is.
#pragma once
#include <stdexcept>
#include <string>

namespace studio {

// Something the user gave us (a flag, a model folder, a tensor file) is wrong.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The user asked the run to stop. `kept`: what --keep_partial kept, in words ("" when nothing was written).
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
  explicit Cancelled(std::string what_was_kept) : std::runtime_error("cancelled"), kept(std::move(what_was_kept)) {}
  std::string kept;
};

// Whether an error's message says an allocation failed (LibTorch has no exception type for it that
// both 1.13 and 2.x expose).
bool is_out_of_memory(const std::string& what);

}  // namespace studio
