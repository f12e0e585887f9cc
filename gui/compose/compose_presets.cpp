#include "gui/compose/compose_presets.h"

#include <QCoreApplication>

#include <cmath>
#include <numeric>
#include <tuple>

#include "plan/family.h"

namespace studio::gui {

namespace {

QString tr(const char* s, int n = -1) { return QCoreApplication::translate("ComposePresets", s, nullptr, n); }

// Width and height of `aspect` (width / height) with about `pixels` pixels, in steps of `step`.
std::pair<int, int> sized(double aspect, double pixels, int step) {
  const auto round_to = [step](double v) { return std::max(step, int(std::lround(v / step)) * step); };
  return {round_to(std::sqrt(pixels * aspect)), round_to(std::sqrt(pixels / aspect))};
}

bool size_accepted(const plan::JobSpec& job, const plan::ModelFolder& model) {
  for (const auto& p : plan::validate(job, model))
    if (p.field == "width" || p.field == "height" || p.field == "num_frames") return false;
  return true;
}

}  // namespace

QString shape_name(int width, int height) {
  if (width <= 0 || height <= 0) return {};
  const double a = double(width) / height;
  if (std::abs(a - 1) < 0.03) return tr("Square 1:1");
  const QString kind = a > 1 ? tr("Landscape") : tr("Portrait");
  const double wide = a > 1 ? a : 1 / a;
  // The common ratios, when the size is within 3% of one; else the size's own.
  for (auto [w, h] : {std::pair{16, 9}, {3, 2}, {4, 3}, {5, 4}, {21, 9}, {2, 1}})
    if (std::abs(wide - double(w) / h) / wide < 0.03)
      return a > 1 ? QString("%1 %2:%3").arg(kind).arg(w).arg(h) : QString("%1 %2:%3").arg(kind).arg(h).arg(w);
  const int g = std::gcd(width, height);
  return QString("%1 %2:%3").arg(kind).arg(width / g).arg(height / g);
}

std::vector<ComposePreset> compose_presets(const plan::JobSpec& current, const plan::ModelFolder& model) {
  const auto& rules = plan::rules_of(model);
  const bool video = rules.makes_video();
  plan::JobSpec full = current;
  full.width = full.height = full.num_frames = full.fps = 0;
  full.num_inference_steps = plan::JobSpec{}.num_inference_steps;
  plan::apply_model_defaults(full, model);
  // Short enough to read whole in the box: the frames are in the seconds, the rest in the fields.
  auto name = [&](const plan::JobSpec& j, const QString& what) {
    QString shape = shape_name(j.width, j.height);
    if (video) shape += tr(", %1 s").arg(double(j.num_frames) / std::max(1, j.fps), 0, 'g', 2);
    return tr("%1: %2 x %3, %4%5")
        .arg(shape)
        .arg(j.width)
        .arg(j.height)
        .arg(tr("%n steps", j.num_inference_steps), what.isEmpty() ? QString() : " (" + what + ")");
  };
  std::vector<ComposePreset> out{{name(full, tr("model's")), full}};
  for (const auto& size : rules.size_presets(model)) {
    plan::JobSpec j = full;
    j.width = size.width;
    j.height = size.height;
    out.push_back({name(j, QString::fromStdString(size.label)), j});
  }
  // Half the size (in the model's pixel steps), about half the frames (in its frame steps), 20 steps.
  const int pixel = rules.pixel_step(model), t = model.vae_scale_temporal();
  plan::JobSpec draft = full;
  draft.width = std::max(pixel, full.width / 2 / pixel * pixel);
  draft.height = std::max(pixel, full.height / 2 / pixel * pixel);
  draft.num_frames = (full.num_frames - 1) / t / 2 * t + 1;
  draft.num_inference_steps = 20;
  out.push_back({name(draft, tr("draft")), draft});
  // The other shapes at about the model's number of pixels.
  const double pixels = double(full.width) * full.height, aspect = double(full.width) / full.height;
  std::vector<double> shapes;
  if (std::abs(aspect - 1) < 0.03) shapes = {16.0 / 9, 9.0 / 16};
  else shapes = {1 / aspect, 1.0};
  for (double a : shapes) {
    plan::JobSpec j = full;
    std::tie(j.width, j.height) = sized(a, pixels, pixel);
    if (size_accepted(j, model)) out.push_back({name(j, QString()), j});
  }
  return out;
}

int matching_preset(const std::vector<ComposePreset>& presets, const plan::JobSpec& job, bool video) {
  for (size_t i = 0; i < presets.size(); ++i) {
    const auto& p = presets[i].job;
    if (p.width == job.width && p.height == job.height && p.num_inference_steps == job.num_inference_steps &&
        (!video || (p.num_frames == job.num_frames && p.fps == job.fps)))
      return int(i);
  }
  return -1;
}

}  // namespace studio::gui
