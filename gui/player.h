// Plays the decoded frames of a run (they arrive while it decodes): play/pause, scrub, loop, step a frame,
// speed; and exports them as MP4, WebM, GIF or a folder of PNGs through the project's clip writer, with
// the run's settings as metadata. In image mode (a family that makes images) it shows the one picture,
// without the clip controls, and exports it as PNG (settings in its "parameters" text), JPEG or WebP.
#pragma once
#include <QCheckBox>
#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QTimer>
#include <QWidget>

#include <map>
#include <string>
#include <vector>

namespace studio::gui {

class Player : public QWidget {
  Q_OBJECT
 public:
  explicit Player(QWidget* parent = nullptr);
  void clear();
  void set_frame(int index, const QImage& frame);  // frames may arrive in any order
  void set_fps(int fps);
  void set_metadata(const std::map<std::string, std::string>& m) { metadata_ = m; }
  void set_image_mode(bool image);
  bool image_mode() const { return image_mode_; }
  int frame_count() const { return int(frames_.size()); }
  int current() const { return current_; }
  const QImage& frame(int i) const { return frames_[size_t(i)]; }
  void show_frame(int i);
  void play();
  void pause();
  bool playing() const { return timer_.isActive(); }
  // Writes every frame to `path` (the format from its extension); false with `error` set on failure.
  bool export_to(const QString& path, QString* error) const;

  QLabel* screen;
  QSlider* slider;
  QPushButton *play_button, *export_button;
  QPushButton *back_button, *forward_button;
  QCheckBox* loop;
  QComboBox* speed;

 private:
  void advance();
  std::vector<QImage> frames_;
  std::map<std::string, std::string> metadata_;
  int current_ = -1, fps_ = 8;
  bool image_mode_ = false;
  QTimer timer_;
};

}  // namespace studio::gui
