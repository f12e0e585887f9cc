// The studio's left column: what to generate. On top and never scrolled, the prompt with its token count
// against what the model's text encoder reads (a warning when some will be ignored), the prompt for T5
// (FLUX.1) and the negative prompt (CogVideoX, Wan), then the caller's actions (Generate). Below, scrolled:
// the model folder (the demo models always one click away; recent folders remembered), the preset by
// shape and seconds (or "Custom"), and the collapsible groups: "Size and length", "Sampling" (seed, steps,
// guidance, step cache), "Memory" (memory_group.h), the caller's (GPUs and parallelism), "Decoding". Only the fields the model's
// family reads are shown, and a change of family starts from the new family's defaults. Every setting has
// a tooltip (plan/field_labels.h), and the mouse wheel changes only a focused field.
#pragma once
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QWidget>

#include <optional>
#include <utility>

#include "gui/widgets/collapsible.h"
#include "gui/compose/compose_presets.h"
#include "gui/compose/lora_list.h"
#include "gui/compose/memory_group.h"
#include "gui/compose/path_edit.h"
#include "gui/compose/picture_field.h"
#include "gui/widgets/form_rows.h"
#include "gui/widgets/problem_labels.h"
#include "gui/widgets/revert_notice.h"
#include "gui/compose/step_cache_field.h"
#include "gui/compose/token_count.h"
#include "gui/widgets/wheel_guard.h"
#include "plan/job.h"

namespace studio::gui {

class ComposePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComposePanel(QWidget* parent = nullptr);
  QSize sizeHint() const override { return {500, QWidget::sizeHint().height()}; }

  // The job as the widgets say (output and device are the caller's).
  plan::JobSpec job() const;
  void set_job(const plan::JobSpec& job);
  // The model folder's configs, or nothing while the folder cannot be read (the reason is shown).
  const plan::ModelFolder* model() const { return model_ ? &*model_ : nullptr; }
  QString model_error() const { return model_error_; }
  void set_model_dir(const QString& dir);
  // The seed for the next run (random or incremented as the seed mode says), shown in the seed field.
  uint64_t next_seed();
  ProblemLabels& problems() { return problems_; }
  // Shows the problems by their fields (a missing prompt as a grey hint, not an error), opens a closed
  // group that has one, and returns those of fields it has no place for.
  std::vector<plan::Problem> show_problems(const std::vector<plan::Problem>& problems);
  bool prompt_missing() const;

  // The layout's slots for the caller: actions under the prompt (never scrolled); a group before
  // "Decoding"; a row in "Decoding"; anything below the groups.
  void set_actions(QWidget* actions);
  Collapsible* add_group(const QString& title, QWidget* content, bool open);
  void add_decoding_row(QWidget* field);  // labelled by its objectName's field label
  void add_below(QWidget* w);
  // Tooltips and the wheel guard for every setting under the column (call once it is complete).
  void finish_settings();

  PathEdit* model_edit;
  QPlainTextEdit* prompt;
  QLineEdit* prompt_2;  // FLUX.1: T5's own prompt (empty: the prompt)
  QLineEdit* negative_prompt;
  PictureField* image;       // image-to-video models: the picture the clip starts from
  PictureField* last_image;  // and, where the model can use one, the picture it ends on
  LoraList* loras;           // the LoRAs applied to the transformer
  LoraList* loras_2;         // Wan2.2: to its second (low-noise) expert
  QLabel *prompt_tokens, *prompt_2_tokens, *negative_tokens;  // "12 / 15 tokens", and what will be cut
  QSpinBox *seed, *width, *height, *frames, *fps, *steps;
  QComboBox* seed_mode;
  QDoubleSpinBox* guidance;
  QDoubleSpinBox* guidance_2;  // Wan2.2: the low-noise expert's guidance
  QCheckBox* dynamic_cfg;
  StepCacheField* cache_field;      // the step cache: method, fidelity/speed slider, MagCache's ratios
  QComboBox* step_cache;            // cache_field's method: off, First-Block Cache, TeaCache, MagCache
  QDoubleSpinBox* cache_threshold;  // cache_field's threshold (enabled while one is on)
  QCheckBox* vae_tiling;
  QLabel* family;  // the model family and its sampler, read from the folder
  QComboBox* preset;  // by shape and seconds: the model's size, a draft, other shapes; "Custom" otherwise
  MemoryGroup* memory;  // where the transformer's weights come from, how they are kept, whether the job fits
  Collapsible *size_group, *sampling_group, *memory_group, *decoding_group;

 Q_SIGNALS:
  void changed();
  void model_loaded();  // the model field was read (model() is the folder, or null with model_error())
  // "Calibrate now" for MagCache: while this is emitted, job() is the uncached run that measures the ratios.
  void calibrate_requested();
  // An image-to-video model the picture field offers (its repository id), to be shown in the Models tab.
  void model_offered(const QString& repo_id);

 private:
  QWidget* build_prompt_section();
  QWidget* build_model_section();
  void build_groups();
  void load_model();
  void apply_model_limits();
  void show_family_fields();
  void size_from_picture();
  // The output size of the picture's shape ("Match the picture's shape"); {0, 0} when none is offered.
  std::pair<int, int> picture_shape() const;
  void show_tokens();
  void show_preset();
  std::optional<plan::ModelFolder> model_;
  QString model_error_;
  ProblemLabels problems_;
  TokenCounter tokens_;
  WheelGuard wheel_guard_;
  RevertNotice reverts_;  // what a spin box refused, said below it
  QFormLayout *model_form_, *prompt_form_, *size_form_, *sampling_form_, *decoding_form_;
  FormRows family_rows_;  // the rows show_family_fields() shows or takes out
  QVBoxLayout *column_, *scrolled_;
  std::string defaults_of_;  // the variant (Variant::id) whose defaults the fields were last set to
  bool first_seed_use_ = true;  // "+1 each run" starts from the seed shown
  bool calibrating_ = false;    // job() is MagCache's calibration run
};

}  // namespace studio::gui
