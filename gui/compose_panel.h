// What to generate: the model folder (the built-in demo models, for clips and for images, always offered;
// recent folders remembered), the prompt (and what the family reads besides: a negative prompt for
// CogVideoX and Wan, T5's own prompt for FLUX.1, the second expert's guidance for Wan2.2), the seed and how it changes between runs, and the sizes, frames,
// steps and guidance, with the steps and ranges the model's configs allow, and step caching. Only the fields the model's
// family uses are shown, and a change of family starts from the new family's defaults.
#pragma once
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QWidget>

#include <optional>

#include "gui/problem_labels.h"
#include "plan/job.h"

namespace studio::gui {

class ComposePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ComposePanel(QWidget* parent = nullptr);

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

  QLineEdit* model_edit;
  QPlainTextEdit* prompt;
  QLineEdit* prompt_2;  // FLUX.1: T5's own prompt (empty: the prompt)
  QLineEdit* negative_prompt;
  QSpinBox *seed, *width, *height, *frames, *fps, *steps;
  QComboBox* seed_mode;
  QDoubleSpinBox* guidance;
  QDoubleSpinBox* guidance_2;  // Wan2.2: the low-noise expert's guidance
  QCheckBox* dynamic_cfg;
  QComboBox* step_cache;            // off, First-Block Cache, TeaCache
  QDoubleSpinBox* cache_threshold;  // its threshold (enabled while one is on)
  QLabel* family;  // the model family and its sampler, read from the folder
  QComboBox* preset;  // the family's sizes: the model's defaults, the family's other sizes, a quick draft

 Q_SIGNALS:
  void changed();

 private:
  void load_model();
  void apply_model_limits();
  void show_family_fields();
  struct Preset {
    QString kind;  // "Model's defaults", "720p", "Draft"
    plan::JobSpec job;
  };
  std::vector<Preset> presets() const;
  std::optional<plan::ModelFolder> model_;
  QString model_error_;
  ProblemLabels problems_;
  QFormLayout* form_;
  std::optional<plan::Family> defaults_of_;  // the family whose defaults the fields were last set to
  bool first_seed_use_ = true;  // "+1 each run" starts from the seed shown
};

}  // namespace studio::gui
