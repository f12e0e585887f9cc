// The exit-status contract of dit-launch and dit-worker, in one place: 0 done, 1 internal failure,
// 2 bad command-line argument (refused before any work), 3 bad input (a model folder, tensor file or
// job file that cannot be used), 130 cancelled. Errors are one line on stderr, prefixed.
#pragma once
#include <functional>
#include <string>

namespace studio::workers {

enum Exit { kOk = 0, kInternal = 1, kBadArgument = 2, kBadInput = 3, kCancelled = 130 };

// Runs `body`, mapping what it throws to the contract above.
int guarded_main(const std::string& prefix, const std::function<int()>& body);

}  // namespace studio::workers
