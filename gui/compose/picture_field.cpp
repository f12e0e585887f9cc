#include "gui/compose/picture_field.h"

#include <QDateTime>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMimeData>
#include <QPushButton>
#include <QVBoxLayout>

#include <cmath>

#include "gui/widgets/run_picture.h"

namespace studio::gui {

namespace {

constexpr int kThumbnailHeight = 96;

QString local_file(const QMimeData* data) {
  if (!data || !data->hasUrls() || data->urls().size() != 1 || !data->urls().front().isLocalFile()) return {};
  return data->urls().front().toLocalFile();
}

}  // namespace

PictureField::PictureField(const char* field, QWidget* parent) : QWidget(parent), flag_("--" + std::string(field)) {
  setAcceptDrops(true);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  auto* row = new QHBoxLayout;
  edit = new PathEdit;
  edit->setObjectName(field);
  edit->setPlaceholderText(tr("a PNG, JPEG or WebP file: choose one or drop it here"));
  edit->setClearButtonEnabled(true);  // a picture left from another model goes with one click
  auto* browse = new QPushButton(tr("Choose…"));
  row->addWidget(edit, 1);
  row->addWidget(browse);
  column->addLayout(row);
  thumbnail = new QLabel;
  thumbnail->setObjectName(QString(field) + "_thumbnail");
  note = new QLabel;
  note->setWordWrap(true);
  note->setStyleSheet("color: palette(placeholder-text);");
  offer = new QLabel;
  offer->setObjectName(QString(field) + "_offer");
  offer->setWordWrap(true);
  offer->setTextFormat(Qt::RichText);
  offer->hide();
  match_shape = new QPushButton(tr("Match the picture's shape"));
  match_shape->setObjectName(QString(field) + "_match_shape");
  match_shape->setToolTip(tr("Sets the width and height to the picture's shape, about as many pixels as now, as "
                             "the model's image-to-video examples size the video"));
  match_shape->hide();
  auto* note_row = new QHBoxLayout;
  note_row->addWidget(note, 1);
  note_row->addWidget(match_shape, 0, Qt::AlignTop);
  column->addWidget(thumbnail);
  column->addLayout(note_row);
  column->addWidget(offer);
  connect(offer, &QLabel::linkActivated, this, &PictureField::offer_chosen);
  connect(match_shape, &QPushButton::clicked, this, &PictureField::match_shape_requested);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, tr("Choose a picture"), path(),
                                                      tr("Pictures (*.png *.jpg *.jpeg *.webp *.bmp *.tif *.tiff)"));
    if (!file.isEmpty()) set_path(file);
  });
  connect(edit, &QLineEdit::editingFinished, this, [this] {
    watch();
    show_picture();
    Q_EMIT changed();
  });
  // The clear button empties the field without ending an edit (it is an edit, as typing is; set_path is not): the
  // picture is gone at once.
  connect(edit, &QLineEdit::textEdited, this, [this](const QString& text) {
    if (text.isEmpty()) set_path({});
  });
  // An editor that saves by writing a new file and renaming it over the old one ends the watch on the old one:
  // the watch follows the path, and the folder's change tells when the new file arrives.
  // A picture of a new shape is as a new picture (the output may follow its shape); the same shape saved again only
  // asks for the job to be checked again, keeping a size the user chose.
  const auto on_disk_change = [this] {
    watch();
    if (path().isEmpty() || file_key() == read_key_) return;  // another file of the folder
    const QSize before = picture_size_;
    show_picture();
    if (picture_size_ != before) Q_EMIT changed();
    else Q_EMIT reread();
  };
  connect(&watcher_, &QFileSystemWatcher::fileChanged, this, on_disk_change);
  connect(&watcher_, &QFileSystemWatcher::directoryChanged, this, on_disk_change);
  show_picture();
}

void PictureField::watch() {
  const QFileInfo file(path());
  QStringList wanted;
  if (!path().isEmpty() && file.dir().exists()) wanted << file.absolutePath();
  if (file.isFile()) wanted << file.absoluteFilePath();
  QStringList watched = watcher_.files() + watcher_.directories();
  for (const auto& w : watched)
    if (!wanted.contains(w)) watcher_.removePath(w);
  for (const auto& w : wanted)
    if (!watched.contains(w)) watcher_.addPath(w);
}

void PictureField::set_path(const QString& p) {
  edit->setText(p);
  watch();
  show_picture();
  Q_EMIT changed();
}

void PictureField::set_offer(const std::vector<std::pair<QString, QString>>& name_and_repo) {
  QStringList links;
  for (const auto& [name, repo] : name_and_repo)
    links << QString("<a href=\"%1\">%2</a>").arg(repo.toHtmlEscaped(), name.toHtmlEscaped());
  offer->setText(links.isEmpty() ? QString()
                                 : tr("This model starts from words alone. To animate a picture, use an "
                                      "image-to-video model of its family: %1 (the Models tab downloads it).")
                                       .arg(links.join(", ")));
  offer->setVisible(!links.isEmpty());
}

void PictureField::set_output_size(int width, int height) {
  if (width == width_ && height == height_) return;
  width_ = width, height_ = height;
  show_picture();
}

void PictureField::set_crop(bool crop) {
  if (crop == crop_) return;
  crop_ = crop;
  show_picture();
}

void PictureField::dragEnterEvent(QDragEnterEvent* e) {
  if (!local_file(e->mimeData()).isEmpty()) e->acceptProposedAction();
}

void PictureField::dropEvent(QDropEvent* e) {
  set_path(local_file(e->mimeData()));
  e->acceptProposedAction();
}

void PictureField::set_shape_offer(bool offer) {
  if (offer == shape_offer_) return;
  shape_offer_ = offer;
  show_picture();
}

void PictureField::show_picture() {
  thumbnail->clear();
  note->clear();
  note->setStyleSheet("color: palette(placeholder-text);");
  match_shape->hide();
  picture_size_ = {};
  thumbnail->setVisible(!path().isEmpty());
  note->setVisible(!path().isEmpty());
  if (path().isEmpty()) return;
  read_picture();
  if (picture_.isNull()) {
    thumbnail->setText(problem_.isEmpty() ? tr("Cannot show this file: there is none at this path.")
                                          : tr("Cannot show this file: the run would refuse it (below)."));
    return;
  }
  const QSize full = picture_size_ = full_size_;
  // The pipeline stretches the picture to the output size, or covers it and crops the centre: show that, at
  // the thumbnail's height (the same shape as the output, so covering it there crops the same part).
  const int w = width_ > 0 ? width_ : full.width(), h = height_ > 0 ? height_ : full.height();
  const int shown_width = std::max(1, int(std::lround(double(kThumbnailHeight) * w / h)));
  const double from = double(full.width()) / full.height(), to = double(w) / h;
  QImage shown;
  if (crop_) {
    const QImage covering =
        picture_.scaled(shown_width, kThumbnailHeight, Qt::KeepAspectRatioByExpanding, Qt::SmoothTransformation);
    shown = covering.copy((covering.width() - shown_width) / 2, (covering.height() - kThumbnailHeight) / 2,
                          shown_width, kThumbnailHeight);
  } else {
    shown = picture_.scaled(shown_width, kThumbnailHeight, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
  }
  thumbnail->setPixmap(QPixmap::fromImage(shown));
  QString text = tr("%1 x %2").arg(full.width()).arg(full.height());
  if (std::abs(from / to - 1) > 0.01 && crop_)
    text += tr(", scaled to cover the output's %1 x %2 and cropped at the centre").arg(w).arg(h);
  else if (std::abs(from / to - 1) > 0.01) {
    text += tr(", stretched to the output's %1 x %2: its shape changes").arg(w).arg(h);
    note->setStyleSheet("color: #b9770e;");  // the warning colour of the token counts
    match_shape->setVisible(shape_offer_);
  }
  else if (full.width() != w)
    text += tr(", resized to %1 x %2").arg(w).arg(h);
  note->setText(text);
}

QString PictureField::file_key() const {
  const QFileInfo file(path());
  return file.absoluteFilePath() + "|" + QString::number(file.size()) + "|" +
         QString::number(file.lastModified().toMSecsSinceEpoch());
}

void PictureField::read_picture() {
  // Read again only when the file changes: the thumbnail is redrawn at every change of the output's size.
  const QFileInfo file(path());
  const QString key = file_key();
  if (key == read_key_) return;
  read_key_ = key;
  picture_ = {};
  problem_.clear();
  if (!file.isFile()) return;  // the job's check names a missing file
  // The run's refusals (animated, CMYK, 16-bit, damaged, enormous) before Generate rather than after it starts.
  picture_ = read_run_picture(path(), flag_, &problem_);
  full_size_ = picture_.size();
  // Kept small: the thumbnail is redrawn at every step of the output's size (a large photo took a good part of a
  // second each time); its size is what the notes and the job use.
  if (picture_.width() > kKeptSide || picture_.height() > kKeptSide)
    picture_ = picture_.scaled(kKeptSide, kKeptSide, Qt::KeepAspectRatio, Qt::SmoothTransformation);
}

}  // namespace studio::gui
