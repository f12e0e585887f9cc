#include "gui/results/player.h"

#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QUrl>
#include <QHBoxLayout>
#include <QPainter>
#include <QVBoxLayout>

#include "gui/results/clip_export.h"
#include "gui/results/compare_view.h"
#include "gui/results/run_info.h"
#include "gui/widgets/open_folder.h"
#include "gui/widgets/run_picture.h"
#include "plan/field_labels.h"
#include "plan/output_format.h"

namespace studio::gui {

Player::Player(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  title = new QLabel(tr("No run shown: a run's frames appear here as they are decoded, or play one from History."));
  title->setObjectName("player_title");
  title->setWordWrap(true);
  layout->addWidget(title);
  screen = new QLabel;
  screen->setObjectName("screen");
  screen->setAlignment(Qt::AlignCenter);
  screen->setMinimumSize(288, 192);
  screen->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);  // the picture follows the window
  input = new QLabel;
  input->setObjectName("input");
  input->setAlignment(Qt::AlignTop | Qt::AlignHCenter);
  input->hide();
  auto* pictures = new QHBoxLayout;
  pictures->addWidget(input);
  pictures->addWidget(screen, 1);
  layout->addLayout(pictures, 1);
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
  speed->setToolTip(tr("Playback speed"));
  format = new QComboBox;
  format->setObjectName("export_format");
  format->setToolTip(tr("The format Export writes, with every setting of the run in its metadata (tags, a PNG text "
                        "chunk, a GIF or JPEG comment, WebP's XMP) and in a .json beside it"));
  export_button = new QPushButton(tr("Export…"));
  frame_label = new QLabel;
  frame_label->setObjectName("frame_label");
  for (QWidget* w : std::initializer_list<QWidget*>{back, play_button, forward, frame_label, loop, speed})
    controls->addWidget(w);
  controls->addStretch();
  cancel_export_button = new QPushButton(tr("Cancel export"));
  cancel_export_button->setObjectName("cancel_export");
  cancel_export_button->hide();
  controls->addWidget(format);
  controls->addWidget(export_button);
  controls->addWidget(cancel_export_button);
  layout->addLayout(controls);
  note = new QLabel;
  note->setObjectName("export_note");
  note->setTextFormat(Qt::RichText);
  connect(note, &QLabel::linkActivated, this, [this](const QString& link) {
    if (const QString why = open_folder(QUrl(link).toLocalFile()); !why.isEmpty())
      note->setText(note->text() + "<br>" + why.toHtmlEscaped());
  });
  note->setWordWrap(true);
  layout->addWidget(note);
  list_formats();

  connect(&timer_, &QTimer::timeout, this, &Player::advance);
  connect(slider, &QSlider::valueChanged, this, &Player::show_frame);
  connect(play_button, &QPushButton::clicked, this, [this] { playing() ? pause() : play(); });
  connect(back, &QPushButton::clicked, this, [this] { show_frame(std::max(0, current_ - 1)); });
  connect(forward, &QPushButton::clicked, this, [this] { show_frame(std::min(frame_count() - 1, current_ + 1)); });
  connect(speed, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { set_fps(fps_); });
  connect(export_button, &QPushButton::clicked, this, &Player::export_dialog);
  export_ = new ClipExport(this);
  opener_ = new LatestTask(this);
  inputs_ = new LatestTask(this);
  connect(cancel_export_button, &QPushButton::clicked, export_, &ClipExport::cancel);
  connect(export_, &ClipExport::progress, this, [this](int written, int total) {
    note->setStyleSheet("");  // a refusal said meanwhile is over
    note->setText(tr("Exporting to %1… %2 of %3").arg(exporting_to_.toHtmlEscaped()).arg(written).arg(total));
  });
  connect(export_, &ClipExport::finished, this, &Player::export_ended);
}

// The formats of the mode: the extension each writes as its data ("/" for a folder of PNG frames).
void Player::list_formats() {
  format->clear();
  if (image_mode_) {
    format->addItem(tr("PNG image"), ".png");
    format->addItem(tr("JPEG image"), ".jpg");
    format->addItem(tr("WebP image"), ".webp");
  } else {
    format->addItem(tr("MP4 (H.264)"), ".mp4");
    format->addItem(tr("WebM (VP9)"), ".webm");
    format->addItem(tr("GIF"), ".gif");
    format->addItem(tr("PNG frames (a folder)"), "/");
  }
}

bool Player::exporting() const { return export_->running(); }

void Player::export_dialog() {
  if (export_->running()) return export_not_started(tr("an export is still running; wait for it, or cancel it"));
  const QString ext = format->currentData().toString();
  const QString base = source_.isEmpty() ? QDir::homePath() : QFileInfo(source_).absolutePath();
  const QString name = base + "/" + (image_mode_ ? "image" : "clip") + (ext == "/" ? "" : ext);
  const QString path = QFileDialog::getSaveFileName(this, tr("Export as %1").arg(format->currentText()), name,
                                                    ext == "/" ? tr("A folder of PNG frames (*)")
                                                               : tr("%1 (*%2)").arg(format->currentText(), ext));
  QString error;
  if (!path.isEmpty() && export_chosen(path, &error).isEmpty()) export_not_started(error);
}

void Player::export_not_started(const QString& why) {
  note->setStyleSheet("color: #c0392b");
  note->setText(tr("Export not started: %1").arg(why.toHtmlEscaped()));
  Q_EMIT export_failed(why);
}

QString Player::export_chosen(const QString& chosen, QString* error) {
  const QString ext = format->currentData().toString();
  QString path = chosen;
  while (path.size() > 1 && path.endsWith('/')) path.chop(1);
  // The selector decides: a name typed with another format's extension gets this one's.
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (QStringList{"mp4", "webm", "gif", "png", "jpg", "jpeg", "webp"}.contains(suffix)) path.chop(suffix.size() + 1);
  path += ext;
  if (frames_.empty() || frames_.front().isNull()) return *error = tr("there are no frames to export"), QString();
  if (export_->running()) return *error = tr("an export is still running; wait for it, or cancel it"), QString();
  exporting_to_ = path;
  note->setStyleSheet("");
  note->setText(tr("Exporting to %1…").arg(path.toHtmlEscaped()));
  export_button->setEnabled(false);
  cancel_export_button->show();
  export_->start(frames_, std::max(0, current_), fps_,
                 job_ ? run_metadata(*job_) : std::map<std::string, std::string>{}, path);
  return path;
}

void Player::export_ended(const QString& path, const QString& error, bool cancelled) {
  export_button->setEnabled(true);
  cancel_export_button->hide();
  note->setStyleSheet("");
  if (cancelled) return note->setText(tr("Export cancelled: nothing was written at %1.").arg(path.toHtmlEscaped()));
  if (!error.isEmpty()) {
    note->setStyleSheet("color: #c0392b");
    note->setText(tr("Export failed: %1").arg(error.toHtmlEscaped()));
    Q_EMIT export_failed(error);
    return;
  }
  const bool frames = path.endsWith('/');
  const QString folder = frames ? path : QFileInfo(path).absolutePath();
  note->setText(tr("Exported to %1 (every setting in its metadata and in %2). <a href=\"%3\">Open folder</a>")
                    .arg(path.toHtmlEscaped(),
                         frames ? tr("the folder's JSON") : QFileInfo(path).fileName().toHtmlEscaped() + ".json",
                         QUrl::fromLocalFile(folder).toString()));
  Q_EMIT exported(path);
}

void Player::set_image_mode(bool image) {
  image_mode_ = image;
  for (QWidget* w :
       std::initializer_list<QWidget*>{slider, back_button, play_button, forward_button, frame_label, loop, speed})
    w->setVisible(!image);
  list_formats();
}

void Player::clear() {
  pause();
  source_.clear();
  job_.reset();
  inputs_->drop();
  input->hide();
  frames_.clear();
  current_ = -1;
  show_frame_number();
  slider->setRange(0, 0);
  screen->clear();
}

void Player::begin(const QString& folder, const plan::JobFile& job, const QString& what) {
  clear();
  source_ = folder;
  set_image_mode(!makes_clips(job.job));
  set_fps(job.job.fps > 0 ? job.job.fps : 8);
  job_ = job;
  title->setText(what);
  note->clear();
  show_input(job.job);
}

void Player::open_run(const RunRecord& r, std::function<void()> shown, std::function<void(const QString&)> failed) {
  const auto job = job_of(r.settings);
  if (!job) {
    opener_->drop();  // a run asked for earlier is no longer wanted either
    return failed(tr("The settings of run %1 cannot be read.").arg(r.id));
  }
  const QString what = tr("Run %1 of %2: \"%3\", seed %4, kept in %5")
                           .arg(r.id)
                           .arg(QDateTime::fromString(r.created, Qt::ISODate).toString("yyyy-MM-dd hh:mm"),
                                r.prompt.left(80))
                           .arg(r.seed)
                           .arg(r.folder);
  const QString gone = tr("Run %1's folder %2 is gone (moved or deleted): nothing to play.").arg(r.id).arg(r.folder);
  const QString none = r.folder.isEmpty()         ? tr("Run %1 kept no frames (it made none).").arg(r.id)
                       : !QDir(r.folder).exists() ? gone
                                                  : tr("Run %1 kept no frames (%2).").arg(r.id).arg(r.folder);
  opener_->start([=, this, folder = r.folder, job = *job](const std::function<bool()>& go_on) -> std::function<void()> {
    auto frames = load_frames(folder, {}, go_on);
    return [=, this, frames = std::move(frames)] {
      if (frames.empty()) return failed(none);
      if (!QDir(folder).exists()) return failed(gone);  // deleted while it was read
      begin(folder, job, what);
      for (int i = 0; i < int(frames.size()); ++i) set_frame(i, frames[size_t(i)]);
      shown();
    };
  });
}

void Player::set_frame(int index, const QImage& frame) {
  if (index < 0) return;
  if (size_t(index) >= frames_.size()) frames_.resize(size_t(index) + 1);
  frames_[size_t(index)] = frame;
  slider->setRange(0, frame_count() - 1);
  if (current_ < 0) show_frame(0);
  show_frame_number();
}

void Player::show_frame_number() {
  frame_label->setText(current_ < 0 ? QString() : tr("frame %1 of %2").arg(current_ + 1).arg(frame_count()));
}

void Player::set_fps(int fps) {
  fps_ = std::max(1, fps);
  static const double factors[] = {0.25, 0.5, 1, 2};
  timer_.setInterval(int(1000.0 / (fps_ * factors[std::max(0, speed->currentIndex())])));
}

void Player::show_frame(int i) {
  if (i < 0 || i >= frame_count() || frames_[size_t(i)].isNull()) return;
  current_ = i;
  show_frame_number();
  const QSignalBlocker block(slider);
  slider->setValue(i);
  screen->setPixmap(QPixmap::fromImage(frames_[size_t(i)]).scaled(screen->size(), Qt::KeepAspectRatio,
                                                                  Qt::SmoothTransformation));
}

void Player::show_input(const plan::JobSpec& job) {
  // The copies the run's folder keeps (what the run read), else the files the job names; read on a thread (a large
  // picture takes a while), stacked: the first picture, then the last.
  QStringList paths, tips;
  for (const auto& picture : kInputPictures) {
    const QString named = QString::fromStdString(job.*picture.path);
    if (named.isEmpty()) continue;  // a run from words alone
    const QString kept = kept_picture(source_, picture);
    paths << (kept.isEmpty() ? named : kept);
    tips << tr("%1: %2").arg(QString::fromStdString(plan::field_label(picture.field)), named);
  }
  input->hide();
  input->setPixmap({});
  input->setToolTip(tips.join('\n'));
  if (paths.isEmpty()) return inputs_->drop();
  inputs_->start([this, paths, background = palette().window().color()](const std::function<bool()>& go_on) {
    QImage stack;
    for (const QString& path : paths) {
      if (!go_on()) break;
      const QImage picture = read_run_picture(path, "--image", nullptr);
      if (picture.isNull()) continue;
      const QImage small = picture.scaledToWidth(kInputWidth, Qt::SmoothTransformation);
      QImage joined(kInputWidth, (stack.isNull() ? 0 : stack.height() + 4) + small.height(), QImage::Format_RGB32);
      joined.fill(background);
      QPainter p(&joined);
      if (!stack.isNull()) p.drawImage(0, 0, stack);
      p.drawImage(0, stack.isNull() ? 0 : stack.height() + 4, small);
      p.end();
      stack = joined;
    }
    return [this, stack] {
      input->setVisible(!stack.isNull());
      input->setPixmap(stack.isNull() ? QPixmap() : QPixmap::fromImage(stack));
    };
  });
}

void Player::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  if (current_ >= 0) show_frame(current_);
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

}  // namespace studio::gui
