#include "workers/launch/guarded_main.h"

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <new>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "workers/launch/launch_args.h"

namespace studio::workers {

namespace {

bool contains_any(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (s.find(w) != std::string::npos) return true;
  return false;
}

// A failure inside LibTorch or c10d, told apart by its message: the allocators and Gloo/NCCL have no
// exception types of their own that both LibTorch 1.13 and 2.x expose. (dit-worker hands c10::Error
// over as std::runtime_error without its backtrace, so this file needs no LibTorch.)
Failure classify_library_error(const std::string& what) {
  if (is_out_of_memory(what))
    return {events::ErrorKind::OutOfMemory, "out of memory: " + what, kOutOfMemory};
  if (contains_any(what, {"Connection closed by peer", "Connection reset by peer", "Broken pipe", "Timed out",
                          "timed out", "Timeout", "NCCL communicator was aborted", "Connection refused"}))
    return {events::ErrorKind::LostPeer, "lost a peer rank: " + what, kLostPeer};
  return {events::ErrorKind::Internal, "internal error: " + what, kInternal};
}

// Under torchrun, a failing process leaves its message where the agent looks (TORCHELASTIC_ERROR_FILE, in the
// {"message": ..., "timestamp": ...} layout its error handler reads), so that torchrun's summary shows it.
void tell_torchrun(const std::string& message) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (!path || !*path) return;
  const nlohmann::json record = {{"message", message}, {"timestamp", std::to_string(std::time(nullptr))}};
  std::ofstream(path, std::ios::trunc) << record.dump() << "\n";
}

}  // namespace

events::ErrorKind kind_of_exit(int code) {
  switch (code) {
    case kBadArgument:
    case kBadInput: return events::ErrorKind::BadInput;
    case kOutOfMemory: return events::ErrorKind::OutOfMemory;
    case kLostPeer: return events::ErrorKind::LostPeer;
    case kCancelled: return events::ErrorKind::Cancelled;
    default: return events::ErrorKind::Internal;
  }
}

int exit_code_of(events::ErrorKind kind) {
  switch (kind) {
    case events::ErrorKind::BadInput: return kBadInput;
    case events::ErrorKind::OutOfMemory: return kOutOfMemory;
    case events::ErrorKind::LostPeer: return kLostPeer;
    case events::ErrorKind::Cancelled: return kCancelled;
    default: return kInternal;
  }
}

Failure failure_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ArgError& e) {
    return {events::ErrorKind::BadInput, e.what(), kBadArgument};
  } catch (const Cancelled& e) {
    return {events::ErrorKind::Cancelled, "cancelled; " + (e.kept.empty() ? "nothing was written" : e.kept), kCancelled};
  } catch (const InputError& e) {
    return {events::ErrorKind::BadInput, e.what(), kBadInput};
  } catch (const std::bad_alloc&) {
    return {events::ErrorKind::OutOfMemory, "out of memory (an allocation failed)", kOutOfMemory};
  } catch (const std::exception& e) {
    return classify_library_error(e.what());
  }
}

int guarded_main(const std::string& prefix, const std::function<int()>& body) {
  try {
    return body();
  } catch (...) {
    const Failure f = failure_of(std::current_exception());
    std::cerr << prefix << f.message << std::endl;
    tell_torchrun(prefix + f.message);
    return f.exit_code;
  }
}

}  // namespace studio::workers
