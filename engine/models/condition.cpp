#include "models/condition.h"

#include <ATen/ops/cat.h>

#include <string>

#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"

namespace studio::models {

at::Tensor join_condition(const StepInputs& in, int64_t channels, int64_t dim) {
  if (channels != (in.condition.defined() ? in.condition.size(dim) : 0))
    throw InputError(channels ? "this image-to-video model needs a picture (--image): its input has " +
                                    std::to_string(channels) + " condition channels after the latents'"
                              : "this model takes no picture (transformer/config.json: in_channels = out_channels)");
  return channels ? at::cat({in.latents, in.condition}, dim) : in.latents;
}

at::Tensor replace_first_frame(const at::Tensor& latents, const at::Tensor& condition) {
  auto shape = latents.sizes().vec();
  if (shape.size() == 5) shape[2] = 1;
  if (condition.sizes().vec() != shape)
    throw InputError("the picture's latent frame has shape " + io::shape_str(condition.sizes().vec()) +
                     "; these latents " + io::shape_str(latents.sizes().vec()) + " need " + io::shape_str(shape));
  auto out = latents.clone();
  out.narrow(2, 0, 1).copy_(condition);
  return out;
}

}  // namespace studio::models
