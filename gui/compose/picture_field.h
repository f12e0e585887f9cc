// The compose column's pictures for an image-to-video model: the one the clip starts from and, where the model
// can use it, the one it ends on. Each is a path (typed, chosen, or a file dropped on the field) with a
// thumbnail of what the model will see: the picture stretched to the job's width and height, as the
// pipeline resizes it, and a note when that changes its shape.
#pragma once
#include <QLabel>
#include <QWidget>

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

  PathEdit* edit;
  QLabel* thumbnail;  // the picture as the model will see it, or why it cannot be shown
  QLabel* note;       // how the picture's shape changes, when it does

 Q_SIGNALS:
  void changed();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void show_picture();
  int width_ = 0, height_ = 0;
};

}  // namespace studio::gui
