// The compose column's step cache: the method (off, First-Block Cache, TeaCache, MagCache), a fidelity <->
// speed slider and the exact threshold it sets (editable), and for MagCache the ratios file it reads.
//
// The slider's positions map to thresholds monotonically, per method and model: position 0 is 0 ("exact":
// nothing is reused, the uncached result), the marked middle position kDefaultPosition is the method's
// default for the model (plan::cache_threshold), linear in between; above it the threshold grows
// geometrically to kSpeedFactor times the default at the speed end. A threshold typed in moves the slider to
// the nearest position (the end for one beyond it).
//
// MagCache needs ratios measured once per model and step count by an uncached run. They are kept in the
// studio's data folder, one file per model folder and step count (ratios_file_for), and used automatically;
// Browse picks another file for that model and step count (remembered). "Calibrate now" asks the caller to
// run the current job uncached, writing that file (calibrate_requested).
#pragma once
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QWidget>

#include "plan/job.h"
#include "plan/model_folder.h"

namespace studio::gui {

class StepCacheField : public QWidget {
  Q_OBJECT
 public:
  enum Method { Off, FirstBlock, TeaCache, MagCache };
  static constexpr int kPositions = 100;       // the slider's speed end
  static constexpr int kDefaultPosition = 50;  // the method's default for the model
  static constexpr double kSpeedFactor = 4;    // the speed end's threshold over the default

  explicit StepCacheField(QWidget* parent = nullptr);

  // The slider's mapping for a method's default threshold (monotone, 0 at position 0).
  static double threshold_at(int position, double default_threshold);
  static int position_of(double threshold, double default_threshold);
  // Where calibration writes, and MagCache reads, the ratios of a model folder run with `steps` steps.
  static QString ratios_file_for(const QString& model_dir, int steps);

  void set_model(const plan::ModelFolder* model);  // nullptr while the folder cannot be read
  // Writes the method, its threshold and MagCache's ratios file into `job` (its model_dir and steps key the
  // ratios); `calibrating`: the uncached run that measures them instead.
  void apply(plan::JobSpec& job, bool calibrating = false) const;
  void show_job(const plan::JobSpec& job);  // signals blocked
  // The ratios file MagCache uses for the model and steps ("" if none exists yet), and says so below.
  QString ratios_for(const QString& model_dir, int steps) const;
  void show_ratios(const QString& model_dir, int steps);

  QComboBox* method;                 // objectName "step_cache"
  QSlider* slider;                   // fidelity (0 = exact) <-> speed
  QDoubleSpinBox* threshold;         // objectName "cache_threshold"
  QLabel* ratios_label;              // MagCache: the file it reads, or that none exists yet
  QPushButton *calibrate_button, *browse_button;

 Q_SIGNALS:
  void changed();
  void calibrate_requested();

 private:
  double default_threshold() const;  // the chosen method's default for the model
  void method_chosen();
  const plan::ModelFolder* model_ = nullptr;
  QWidget* ratios_row_;
  QString shown_dir_;
  int shown_steps_ = 0;
};

}  // namespace studio::gui
