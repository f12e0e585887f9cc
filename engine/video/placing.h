// A finished output and its sidecar JSON moved into place as one: the sidecar first (an output in place always has
// its settings beside it), and a sidecar already there set aside until the output is in place and put back when it
// cannot be, so that a failure leaves what was there as it was. Torch-free.
#pragma once
#include <string>

namespace studio::video {

// Renames `tmp` to `path` and `sidecar_tmp` to `sidecar`; InputError naming --output `path` when it cannot, the
// partial files then the caller's to remove. `what` names the output in the message ("clip", "image").
void place_with_sidecar(const std::string& tmp, const std::string& path, const std::string& sidecar_tmp,
                        const std::string& sidecar, const char* what);

}  // namespace studio::video
