// The "Memory" group: where the transformer's and the text encoders' weights come from and how they are kept (a
// single GGUF or fp8 file, fp8 on load, blocks in host memory, the text encoders on the CPU, the products in fp8), and
// whether the job fits the chosen
// devices: the plan's memory per rank, and when it does not fit, the ways of keeping the weights that would,
// each with its memory (and seconds per step once the devices are measured), one click to take it.
#pragma once
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QWidget>

#include <optional>
#include <vector>

#include "gui/compose/path_edit.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "plan/weight_choice.h"

namespace studio::gui {

class MemoryGroup : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryGroup(QWidget* parent = nullptr);
  void apply(plan::JobSpec& j) const;  // the group's fields into the job
  void show_job(const plan::JobSpec& j);
  // The second expert's file only for a two-expert model, the second text encoder's for FLUX.1.
  void set_model(const plan::ModelFolder* model);
  // What the plan says of the job on the chosen devices (plan::storage_choices: the job as given first);
  // `memory_gib` 0 on the CPU; `seconds[i]` the prediction for choices[i], where the devices are measured.
  void show_fit(const std::vector<plan::StorageChoice>& choices, double memory_gib,
                const std::vector<std::optional<double>>& seconds);

  PathEdit *transformer, *transformer_2, *text_encoder, *text_encoder_2;
  QComboBox *quantize, *offload, *text_encoder_device;
  QCheckBox* fp8_gemm;
  QLabel* fit;

 Q_SIGNALS:
  void changed();
  // A choice of the fit line that changes the parallel configuration (--shard_weights, PipeFusion stages).
  void chosen(const plan::ParallelConfig& config);

 private:
  void take(const QString& flag);
  void show_row(QWidget* field, bool on);
  std::vector<plan::StorageChoice> shown_;  // the fit line's choices, the job as given first
};

}  // namespace studio::gui
