#include "models/condition.h"

#include <ATen/ops/cat.h>

#include <string>

#include "plan/error.h"

namespace studio::models {

at::Tensor join_condition(const StepInputs& in, int64_t channels, int64_t dim) {
  if (channels != (in.condition.defined() ? in.condition.size(dim) : 0))
    throw InputError(channels ? "this image-to-video model needs a picture (--image): its input has " +
                                    std::to_string(channels) + " condition channels after the latents'"
                              : "this model takes no picture (transformer/config.json: in_channels = out_channels)");
  return channels ? at::cat({in.latents, in.condition}, dim) : in.latents;
}

}  // namespace studio::models
