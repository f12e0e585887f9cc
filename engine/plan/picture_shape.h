// The output size that keeps a picture's shape, for a family whose image-to-video pipeline stretches the picture
// to the output (CogVideoX, Wan): the studio's "Match the picture's shape". Torch-free.
#pragma once
#include <utility>

#include "plan/model_folder.h"

namespace studio::plan {

// About `width` x `height` pixels in area with the shape of a `picture_width` x `picture_height` picture, each side
// a multiple of the model's pixel step, as diffusers' Wan image-to-video examples size the video (max_area =
// height x width, each side rounded down to the step). {0, 0} for a model that refuses that size (one that takes
// a single size).
std::pair<int, int> size_of_picture_shape(const ModelFolder& model, int width, int height, int picture_width,
                                          int picture_height);

}  // namespace studio::plan
