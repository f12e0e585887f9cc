#include "gui/widgets/collapsible.h"

#include <QEvent>
#include <QLabel>
#include <QVBoxLayout>

namespace studio::gui {

Collapsible::Collapsible(const QString& title, QWidget* body, bool open, QWidget* parent)
    : QWidget(parent), content(body) {
  header = new QToolButton;
  header->setObjectName("section_" + title);
  header->setText(title);
  header->setCheckable(true);
  header->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  header->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  header->setStyleSheet("QToolButton { border: none; font-weight: bold; text-align: left; }");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 4, 0, 0);
  layout->addWidget(header);
  layout->addWidget(content);
  connect(header, &QToolButton::toggled, this, &Collapsible::set_open);
  set_open(open);
  for (auto* l : content->findChildren<QLabel*>())
    if (l->objectName().startsWith("problems_")) l->installEventFilter(this);
}

bool Collapsible::eventFilter(QObject*, QEvent* event) {
  if (event->type() == QEvent::ShowToParent && !is_open()) set_open(true);
  return false;
}

void Collapsible::set_open(bool open) {
  const QSignalBlocker quiet(header);
  header->setChecked(open);
  header->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
  content->setVisible(open);
}

}  // namespace studio::gui
