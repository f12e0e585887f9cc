#include "gui/compose_panel.h"

#include <QFileDialog>

#include <cmath>
#include <QFormLayout>
#include <QMenu>
#include <QToolButton>
#include <QHBoxLayout>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSettings>

#include "plan/error.h"
#include "plan/family.h"
#include "workers/launch/paths.h"

namespace studio::gui {

namespace {

QSpinBox* spin(int lo, int hi, int step = 1) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setSingleStep(step);
  return s;
}

}  // namespace

ComposePanel::ComposePanel(QWidget* parent) : QWidget(parent) {
  auto* form = form_ = new QFormLayout(this);
  model_edit = new QLineEdit;
  model_edit->setObjectName("model");
  auto* browse = new QPushButton(tr("Browse…"));
  // The demo button opens the clip demo; its menu offers the image one too.
  auto* demo = new QToolButton;
  demo->setText(tr("Demo model"));
  demo->setPopupMode(QToolButton::MenuButtonPopup);
  demo->setMenu(new QMenu(demo));
  connect(demo->menu()->addAction(tr("Clips: CogVideoX-shaped demo")), &QAction::triggered, this,
          [this] { set_model_dir(QString::fromStdString(workers::demo_model_dir())); });
  connect(demo->menu()->addAction(tr("Images: FLUX.1-shaped demo")), &QAction::triggered, this,
          [this] { set_model_dir(QString::fromStdString(workers::demo_flux_dir())); });
  auto* recent = new QToolButton;
  recent->setText(tr("Recent"));
  recent->setPopupMode(QToolButton::InstantPopup);
  recent->setMenu(new QMenu(recent));
  connect(recent->menu(), &QMenu::aboutToShow, this, [this, recent] {
    recent->menu()->clear();
    for (const QString& dir : QSettings().value("recentModels").toStringList())
      connect(recent->menu()->addAction(dir), &QAction::triggered, this, [this, dir] { set_model_dir(dir); });
  });
  auto* row = new QHBoxLayout;
  row->addWidget(model_edit, 1);
  row->addWidget(browse);
  row->addWidget(recent);
  row->addWidget(demo);
  form->addRow(tr("Model folder"), row);
  form->addRow(problems_.make("model"));
  family = new QLabel;
  family->setObjectName("family");
  family->setWordWrap(true);
  form->addRow(tr("Model"), family);
  prompt = new QPlainTextEdit;
  prompt->setObjectName("prompt");
  prompt->setPlaceholderText(tr("What to generate, in words"));
  prompt->setMaximumHeight(90);
  form->addRow(tr("Prompt"), prompt);
  form->addRow(problems_.make("prompt"));
  prompt_2 = new QLineEdit;
  prompt_2->setObjectName("prompt_2");
  prompt_2->setPlaceholderText(tr("Optional: T5 reads this instead of the prompt (CLIP reads 77 tokens only)"));
  form->addRow(tr("Prompt for T5"), prompt_2);
  form->addRow(problems_.make("prompt_2"));
  negative_prompt = new QLineEdit;
  negative_prompt->setObjectName("negative_prompt");
  form->addRow(tr("Negative prompt"), negative_prompt);
  seed = spin(0, std::numeric_limits<int>::max());
  seed->setValue(42);
  seed_mode = new QComboBox;
  seed_mode->addItems({tr("fixed"), tr("random each run"), tr("+1 each run")});
  auto* seed_row = new QHBoxLayout;
  seed_row->addWidget(seed, 1);
  seed_row->addWidget(seed_mode);
  form->addRow(tr("Seed"), seed_row);
  width = spin(16, 4096, 16);
  height = spin(16, 4096, 16);
  frames = spin(1, 1024, 4);
  fps = spin(1, 120);
  steps = spin(1, 1000);
  guidance = new QDoubleSpinBox;
  guidance->setRange(0, 30);
  guidance->setSingleStep(0.5);
  guidance_2 = new QDoubleSpinBox;
  guidance_2->setObjectName("guidance_scale_2");
  guidance_2->setRange(0, 30);
  guidance_2->setSingleStep(0.5);
  guidance_2->setToolTip(tr("Wan2.2 denoises the first, noisiest steps with one expert and the rest with a second; "
                            "this is the second expert's guidance (detail and texture), the one above is the "
                            "first's (layout and motion)"));
  dynamic_cfg = new QCheckBox(tr("dynamic guidance (cosine schedule)"));
  for (auto [name, w] : {std::pair{"width", width}, std::pair{"height", height}, std::pair{"num_frames", frames},
                         std::pair{"fps", fps}, std::pair{"num_inference_steps", steps}})
    w->setObjectName(name);
  form->addRow(tr("Width"), width);
  form->addRow(problems_.make("width"));
  form->addRow(tr("Height"), height);
  form->addRow(problems_.make("height"));
  form->addRow(tr("Frames"), frames);
  form->addRow(problems_.make("num_frames"));
  form->addRow(tr("Frames per second"), fps);
  form->addRow(tr("Steps"), steps);
  form->addRow(problems_.make("num_inference_steps"));
  form->addRow(tr("Guidance"), guidance);
  form->addRow(problems_.make("guidance_scale"));
  form->addRow(tr("Guidance, second expert"), guidance_2);
  form->addRow(problems_.make("guidance_scale_2"));
  form->addRow(QString(), dynamic_cfg);
  // Step caching: off by default (it trades fidelity for speed); the threshold is how little a step's
  // first block may change for the step to reuse the other blocks' work.
  step_cache = new QComboBox;
  step_cache->setObjectName("step_cache");
  step_cache->addItems({tr("off"), tr("First-Block Cache"), tr("TeaCache")});
  step_cache->setToolTip(tr("Reuses the blocks' work on steps that change little: faster, and the result drifts "
                            "from the uncached one as the threshold rises. First-Block Cache decides after the "
                            "first block; TeaCache before any, from the model's timestep signal."));
  cache_threshold = new QDoubleSpinBox;
  cache_threshold->setObjectName("cache_threshold");
  cache_threshold->setRange(0, plan::kMaxCacheThreshold);
  cache_threshold->setDecimals(3);
  cache_threshold->setSingleStep(0.01);
  cache_threshold->setValue(plan::kFirstBlockCacheThreshold);
  cache_threshold->setEnabled(false);
  cache_threshold->setToolTip(tr("How little a step may change to be reused: 0 reuses nothing; higher is faster "
                                 "and less faithful. Each method starts from its default for the model."));
  form->addRow(tr("Step cache"), step_cache);
  form->addRow(problems_.make("use_fbcache"));
  form->addRow(problems_.make("use_teacache"));
  form->addRow(tr("Reuse threshold"), cache_threshold);
  form->addRow(problems_.make("cache_threshold"));
  preset = new QComboBox;
  preset->setObjectName("preset");
  form->addRow(tr("Preset"), preset);

  connect(browse, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, tr("A diffusers model folder"), model_edit->text());
    if (!d.isEmpty()) set_model_dir(d);
  });
  connect(demo, &QToolButton::clicked, this,
          [this] { set_model_dir(QString::fromStdString(workers::demo_model_dir())); });
  connect(model_edit, &QLineEdit::editingFinished, this, [this] { load_model(); });
  connect(preset, qOverload<int>(&QComboBox::activated), this, [this](int i) {
    const auto all = presets();
    if (i >= 0 && i < int(all.size())) set_job(all[size_t(i)].job);
  });
  connect(prompt, &QPlainTextEdit::textChanged, this, &ComposePanel::changed);
  connect(prompt_2, &QLineEdit::textChanged, this, &ComposePanel::changed);
  connect(negative_prompt, &QLineEdit::textChanged, this, &ComposePanel::changed);
  for (QSpinBox* s : {seed, width, height, frames, fps, steps})
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &ComposePanel::changed);
  connect(guidance, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &ComposePanel::changed);
  connect(guidance_2, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &ComposePanel::changed);
  connect(dynamic_cfg, &QCheckBox::toggled, this, &ComposePanel::changed);
  // A method starts from its own default threshold for the model.
  connect(step_cache, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int method) {
    cache_threshold->setEnabled(method > 0);
    plan::JobSpec j;
    j.use_fbcache = method == 1;
    j.use_teacache = method == 2;
    if (model_ && method > 0) {
      const QSignalBlocker quiet(cache_threshold);
      cache_threshold->setValue(plan::cache_threshold(j, *model_));
    }
    Q_EMIT changed();
  });
  connect(cache_threshold, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &ComposePanel::changed);
  plan::JobSpec start;  // seed 42; sizes, steps and guidance come from the model when it first loads
  start.guidance_scale = 0;
  set_job(start);
  set_model_dir(QString::fromStdString(workers::demo_model_dir()));
}

void ComposePanel::set_model_dir(const QString& dir) {
  model_edit->setText(dir);
  load_model();
}

void ComposePanel::load_model() {
  model_.reset();
  model_error_.clear();
  try {
    model_ = plan::read_model_folder(model_edit->text().toStdString());
    QSettings settings;
    QStringList recent = settings.value("recentModels").toStringList();
    recent.removeAll(model_edit->text());
    recent.prepend(model_edit->text());
    settings.setValue("recentModels", recent.mid(0, 8));
  } catch (const std::exception& e) {
    model_error_ = QString::fromStdString(e.what());
  }
  problems_.show(model_error_.isEmpty() ? std::vector<plan::Problem>{}
                                        : std::vector<plan::Problem>{{"model", model_error_.toStdString()}});
  apply_model_limits();
  show_family_fields();
  const QSignalBlocker block(preset);
  preset->clear();
  const auto all = presets();
  const bool video = model_ && plan::rules_of(*model_).makes_video();
  for (const auto& [kind, p] : all) {
    const QString size = tr("%1 x %2").arg(p.width).arg(p.height);
    const QString steps_text = tr("%n steps", nullptr, p.num_inference_steps);
    preset->addItem(video ? tr("%1: %2, %3 frames, %4").arg(kind, size).arg(p.num_frames).arg(steps_text)
                          : tr("%1: %2, %3").arg(kind, size, steps_text));
  }
  family->setText(model_ ? tr("%1; sampler %2 (from scheduler/)")
                               .arg(QString::fromStdString(plan::family_name(model_->family)))
                               .arg(QString::fromStdString(plan::rules_of(*model_).sampler_name(*model_)))
                         : tr("—"));
  Q_EMIT changed();
}

void ComposePanel::apply_model_limits() {
  if (!model_) return;
  // Sizes in the steps the model accepts; the model's own defaults on first load.
  const int pixel = plan::rules_of(*model_).pixel_step(*model_);
  width->setSingleStep(pixel);
  height->setSingleStep(pixel);
  frames->setSingleStep(model_->vae_scale_temporal());
  // The model's own sizes, steps and guidance on the first load and whenever the family changes (FLUX.1's
  // 28 steps and guidance 3.5 mean nothing to CogVideoX); the same family keeps what the user set.
  if (defaults_of_ == model_->family) return;
  defaults_of_ = model_->family;
  plan::JobSpec j = job();
  j.width = j.height = j.num_frames = j.fps = j.num_inference_steps = 0;
  j.guidance_scale = j.guidance_scale_2 = plan::JobSpec{}.guidance_scale;  // unset: the model's
  plan::apply_model_defaults(j, *model_);
  set_job(j);
}

void ComposePanel::show_family_fields() {
  if (!model_) return;
  const auto& rules = plan::rules_of(*model_);
  // (A problem's own row shows only while it has something to say.)
  for (QWidget* w : std::initializer_list<QWidget*>{frames, fps}) form_->setRowVisible(w, rules.makes_video());
  form_->setRowVisible(negative_prompt, rules.classifier_free());
  form_->setRowVisible(dynamic_cfg, rules.dynamic_cfg());
  form_->setRowVisible(prompt_2, rules.takes_prompt_2());
  form_->setRowVisible(guidance_2, model_->family == plan::Family::Wan22);
}

std::vector<ComposePanel::Preset> ComposePanel::presets() const {
  if (!model_) return {};
  plan::JobSpec full = job();
  full.width = full.height = full.num_frames = full.fps = 0;
  full.num_inference_steps = plan::JobSpec{}.num_inference_steps;
  plan::apply_model_defaults(full, *model_);
  std::vector<Preset> out{{model_->wan ? tr("Model's defaults, 480p") : tr("Model's defaults"), full}};
  if (model_->wan) {  // Wan is trained at 480p (the default) and 720p (14B and A14B)
    plan::JobSpec hd = full;
    hd.width = 1280;
    hd.height = 720;
    out.push_back({tr("720p"), hd});
  }
  // Half the size (in the model's pixel steps), about half the frames (in its frame steps), 20 steps.
  plan::JobSpec draft = full;
  const int pixel = plan::rules_of(*model_).pixel_step(*model_);
  const int t = model_->vae_scale_temporal();
  draft.width = std::max(pixel, full.width / 2 / pixel * pixel);
  draft.height = std::max(pixel, full.height / 2 / pixel * pixel);
  draft.num_frames = (full.num_frames - 1) / t / 2 * t + 1;
  draft.num_inference_steps = 20;
  out.push_back({tr("Draft"), draft});
  return out;
}

plan::JobSpec ComposePanel::job() const {
  plan::JobSpec j;
  j.model_dir = model_edit->text().toStdString();
  j.prompt = prompt->toPlainText().toStdString();
  j.prompt_2 = prompt_2->text().toStdString();
  j.negative_prompt = negative_prompt->text().toStdString();
  j.seed = uint64_t(seed->value());
  j.width = width->value();
  j.height = height->value();
  j.num_frames = frames->value();
  j.fps = fps->value();
  j.num_inference_steps = steps->value();
  j.guidance_scale = guidance->value();
  j.guidance_scale_2 = guidance_2->value();
  j.use_dynamic_cfg = dynamic_cfg->isChecked();
  j.use_fbcache = step_cache->currentIndex() == 1;
  j.use_teacache = step_cache->currentIndex() == 2;
  if (step_cache->currentIndex() > 0) j.cache_threshold = cache_threshold->value();
  // What a hidden field holds (left from another family) is not part of the job.
  if (model_) {
    const auto& rules = plan::rules_of(*model_);
    if (!rules.makes_video()) j.num_frames = 1;
    if (!rules.classifier_free()) j.negative_prompt.clear();
    if (!rules.dynamic_cfg()) j.use_dynamic_cfg = false;
    if (!rules.takes_prompt_2()) j.prompt_2.clear();
    if (model_->family != plan::Family::Wan22) j.guidance_scale_2 = plan::JobSpec{}.guidance_scale_2;
  }
  return j;
}

void ComposePanel::set_job(const plan::JobSpec& j) {
  const QSignalBlocker blockers[] = {QSignalBlocker(prompt), QSignalBlocker(prompt_2), QSignalBlocker(negative_prompt),
                                     QSignalBlocker(seed),
                                     QSignalBlocker(width),  QSignalBlocker(height),          QSignalBlocker(frames),
                                     QSignalBlocker(fps),    QSignalBlocker(steps),           QSignalBlocker(guidance),
                                     QSignalBlocker(guidance_2),
                                     QSignalBlocker(dynamic_cfg), QSignalBlocker(step_cache),
                                     QSignalBlocker(cache_threshold)};
  if (!j.model_dir.empty() && QString::fromStdString(j.model_dir) != model_edit->text()) {
    model_edit->setText(QString::fromStdString(j.model_dir));
    load_model();
  }
  if (QString::fromStdString(j.prompt) != prompt->toPlainText()) prompt->setPlainText(QString::fromStdString(j.prompt));
  prompt_2->setText(QString::fromStdString(j.prompt_2));
  negative_prompt->setText(QString::fromStdString(j.negative_prompt));
  seed->setValue(int(j.seed));
  width->setValue(j.width);
  height->setValue(j.height);
  frames->setValue(j.num_frames);
  fps->setValue(j.fps);
  steps->setValue(j.num_inference_steps);
  guidance->setValue(j.guidance_scale);
  if (!std::isnan(j.guidance_scale_2)) guidance_2->setValue(j.guidance_scale_2);
  dynamic_cfg->setChecked(j.use_dynamic_cfg);
  step_cache->setCurrentIndex(j.use_teacache ? 2 : j.use_fbcache ? 1 : 0);
  cache_threshold->setEnabled(j.use_fbcache || j.use_teacache);
  if (model_) cache_threshold->setValue(plan::cache_threshold(j, *model_));
  else if (!std::isnan(j.cache_threshold)) cache_threshold->setValue(j.cache_threshold);
  Q_EMIT changed();
}

uint64_t ComposePanel::next_seed() {
  if (seed_mode->currentIndex() == 1) seed->setValue(int(QRandomGenerator::global()->bounded(1 << 30)));
  else if (seed_mode->currentIndex() == 2 && !first_seed_use_) seed->setValue(seed->value() + 1);
  first_seed_use_ = false;
  return uint64_t(seed->value());
}

}  // namespace studio::gui
