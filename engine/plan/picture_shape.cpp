#include "plan/picture_shape.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "plan/family.h"
#include "plan/job.h"

namespace studio::plan {

std::pair<int, int> size_of_picture_shape(const ModelFolder& model, int width, int height, int picture_width,
                                          int picture_height) {
  const Family& rules = rules_of(model);
  const int step = rules.pixel_step(model);
  const double area = double(width) * height, aspect = double(picture_height) / picture_width;
  const auto side = [step](double exact) { return std::max(step, int(std::lround(exact)) / step * step); };
  // A model that takes one size only (CogVideoX-5B-I2V's learned positions) refuses it: none is offered.
  JobSpec job;
  job.width = side(std::sqrt(area / aspect)), job.height = side(std::sqrt(area * aspect));
  rules.apply_defaults(job, model);
  std::vector<Problem> problems;
  rules.validate(job, model, problems);
  for (const auto& p : problems)
    if (p.field == "width" || p.field == "height") return {0, 0};
  return {job.width, job.height};
}

}  // namespace studio::plan
