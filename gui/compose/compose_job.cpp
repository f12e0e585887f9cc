// The compose column read as a job, and a job shown in it: the one mapping between the form and plan::JobSpec.
#include <QSignalBlocker>

#include <cmath>
#include <utility>

#include "gui/compose/compose_panel.h"
#include "plan/family.h"

namespace studio::gui {

plan::JobSpec ComposePanel::job() const {
  plan::JobSpec j;
  j.model_dir = model_edit->text().toStdString();
  j.prompt = prompt->toPlainText().toStdString();
  j.prompt_2 = prompt_2->text().toStdString();
  j.negative_prompt = negative_prompt->text().toStdString();
  j.image_file = image->path().toStdString();
  j.last_image_file = last_image->path().toStdString();
  j.lora = loras->value();
  j.lora_2 = loras_2->value();
  j.seed = uint64_t(seed->value());
  j.width = width->value();
  j.height = height->value();
  j.num_frames = frames->value();
  j.fps = fps->value();
  j.num_inference_steps = steps->value();
  j.guidance_scale = guidance->value();
  j.guidance_scale_2 = guidance_2->value();
  j.use_dynamic_cfg = dynamic_cfg->isChecked();
  cache_field->apply(j, calibrating_);
  j.vae_tiling = vae_tiling->isChecked();
  memory->apply(j);
  // What a hidden field holds (left from another family) is not part of the job.
  if (model_) {
    const auto& rules = plan::rules_of(*model_);
    if (!rules.makes_video()) j.num_frames = 1;
    if (!rules.classifier_free()) j.negative_prompt.clear();
    if (!rules.dynamic_cfg()) j.use_dynamic_cfg = false;
    if (!rules.takes_prompt_2()) j.prompt_2.clear();
    // A picture for a text-to-video model of a family with image-to-video ones stays: the plan names it.
    if (!rules.takes_image(*model_) && plan::image_to_video_repos(rules).empty()) j.image_file.clear();
    if (!rules.takes_last_image(*model_)) j.last_image_file.clear();
    if (!rules.takes_guidance_2(*model_)) j.guidance_scale_2 = plan::JobSpec{}.guidance_scale_2;
    if (rules.second_expert_boundary(*model_) <= 0) j.lora_2.clear();
  }
  return j;
}

void ComposePanel::set_job(const plan::JobSpec& j) {
  const QSignalBlocker blockers[] = {
      QSignalBlocker(prompt),   QSignalBlocker(prompt_2),    QSignalBlocker(negative_prompt), QSignalBlocker(seed),
      QSignalBlocker(width),    QSignalBlocker(height),      QSignalBlocker(frames),          QSignalBlocker(fps),
      QSignalBlocker(steps),    QSignalBlocker(guidance),    QSignalBlocker(guidance_2),      QSignalBlocker(dynamic_cfg),
      QSignalBlocker(cache_field), QSignalBlocker(vae_tiling), QSignalBlocker(memory)};
  if (!j.model_dir.empty() && QString::fromStdString(j.model_dir) != model_edit->text()) {
    model_edit->setText(QString::fromStdString(j.model_dir));
    load_model();
  }
  if (QString::fromStdString(j.prompt) != prompt->toPlainText()) prompt->setPlainText(QString::fromStdString(j.prompt));
  prompt_2->setText(QString::fromStdString(j.prompt_2));
  negative_prompt->setText(QString::fromStdString(j.negative_prompt));
  for (auto [field, path] : {std::pair{image, &j.image_file}, std::pair{last_image, &j.last_image_file}}) {
    const QSignalBlocker block(field);
    field->set_path(QString::fromStdString(*path));
  }
  for (auto [list, value] : {std::pair{loras, &j.lora}, std::pair{loras_2, &j.lora_2}}) list->set_value(*value);
  seed->setValue(int(j.seed));
  width->setValue(j.width);
  height->setValue(j.height);
  frames->setValue(j.num_frames);
  fps->setValue(j.fps);
  steps->setValue(j.num_inference_steps);
  guidance->setValue(j.guidance_scale);
  if (!std::isnan(j.guidance_scale_2)) guidance_2->setValue(j.guidance_scale_2);
  dynamic_cfg->setChecked(j.use_dynamic_cfg);
  cache_field->show_job(j);
  vae_tiling->setChecked(j.vae_tiling);
  memory->show_job(j);
  Q_EMIT changed();
}

}  // namespace studio::gui
