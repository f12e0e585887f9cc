// Plays the frames of a run: the one running (its frames arrive while it decodes) or any past run from the
// history (the frames each run keeps). A new run takes the Player over only when its first frame arrives,
// so a run that fails before decoding leaves the clip being watched in place. Play/pause, scrub, loop,
// step a frame, speed; export through the project's clip writer in the format chosen in the selector
// (MP4, WebM, GIF or a folder of PNGs; an image as PNG, JPEG or WebP) with every setting of the run as
// metadata and in the sidecar, then says where it wrote with a link to the folder.
#pragma once
#include <QCheckBox>
#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QTimer>
#include <QWidget>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gui/results/history.h"
#include "gui/widgets/latest_task.h"
#include "plan/job_file.h"

namespace studio::gui {

class ClipExport;

class Player : public QWidget {
  Q_OBJECT
 public:
  explicit Player(QWidget* parent = nullptr);
  void clear();  // shows nothing: no frames, no run
  // Empties the player for the run kept in `folder` (its frames to come through set_frame); its mode,
  // fps and export metadata from the job.
  void begin(const QString& folder, const plan::JobFile& job, const QString& title);
  // Opens a past run: reads the frames its folder kept on a thread, then shows them with its settings and calls
  // `shown`; when it kept none or its settings cannot be read, the player stays as it is and `failed` says why.
  // A later open_run() supersedes one under way.
  void open_run(const RunRecord& r, std::function<void()> shown, std::function<void(const QString& why)> failed);
  bool opening() const { return opener_->busy() || inputs_->busy(); }  // a run's frames or pictures are being read
  const QString& source() const { return source_; }  // the run folder shown; empty when none
  void set_frame(int index, const QImage& frame);  // frames may arrive in any order
  void set_fps(int fps);
  void set_image_mode(bool image);
  bool image_mode() const { return image_mode_; }
  int frame_count() const { return int(frames_.size()); }
  int current() const { return current_; }
  const QImage& frame(int i) const { return frames_[size_t(i)]; }
  void show_frame(int i);
  void play();
  void pause();
  bool playing() const { return timer_.isActive(); }
  // Starts writing to `path` in the format chosen in `format` (its extension added or replaced; a folder for PNG
  // frames) on a thread (ClipExport), the progress in `note`; when it ends, says where in `note` and emits
  // exported(), or export_failed(). The path it writes, or empty with `error` set when it cannot start.
  QString export_chosen(const QString& path, QString* error);
  bool exporting() const;  // an export is being written
  // Asks where, then export_chosen().
  void export_dialog();

  QLabel* title;  // which run is shown
  QLabel* screen;
  QLabel* input;  // the picture(s) an image-to-video run started from, beside the screen; hidden otherwise
  QSlider* slider;
  QPushButton *play_button, *export_button, *cancel_export_button;
  QPushButton *back_button, *forward_button;
  QLabel* frame_label;  // "frame 3 of 49"
  QCheckBox* loop;
  QComboBox* speed;
  QComboBox* format;  // the export format
  QLabel* note;       // where the last export went, with a link to its folder

 Q_SIGNALS:
  void exported(const QString& path);
  void export_failed(const QString& why);

 private:
  void advance();
  void export_ended(const QString& path, const QString& error, bool cancelled);
  void export_not_started(const QString& why);  // said; an export under way is left as it is
  void show_frame_number();
  void show_input(const plan::JobSpec& job);
  static constexpr int kInputWidth = 160;
  void list_formats();
  void resizeEvent(QResizeEvent* e) override;
  std::vector<QImage> frames_;
  std::optional<plan::JobFile> job_;  // the run shown: its export's metadata, read when it is exported
  QString source_;
  int current_ = -1, fps_ = 8;
  bool image_mode_ = false;
  QTimer timer_;
  ClipExport* export_;
  LatestTask* opener_;
  LatestTask* inputs_;  // reads the pictures a run started from
  QString exporting_to_;
};

}  // namespace studio::gui
