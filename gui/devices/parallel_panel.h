// Where and how to run: the GPUs of this machine (from `dit-worker --list-devices`; the CPU when there
// are none), the degree of each kind of parallelism, and the valid configurations for the selection one
// click away, for the process counts that make sense here. A change of devices or model that the configuration
// set cannot run starts from the default for them (plan/parallel_defaults.h) and says what it changed. On the
// CPU, more processes than cores is refused unless "Oversubscribe" is ticked (then warned about), and the
// processes' memory must fit the machine's.
// "Auto" picks the configuration the cost model predicts fastest among those that fit, measuring the
// devices first (on a thread: calibration_task.h) when they have not been.
// Parallel VAE is a decoding setting: its check box is placed by the caller (the "Decoding" group).
#pragma once
#include <optional>

#include <QCheckBox>
#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QSpinBox>
#include <QToolButton>
#include <QWidget>

#include "gui/devices/calibration_task.h"
#include "gui/widgets/problem_labels.h"
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
  // The job's device on these devices ("cuda" or "cpu"): what a run asks for, and what the plan counts in.
  std::string device() const { return on_gpus() ? "cuda" : "cpu"; }
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
  // Each of `configs`' prediction, in their order, from the devices' calibration for their process count;
  // empty when the devices have not been measured for it.
  std::vector<plan::Prediction> predictions(const std::vector<plan::ParallelConfig>& configs,
                                            const plan::JobSpec& job, const plan::ModelFolder& model) const;
  bool measuring() const { return calibration_->running(); }
  // The dit-worker that measures the devices (the one that runs the jobs); default: beside the studio.
  void set_worker(const QString& program);
  ProblemLabels& problems() { return problems_; }
  // Shows the problems of its fields (with the CPU's warning and what refit changed); returns the others.
  std::vector<plan::Problem> show_problems(const std::vector<plan::Problem>& problems);
  // What the machine refuses: on the CPU, more processes than cores (unless oversubscribed) and more memory
  // than it has, for this job and model.
  std::vector<plan::Problem> machine_problems(const plan::JobSpec& job, const plan::ModelFolder& model) const;
  // The process count the valid configurations are listed for: the selected GPUs; on the CPU the
  // configuration's, at most the cores unless oversubscribed.
  int offer_processes() const;
  // After a change of devices or model: when the configuration cannot run on them, the default for them
  // (plan::default_parallel; on the CPU for one process), said below the fields until a degree is edited.
  void refit(const plan::JobSpec& job, const plan::ModelFolder& model);

  QListWidget* devices;
  QSpinBox *ulysses, *ring, *pipefusion, *patches, *warmup, *data;
  QCheckBox *cfg, *shard_weights, *parallel_vae;
  QCheckBox* oversubscribe;  // the CPU: more processes than cores, knowingly
  QToolButton *suggestions, *auto_pick;
  QLabel* product;

 Q_SIGNALS:
  void changed();
  void devices_changed();  // listed again, or a GPU checked or unchecked
  void auto_done();        // Auto chose, or said in the problems why it could not

 private:
  int cpu_cores() const;  // as dit-worker counted them (this machine's while it has not answered)
  std::string dtype(const plan::JobSpec& job) const;  // the calibration's: the job's on GPUs, float32 on the CPU
  std::optional<plan::Calibration> calibration(int processes, const std::string& dtype) const;
  // The predictions of what offer() was last given, the fitting ones first, each part fastest first.
  std::vector<plan::Prediction> rank() const;
  // Auto: the fastest that fits; measures the devices first (then chooses) when they are not, if `measure`.
  void choose_fastest(bool measure);
  void auto_failed(const QString& why);
  void show_measuring(bool on);  // the Auto button while the devices are measured
  QFormLayout* form_;
  workers::Devices devices_;
  QString worker_;
  CalibrationTask* calibration_;
  std::optional<plan::Calibration> measured_;  // the last measurement, should the cache not keep it
  QString auto_problem_;                        // why Auto could not choose, until it is clicked again
  QString refit_note_;                          // what refit changed, until a field is edited
  QString busy_note_;  // the last measurement's was taken on a busy machine (not cached), until Auto measures again
  std::vector<plan::ParallelConfig> valid_;
  std::optional<plan::JobSpec> job_;
  std::optional<plan::ModelFolder> model_;
  ProblemLabels problems_;
};

}  // namespace studio::gui
