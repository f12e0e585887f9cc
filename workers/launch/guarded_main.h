// The exit-status contract of dit-launch and dit-worker, in one place: 0 done, 1 internal failure,
// 2 bad command-line argument (refused before any work), 3 bad input (a model folder, tensor file or
// job file that cannot be used), 4 out of memory, 5 a peer rank was lost, 130 cancelled. Errors are one
// line on stderr, prefixed.
#pragma once
#include <exception>
#include <functional>
#include <string>

#include "workers/events/messages.h"

namespace studio::workers {

enum Exit { kOk = 0, kInternal = 1, kBadArgument = 2, kBadInput = 3, kOutOfMemory = 4, kLostPeer = 5, kCancelled = 130 };

struct Failure {
  events::ErrorKind kind = events::ErrorKind::Internal;
  std::string message;
  int exit_code = kInternal;
};

// The error kind an exit status stands for (2 and 3 are both bad input), and the status that reports a
// kind; the supervisor reads its ranks' statuses with these.
events::ErrorKind kind_of_exit(int code);
int exit_code_of(events::ErrorKind kind);

// What an exception means for the user and the exit status.
Failure failure_of(std::exception_ptr error);

// Runs `body`, mapping what it throws to the contract above.
int guarded_main(const std::string& prefix, const std::function<int()>& body);

}  // namespace studio::workers
