// The compose column's pictures for an image-to-video model: the one the clip starts from and, where the model
// can use it, the one it ends on; for a text-to-video model, the family's image-to-video models to use instead.
// Each is a path (typed, chosen, or a file dropped on the field) with a thumbnail of what the model will see:
// the picture stretched to the job's width and height, or scaled to cover them and cropped at the centre
// (plan::Family::crops_picture), as the pipeline resizes it, and a note when that changes its shape. A picture
// changed on disk after it was chosen (an editor saving it again) is read and shown again.
#pragma once
#include <QFileSystemWatcher>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSize>
#include <QWidget>

#include <string>
#include <utility>
#include <vector>

#include "gui/compose/path_edit.h"

namespace studio::gui {

class PictureField : public QWidget {
  Q_OBJECT
 public:
  // `field`: "image" or "last_image", the object names of the path and its thumbnail ("image_thumbnail").
  explicit PictureField(const char* field, QWidget* parent = nullptr);
  QString path() const { return edit->text().trimmed(); }
  void set_path(const QString& path);
  // The job's output size: the thumbnail shows the picture stretched to it.
  void set_output_size(int width, int height);
  // Whether the model crops the picture to the output's shape (else it stretches it).
  void set_crop(bool crop);
  // Whether "Match the picture's shape" is offered where the picture is stretched: for the picture that sizes the
  // output, of a model that takes other sizes.
  void set_shape_offer(bool offer);
  // The picture's own size in pixels (upright, as the model sees it); empty when there is none or it cannot be read.
  QSize picture_size() const { return picture_size_; }
  // Why the run would refuse the file (animated, CMYK, damaged...), in the engine's words; empty when it reads.
  const QString& problem() const { return problem_; }
  // For a model that takes no picture: the family's image-to-video models, each a link (its repository id),
  // shown under the field; empty for one that takes a picture.
  void set_offer(const std::vector<std::pair<QString, QString>>& name_and_repo);

  PathEdit* edit;
  QLabel* thumbnail;  // the picture as the model will see it, or why it cannot be shown
  QLabel* note;       // how the picture's shape changes, when it does
  QPushButton* match_shape;  // shown where the picture is stretched: asks for an output of its shape
  QLabel* offer;      // the image-to-video models to use instead, for a model that takes no picture

 Q_SIGNALS:
  void changed();
  void reread();  // the file changed on disk, its picture's size did not
  void offer_chosen(const QString& repo_id);
  void match_shape_requested();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void show_picture();
  void read_picture();
  void watch();  // the file at path() and its folder, and no other
  QString file_key() const;  // the file at path() as read_key_ names it
  std::string flag_;  // "--image" or "--last_image": how the engine names the file in a refusal
  QString read_key_;  // the file (path, size, time) picture_ was read from
  QFileSystemWatcher watcher_;
  QImage picture_;   // the picture read, at most kKeptSide on a side
  QSize full_size_;  // its own size
  static constexpr int kKeptSide = 512;
  QString problem_;
  int width_ = 0, height_ = 0;
  bool crop_ = false, shape_offer_ = false;
  QSize picture_size_;
};

}  // namespace studio::gui
