#include "gui/compose/compose_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QRandomGenerator>
#include <QScrollArea>
#include <QSettings>
#include <QToolButton>

#include <stdexcept>
#include <utility>

#include "io/safetensors/folder_weights.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/field_labels.h"
#include "plan/picture_shape.h"
#include "workers/launch/paths.h"

namespace studio::gui {

namespace {

QSpinBox* spin(const char* name, int lo, int hi, int step = 1) {
  auto* s = new QSpinBox;
  s->setObjectName(name);
  s->setRange(lo, hi);
  s->setSingleStep(step);
  return s;
}

QDoubleSpinBox* scale(const char* name) {
  auto* s = new QDoubleSpinBox;
  s->setObjectName(name);
  s->setRange(0, 30);
  s->setSingleStep(0.5);
  return s;
}

QString label(const char* field) { return QString::fromStdString(plan::field_label(field)); }

// A text field with its token count below it.
QWidget* with_count(QWidget* field, QLabel* count) {
  auto* box = new QWidget;
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(1);
  v->addWidget(field);
  v->addWidget(count);
  count->setWordWrap(true);
  count->setMinimumHeight(count->fontMetrics().lineSpacing());  // a count that comes and goes moves nothing below
  return box;
}

QFormLayout* form_of(QWidget* w) {
  auto* f = new QFormLayout(w);
  f->setContentsMargins(8, 2, 0, 2);
  return f;
}

}  // namespace

ComposePanel::ComposePanel(QWidget* parent) : QWidget(parent) {
  column_ = new QVBoxLayout(this);
  column_->setContentsMargins(0, 0, 0, 0);
  column_->addWidget(build_prompt_section());
  auto* settings = new QWidget;
  scrolled_ = new QVBoxLayout(settings);
  scrolled_->addWidget(build_model_section());
  build_groups();
  scrolled_->addStretch();
  auto* scroll = new QScrollArea;
  scroll->setObjectName("settings");
  scroll->setWidget(settings);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  column_->addWidget(scroll, 1);

  connect(prompt, &QPlainTextEdit::textChanged, this, &ComposePanel::changed);
  connect(prompt_2, &QLineEdit::textChanged, this, &ComposePanel::changed);
  connect(negative_prompt, &QLineEdit::textChanged, this, &ComposePanel::changed);
  for (QSpinBox* s : {seed, width, height, frames, fps, steps})
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &ComposePanel::changed);
  for (QDoubleSpinBox* s : {guidance, guidance_2})
    connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &ComposePanel::changed);
  for (QCheckBox* c : {dynamic_cfg, vae_tiling}) connect(c, &QCheckBox::toggled, this, &ComposePanel::changed);
  connect(cache_field, &StepCacheField::changed, this, &ComposePanel::changed);
  connect(cache_field, &StepCacheField::calibrate_requested, this, [this] {
    calibrating_ = true;
    Q_EMIT calibrate_requested();
    calibrating_ = false;
    Q_EMIT changed();
  });
  // A preset sets the size, length and steps; the rest stays as the user set it.
  connect(preset, qOverload<int>(&QComboBox::activated), this, [this](int i) {
    if (!model_) return;
    const auto all = compose_presets(job(), *model_);
    if (i < 0 || i >= int(all.size())) return;
    plan::JobSpec j = job();
    const auto& p = all[size_t(i)].job;
    j.width = p.width, j.height = p.height, j.num_frames = p.num_frames, j.fps = p.fps;
    j.num_inference_steps = p.num_inference_steps;
    set_job(j);
  });
  connect(this, &ComposePanel::changed, this, [this] {
    show_tokens();
    show_preset();
    image->set_shape_offer(picture_shape().first > 0);
    for (auto* p : {image, last_image}) p->set_output_size(width->value(), height->value());
  });
  // The rows that come and go with the model's family, each registered while it is in its form.
  for (const auto& [form, field] : std::initializer_list<std::pair<QFormLayout*, QWidget*>>{
           {size_form_, frames},
           {size_form_, fps},
           {prompt_form_, prompt_2->parentWidget()},
           {prompt_form_, negative_prompt->parentWidget()},
           {prompt_form_, image},
           {prompt_form_, last_image},
           {model_form_, loras_2},
           {sampling_form_, dynamic_cfg},
           {sampling_form_, guidance_2}})
    family_rows_.add(form, field);
  plan::JobSpec start;  // seed 42; sizes, steps and guidance come from the model when it first loads
  start.guidance_scale = 0;
  set_job(start);
  set_model_dir(QString::fromStdString(workers::demo_model_dir()));
}

QWidget* ComposePanel::build_prompt_section() {
  auto* section = new QWidget;
  auto* form = prompt_form_ = form_of(section);
  prompt = new QPlainTextEdit;
  prompt->setObjectName("prompt");
  prompt->setPlaceholderText(tr("What to generate, in words: the subject, the action, the place, the light, the "
                                "style"));
  prompt->setTabChangesFocus(true);
  prompt->setMaximumHeight(84);
  prompt_tokens = new QLabel;
  prompt_tokens->setObjectName("prompt_tokens");
  form->addRow(label("prompt"), with_count(prompt, prompt_tokens));
  prompt_2 = new QLineEdit;
  prompt_2->setObjectName("prompt_2");
  prompt_2->setPlaceholderText(tr("Optional: T5 reads this instead of the prompt"));
  prompt_2_tokens = new QLabel;
  form->addRow(label("prompt_2"), with_count(prompt_2, prompt_2_tokens));
  negative_prompt = new QLineEdit;
  negative_prompt->setObjectName("negative_prompt");
  negative_prompt->setPlaceholderText(tr("Optional: what it should not show"));
  negative_tokens = new QLabel;
  form->addRow(label("negative_prompt"), with_count(negative_prompt, negative_tokens));
  image = new PictureField("image");
  form->addRow(label("image"), image);
  last_image = new PictureField("last_image");
  form->addRow(label("last_image"), last_image);
  for (auto* p : {image, last_image}) {
    connect(p, &PictureField::changed, this, &ComposePanel::changed);
    connect(p, &PictureField::reread, this, &ComposePanel::changed);
  }
  connect(image, &PictureField::changed, this, &ComposePanel::size_from_picture);
  connect(image, &PictureField::match_shape_requested, this, [this] {
    const auto [w, h] = picture_shape();
    if (w == 0) return;
    width->setValue(w);
    height->setValue(h);
  });
  connect(image, &PictureField::offer_chosen, this, &ComposePanel::model_offered);
  // Its line is kept: the hint that comes and goes as a prompt is written must not move Generate below it.
  form->addRow(problems_.make({"prompt", "prompt_2", "negative_prompt", "prompt_embeds", "max_sequence_length", "image",
                               "last_image"},
                              true));
  return section;
}

QWidget* ComposePanel::build_model_section() {
  auto* section = new QWidget;
  auto* form = model_form_ = form_of(section);
  model_edit = new PathEdit;
  model_edit->setObjectName("model");
  auto* browse = new QPushButton(tr("Browse…"));
  browse->setToolTip(tr("Choose a diffusers model folder on disk"));
  // The demo button opens the clip demo; its menu offers the image one too.
  auto* demo = new QToolButton;
  demo->setText(tr("Demo model"));
  demo->setToolTip(tr("Tiny built-in models that run anywhere in seconds: a CogVideoX-shaped one for clips, a "
                      "FLUX.1-shaped one for images (from the arrow)"));
  demo->setPopupMode(QToolButton::MenuButtonPopup);
  demo->setMenu(new QMenu(demo));
  connect(demo->menu()->addAction(tr("Clips: CogVideoX-shaped demo")), &QAction::triggered, this,
          [this] { set_model_dir(QString::fromStdString(workers::demo_model_dir())); });
  connect(demo->menu()->addAction(tr("Images: FLUX.1-shaped demo")), &QAction::triggered, this,
          [this] { set_model_dir(QString::fromStdString(workers::demo_flux_dir())); });
  auto* recent = new QToolButton;
  recent->setText(tr("Recent"));
  recent->setToolTip(tr("The model folders used lately"));
  recent->setPopupMode(QToolButton::InstantPopup);
  recent->setMenu(new QMenu(recent));
  connect(recent->menu(), &QMenu::aboutToShow, this, [this, recent] {
    recent->menu()->clear();
    for (const QString& dir : QSettings().value("recentModels").toStringList())
      connect(recent->menu()->addAction(dir), &QAction::triggered, this, [this, dir] { set_model_dir(dir); });
  });
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(browse);
  buttons->addWidget(recent);
  buttons->addWidget(demo);
  buttons->addStretch();
  auto* model_box = new QVBoxLayout;
  model_box->setSpacing(2);
  model_box->addWidget(model_edit);
  model_box->addLayout(buttons);
  form->addRow(label("model"), model_box);
  family = new QLabel;
  family->setObjectName("family");
  family->setWordWrap(true);
  form->addRow(tr("Model"), family);
  loras = new LoraList("lora");
  loras_2 = new LoraList("lora_2");
  form->addRow(label("lora"), loras);
  form->addRow(label("lora_2"), loras_2);
  for (auto* l : {loras, loras_2}) {
    connect(l, &LoraList::changed, this, &ComposePanel::changed);
    connect(l, &LoraList::trigger_chosen, this, [this](const QString& words) {  // added to the prompt, once
      const QString text = prompt->toPlainText().trimmed();
      if (!text.contains(words)) prompt->setPlainText(text.isEmpty() ? words : text + ", " + words);
    });
  }
  form->addRow(problems_.make({"model", "model_dir", "lora", "lora_2"}));
  preset = new QComboBox;
  preset->setObjectName("preset");
  preset->setPlaceholderText(tr("Custom"));
  preset->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  preset->setMinimumContentsLength(20);
  form->addRow(label("preset"), preset);

  connect(browse, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, tr("A diffusers model folder"), model_edit->text());
    if (!d.isEmpty()) set_model_dir(d);
  });
  connect(demo, &QToolButton::clicked, this,
          [this] { set_model_dir(QString::fromStdString(workers::demo_model_dir())); });
  connect(model_edit, &QLineEdit::editingFinished, this, [this] { load_model(); });
  return section;
}

void ComposePanel::build_groups() {
  auto* size = new QWidget;
  size_form_ = form_of(size);
  width = spin("width", 16, 4096, 16);
  height = spin("height", 16, 4096, 16);
  frames = spin("num_frames", 1, 1024, 4);
  fps = spin("fps", 1, 120);
  for (QWidget* w : std::initializer_list<QWidget*>{width, height, frames, fps})
    size_form_->addRow(label(w->objectName().toUtf8().constData()), w);
  size_form_->addRow(problems_.make({"width", "height", "num_frames", "fps", "num_videos_per_prompt"}));
  size_group = new Collapsible(tr("Size and length"), size, true);
  scrolled_->addWidget(size_group);

  auto* sampling = new QWidget;
  auto* form = sampling_form_ = form_of(sampling);
  seed = spin("seed", 0, std::numeric_limits<int>::max());
  seed->setValue(42);
  seed_mode = new QComboBox;
  seed_mode->setObjectName("seed_mode");
  seed_mode->addItems({tr("fixed"), tr("random each run"), tr("+1 each run")});
  auto* seed_row = new QHBoxLayout;
  seed_row->addWidget(seed, 1);
  seed_row->addWidget(seed_mode);
  form->addRow(label("seed"), seed_row);
  steps = spin("num_inference_steps", 1, 1000);
  guidance = scale("guidance_scale");
  guidance_2 = scale("guidance_scale_2");
  dynamic_cfg = new QCheckBox(tr("rises over the steps (cosine)"));
  dynamic_cfg->setObjectName("use_dynamic_cfg");
  form->addRow(label("num_inference_steps"), steps);
  form->addRow(label("guidance_scale"), guidance);
  form->addRow(label("guidance_scale_2"), guidance_2);
  form->addRow(label("use_dynamic_cfg"), dynamic_cfg);
  // Step caching: off by default (it trades fidelity for speed).
  cache_field = new StepCacheField;
  step_cache = cache_field->method;
  cache_threshold = cache_field->threshold;
  form->addRow(label("step_cache"), cache_field);
  form->addRow(problems_.make({"seed", "num_inference_steps", "guidance_scale", "guidance_scale_2", "use_dynamic_cfg",
                               "use_fbcache", "use_teacache", "use_magcache", "magcache_ratios", "magcache_calibrate",
                               "cache_threshold"}));
  sampling_group = new Collapsible(tr("Sampling"), sampling, true);
  scrolled_->addWidget(sampling_group);

  memory = new MemoryGroup;
  connect(memory, &MemoryGroup::changed, this, &ComposePanel::changed);
  static_cast<QFormLayout*>(memory->layout())
      ->addRow(problems_.make({"transformer", "transformer_2", "text_encoder", "text_encoder_2", "quantize", "offload",
                               "text_encoder_device", "fp8_gemm"}));
  memory_group = new Collapsible(tr("Memory"), memory, false);
  scrolled_->addWidget(memory_group);

  auto* decoding = new QWidget;
  decoding_form_ = form_of(decoding);
  vae_tiling = new QCheckBox(tr("decode in tiles (less memory)"));
  vae_tiling->setObjectName("enable_tiling");
  decoding_form_->addRow(label("enable_tiling"), vae_tiling);
  decoding_form_->addRow(problems_.make({"enable_tiling"}));
  decoding_group = new Collapsible(tr("Decoding"), decoding, false);
  scrolled_->addWidget(decoding_group);
}

void ComposePanel::set_actions(QWidget* actions) { column_->insertWidget(1, actions); }

Collapsible* ComposePanel::add_group(const QString& title, QWidget* content, bool open) {
  auto* group = new Collapsible(title, content, open);
  scrolled_->insertWidget(scrolled_->indexOf(decoding_group), group);
  return group;
}

void ComposePanel::add_decoding_row(QWidget* field) {
  decoding_form_->insertRow(decoding_form_->rowCount() - 1, label(field->objectName().toUtf8().constData()), field);
}

void ComposePanel::add_below(QWidget* w) { scrolled_->insertWidget(scrolled_->count() - 1, w); }

void ComposePanel::finish_settings() {
  for (QWidget* w : findChildren<QWidget*>()) {
    const std::string help = plan::field_help(w->objectName().toStdString());
    if (!help.empty() && w->toolTip().isEmpty()) w->setToolTip(QString::fromStdString(help));
  }
  wheel_guard_.guard(this);
  reverts_.watch(this);
  connect(&reverts_, &RevertNotice::changed, this, &ComposePanel::changed);
  cache_field->slider->setFocusPolicy(Qt::StrongFocus);  // the guard knows spin and combo boxes only
  cache_field->slider->installEventFilter(&wheel_guard_);
}

void ComposePanel::set_model_dir(const QString& dir) {
  model_edit->setText(dir);
  load_model();
}

void ComposePanel::load_model() {
  model_.reset();
  model_error_.clear();
  try {
    auto folder = plan::read_model_folder(model_edit->text().toStdString());
    // A weight file cut short or a shard missing is said now, from the headers, rather than at load.
    if (const auto weights = io::weight_file_problems(folder.dir); !weights.empty())
      throw std::runtime_error(weights.front());
    model_ = std::move(folder);
    QSettings settings;
    QStringList recent = settings.value("recentModels").toStringList();
    recent.removeAll(model_edit->text());
    recent.prepend(model_edit->text());
    settings.setValue("recentModels", recent.mid(0, 8));
  } catch (const std::exception& e) {
    model_error_ = QString::fromStdString(e.what());
  }
  tokens_.set_model(model());
  cache_field->set_model(model());
  memory->set_model(model());
  problems_.show(model_error_.isEmpty() ? std::vector<plan::Problem>{}
                                        : std::vector<plan::Problem>{{"model", model_error_.toStdString()}});
  apply_model_limits();
  show_family_fields();
  {
    const QSignalBlocker block(preset);
    preset->clear();
    for (const auto& p : model_ ? compose_presets(job(), *model_) : std::vector<ComposePreset>{})
      preset->addItem(p.name);
  }
  family->setText(model_ ? tr("%1; sampler %2 (from scheduler/)")
                               .arg(QString::fromStdString(model_->variant.name))
                               .arg(QString::fromStdString(plan::rules_of(*model_).sampler_name(*model_)))
                         : tr("—"));
  Q_EMIT model_loaded();
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
  if (defaults_of_ == model_->variant.id) return;
  defaults_of_ = model_->variant.id;
  plan::JobSpec j = job();
  j.width = j.height = j.num_frames = j.fps = j.num_inference_steps = 0;
  j.guidance_scale = j.guidance_scale_2 = plan::JobSpec{}.guidance_scale;  // unset: the model's
  plan::apply_model_defaults(j, *model_);
  set_job(j);
}

std::pair<int, int> ComposePanel::picture_shape() const {
  const QSize s = image->picture_size();
  if (!model_ || s.isEmpty()) return {0, 0};
  return plan::size_of_picture_shape(*model_, width->value(), height->value(), s.width(), s.height());
}

// A family that sizes the video by its picture (HunyuanVideo-1.5 image-to-video's buckets) does so as the
// picture or the model is chosen; the size stays the user's to change afterwards.
void ComposePanel::size_from_picture() {
  const QSize s = image->picture_size();
  if (!model_ || s.isEmpty()) return;
  plan::JobSpec j;
  plan::size_from_picture(j, *model_, s.width(), s.height());
  if (j.width == 0) return;
  width->setValue(j.width);
  height->setValue(j.height);
}

void ComposePanel::show_family_fields() {
  if (!model_) return;
  const auto& rules = plan::rules_of(*model_);
  // A text-to-video model whose family has image-to-video ones keeps the picture field, to point to them.
  const bool takes_image = rules.takes_image(*model_);
  std::vector<std::pair<QString, QString>> offers;
  if (!takes_image)
    for (const auto& r : plan::image_to_video_repos(rules))
      offers.push_back({QString::fromStdString(r.name), QString::fromStdString(r.repo_id)});
  for (const auto& [field, on] : std::initializer_list<std::pair<QWidget*, bool>>{
           {frames, rules.makes_video()},
           {fps, rules.makes_video()},
           {prompt_2->parentWidget(), rules.takes_prompt_2()},
           {negative_prompt->parentWidget(), rules.classifier_free()},
           {image, takes_image || !offers.empty()},
           {last_image, rules.takes_last_image(*model_)},
           {loras_2, rules.second_expert_boundary(*model_) > 0},
           {dynamic_cfg, rules.dynamic_cfg()},
           {guidance_2, rules.takes_guidance_2(*model_)}})
    family_rows_.show(field, on);
  image->set_offer(offers);
  image->set_crop(rules.crops_picture(*model_));
  size_from_picture();
  size_group->header->setText(rules.makes_video() ? tr("Size and length") : tr("Size"));
}

void ComposePanel::show_tokens() {
  const plan::JobSpec j = job();
  const std::pair<QLabel*, const char*> fields[] = {
      {prompt_tokens, "prompt"}, {prompt_2_tokens, "prompt_2"}, {negative_tokens, "negative_prompt"}};
  for (auto [l, field] : fields) {
    const auto count = tokens_.count(j, field);
    // An empty optional field says nothing; the prompt always shows its limit.
    const bool quiet = !count || (l != prompt_tokens && !count->cut &&
                                  (field == std::string("prompt_2") ? j.prompt_2 : j.negative_prompt).empty());
    if (quiet) {  // blank, its line kept
      l->clear();
      continue;
    }
    l->setText(count->cut ? count->text + " — " + count->warning : count->text);
    l->setStyleSheet(count->cut ? "color: #b9770e;" : "color: palette(placeholder-text);");
  }
}

void ComposePanel::show_preset() {
  if (!model_) return;
  const QSignalBlocker block(preset);
  preset->setCurrentIndex(matching_preset(compose_presets(job(), *model_), job(), plan::rules_of(*model_).makes_video()));
}

bool ComposePanel::prompt_missing() const { return prompt->toPlainText().trimmed().isEmpty(); }

std::vector<plan::Problem> ComposePanel::show_problems(const std::vector<plan::Problem>& problems) {
  std::vector<plan::Problem> errors, hints;
  for (const auto& p : problems)
    if (p.field != "prompt" || !prompt_missing()) errors.push_back(p);
  if (prompt_missing()) {
    const bool video = model_ && plan::rules_of(*model_).makes_video();
    hints.push_back({"prompt", video ? "To generate, write a prompt: what the clip should show."
                                     : "To generate, write a prompt: what the picture should show."});
  }
  cache_field->show_ratios(model_edit->text(), steps->value());  // a calibration run may have written them
  return problems_.show(errors, reverts_.problems(), hints);
}

uint64_t ComposePanel::next_seed() {
  if (seed_mode->currentIndex() == 1) seed->setValue(int(QRandomGenerator::global()->bounded(1 << 30)));
  else if (seed_mode->currentIndex() == 2 && !first_seed_use_) seed->setValue(seed->value() + 1);
  first_seed_use_ = false;
  return uint64_t(seed->value());
}

}  // namespace studio::gui
