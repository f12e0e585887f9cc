// Where and how to run: the GPUs of this machine (from `dit-worker --list-devices`; the CPU when there
// are none), the degree of each kind of parallelism, and the valid configurations for the selection one
// click away. A change of devices starts from the default configuration for them (plan/parallel_defaults.h)
// unless the one set already fills them; on the CPU, more processes than cores is warned about.
// Parallel VAE is a decoding setting: its check box is placed by the caller (the "Decoding" group).
#pragma once
#include <optional>

#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QSpinBox>
#include <QToolButton>
#include <QWidget>

#include "gui/problem_labels.h"
#include "plan/cost_model.h"
#include "plan/parallel.h"
#include "workers/launch/devices.h"

namespace studio::gui {

class ParallelPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ParallelPanel(QWidget* parent = nullptr);

  void set_devices(const workers::Devices& d);
  plan::ParallelConfig config() const;
  void set_config(const plan::ParallelConfig& p);
  bool on_gpus() const { return !devices_.gpus.empty(); }
  // Processes the configuration must fill: the selected GPUs, or on the CPU as many as it asks for.
  int processes() const;
  // The smallest selected GPU's memory in GiB; 0 on the CPU.
  double memory_gib() const;
  QStringList selected_gpus() const;  // indices, for CUDA_VISIBLE_DEVICES
  // Offers these under "Valid configurations" (the caller computes them for the current job); given the
  // job and model, each with the cost model's predicted seconds per step and memory per rank, fastest
  // first, when the devices have been calibrated (plan/cost_model.h; "Auto" calibrates them).
  void offer(const std::vector<plan::ParallelConfig>& valid, const plan::JobSpec* job = nullptr,
             const plan::ModelFolder* model = nullptr);
  ProblemLabels& problems() { return problems_; }
  // Shows the problems of its fields (with the CPU's warning); returns the others.
  std::vector<plan::Problem> show_problems(const std::vector<plan::Problem>& problems);
  // On GPUs, when the configuration does not fill the selected ones: plan::default_parallel for them.
  void fit_to_devices(const plan::JobSpec& job, const plan::ModelFolder& model);

  QListWidget* devices;
  QSpinBox *ulysses, *ring, *pipefusion, *patches, *warmup, *data;
  QCheckBox *cfg, *parallel_vae;
  QToolButton *suggestions, *auto_pick;
  QLabel* product;

 Q_SIGNALS:
  void changed();
  void devices_changed();  // listed again, or a GPU checked or unchecked

 private:
  // The predictions of what offer() was last given; Auto measures the devices first when they are not.
  std::vector<plan::Prediction> rank(bool measure);
  void choose_fastest();
  workers::Devices devices_;
  std::vector<plan::ParallelConfig> valid_;
  std::optional<plan::JobSpec> job_;
  std::optional<plan::ModelFolder> model_;
  ProblemLabels problems_;
};

}  // namespace studio::gui
