#include "plan/picture_shape.h"

#include <algorithm>
#include <cmath>

#include "plan/family.h"

namespace studio::plan {

std::pair<int, int> size_of_picture_shape(const ModelFolder& model, int width, int height, int picture_width,
                                          int picture_height) {
  const int step = rules_of(model).pixel_step(model);
  const double area = double(width) * height, aspect = double(picture_height) / picture_width;
  const auto side = [step](double exact) { return std::max(step, int(std::lround(exact)) / step * step); };
  return {side(std::sqrt(area / aspect)), side(std::sqrt(area * aspect))};
}

}  // namespace studio::plan
