#include "gui/compose/path_edit.h"

#include <QPainter>
#include <QStyle>
#include <QStyleOptionFrame>

namespace studio::gui {

namespace {

QRect text_rect(const QLineEdit* e, const QStyleOptionFrame& opt) {
  return e->style()->subElementRect(QStyle::SE_LineEditContents, &opt, e).adjusted(2, 0, -2, 0);
}

}  // namespace

PathEdit::PathEdit(QWidget* parent) : QLineEdit(parent) {
  connect(this, &QLineEdit::textChanged, this, [this](const QString& t) { setToolTip(t); });
}

QString PathEdit::shown_text() const {
  if (hasFocus()) return text();
  QStyleOptionFrame opt;
  initStyleOption(&opt);
  return fontMetrics().elidedText(text(), Qt::ElideMiddle, text_rect(this, opt).width());
}

void PathEdit::paintEvent(QPaintEvent* e) {
  if (hasFocus() || text().isEmpty()) return QLineEdit::paintEvent(e);
  QPainter p(this);
  QStyleOptionFrame opt;
  initStyleOption(&opt);
  style()->drawPrimitive(QStyle::PE_PanelLineEdit, &opt, &p, this);
  p.setPen(palette().color(isEnabled() ? QPalette::Active : QPalette::Disabled, QPalette::Text));
  p.drawText(text_rect(this, opt), Qt::AlignVCenter | Qt::AlignLeft, shown_text());
}

}  // namespace studio::gui
