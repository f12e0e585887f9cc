#include "gui/player.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QVBoxLayout>

#include <cstring>

#include "plan/output_format.h"
#include "video/clip_writer.h"
#include "video/image_writer.h"

namespace studio::gui {

namespace {

// RGB8 rows without QImage's line padding, as the writers take them.
std::vector<uint8_t> packed_rgb(const QImage& image) {
  const QImage rgb = image.convertToFormat(QImage::Format_RGB888);
  const size_t row = size_t(rgb.width()) * 3;
  std::vector<uint8_t> packed(row * size_t(rgb.height()));
  for (int y = 0; y < rgb.height(); ++y) std::memcpy(packed.data() + size_t(y) * row, rgb.constScanLine(y), row);
  return packed;
}

}  // namespace

Player::Player(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  screen = new QLabel(tr("The frames of a run appear here as they are decoded."));
  screen->setObjectName("screen");
  screen->setAlignment(Qt::AlignCenter);
  screen->setMinimumSize(288, 192);
  layout->addWidget(screen, 1);
  slider = new QSlider(Qt::Horizontal);
  slider->setObjectName("scrub");
  layout->addWidget(slider);
  auto* controls = new QHBoxLayout;
  auto* back = back_button = new QPushButton(tr("◀ frame"));
  play_button = new QPushButton(tr("Play"));
  play_button->setObjectName("play");
  auto* forward = forward_button = new QPushButton(tr("frame ▶"));
  loop = new QCheckBox(tr("loop"));
  loop->setChecked(true);
  speed = new QComboBox;
  speed->addItems({"0.25x", "0.5x", "1x", "2x"});
  speed->setCurrentIndex(2);
  export_button = new QPushButton(tr("Export…"));
  for (QWidget* w : std::initializer_list<QWidget*>{back, play_button, forward, loop, speed, export_button})
    controls->addWidget(w);
  layout->addLayout(controls);

  connect(&timer_, &QTimer::timeout, this, &Player::advance);
  connect(slider, &QSlider::valueChanged, this, &Player::show_frame);
  connect(play_button, &QPushButton::clicked, this, [this] { playing() ? pause() : play(); });
  connect(back, &QPushButton::clicked, this, [this] { show_frame(std::max(0, current_ - 1)); });
  connect(forward, &QPushButton::clicked, this, [this] { show_frame(std::min(frame_count() - 1, current_ + 1)); });
  connect(speed, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { set_fps(fps_); });
  connect(export_button, &QPushButton::clicked, this, [this] {
    const QString path =
        image_mode_ ? QFileDialog::getSaveFileName(this, tr("Export the image"), "image.png",
                                                   tr("Images (*.png *.jpg *.jpeg *.webp)"))
                    : QFileDialog::getSaveFileName(this, tr("Export the clip"), "clip.mp4",
                                                   tr("Clips (*.mp4 *.webm *.gif);;PNG frames (folder/)"));
    QString error;
    if (!path.isEmpty() && !export_to(path, &error)) QMessageBox::warning(this, tr("Export failed"), error);
  });
}

void Player::set_image_mode(bool image) {
  image_mode_ = image;
  for (QWidget* w : std::initializer_list<QWidget*>{slider, back_button, play_button, forward_button, loop, speed})
    w->setVisible(!image);
  screen->setText(image ? tr("The image of a run appears here when it is decoded.")
                        : tr("The frames of a run appear here as they are decoded."));
}

void Player::clear() {
  pause();
  frames_.clear();
  current_ = -1;
  slider->setRange(0, 0);
  screen->clear();
}

void Player::set_frame(int index, const QImage& frame) {
  if (index < 0) return;
  if (size_t(index) >= frames_.size()) frames_.resize(size_t(index) + 1);
  frames_[size_t(index)] = frame;
  slider->setRange(0, frame_count() - 1);
  if (current_ < 0) show_frame(0);
}

void Player::set_fps(int fps) {
  fps_ = std::max(1, fps);
  static const double factors[] = {0.25, 0.5, 1, 2};
  timer_.setInterval(int(1000.0 / (fps_ * factors[std::max(0, speed->currentIndex())])));
}

void Player::show_frame(int i) {
  if (i < 0 || i >= frame_count() || frames_[size_t(i)].isNull()) return;
  current_ = i;
  const QSignalBlocker block(slider);
  slider->setValue(i);
  screen->setPixmap(QPixmap::fromImage(frames_[size_t(i)]).scaled(screen->size(), Qt::KeepAspectRatio,
                                                                  Qt::SmoothTransformation));
}

void Player::play() {
  if (frames_.empty()) return;
  set_fps(fps_);
  timer_.start();
  play_button->setText(tr("Pause"));
}

void Player::pause() {
  timer_.stop();
  play_button->setText(tr("Play"));
}

void Player::advance() {
  if (current_ + 1 < frame_count()) return show_frame(current_ + 1);
  if (loop->isChecked()) return show_frame(0);
  pause();
}

bool Player::export_to(const QString& path, QString* error) const {
  if (frames_.empty() || frames_.front().isNull()) return *error = tr("there are no frames to export"), false;
  try {
    if (plan::is_image(plan::format_for(path.toStdString()))) {
      // One picture: the one shown (the first of a batch's images otherwise).
      const QImage& shown = frames_[size_t(std::max(0, current_))];
      video::ImageInfo info;
      info.width = shown.width();
      info.height = shown.height();
      info.metadata = metadata_;
      video::write_image(path.toStdString(), packed_rgb(shown).data(), info);
      return true;
    }
    video::ClipInfo info;
    info.width = frames_.front().width();
    info.height = frames_.front().height();
    info.fps = fps_;
    info.metadata = metadata_;
    video::ClipWriter writer(path.toStdString(), info);
    for (const auto& f : frames_) writer.add_frame(packed_rgb(f).data());
    writer.finish();
  } catch (const std::exception& e) {
    *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

}  // namespace studio::gui
