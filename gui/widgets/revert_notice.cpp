#include "gui/widgets/revert_notice.h"

#include <QAbstractSpinBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>

#include "plan/field_labels.h"

namespace studio::gui {

namespace {

// "1 to 1000", from the box's own limits.
QString range_of(const QAbstractSpinBox* box) {
  if (const auto* s = qobject_cast<const QSpinBox*>(box)) return QString("%1 to %2").arg(s->minimum()).arg(s->maximum());
  if (const auto* d = qobject_cast<const QDoubleSpinBox*>(box))
    return QString("%1 to %2").arg(d->minimum(), 0, 'f', d->decimals()).arg(d->maximum(), 0, 'f', d->decimals());
  return {};
}

}  // namespace

void RevertNotice::watch(QWidget* root) {
  for (auto* box : root->findChildren<QAbstractSpinBox*>()) {
    const std::string field = box->objectName().toStdString();
    auto* edit = box->findChild<QLineEdit*>();
    if (field.empty() || !edit) continue;
    connect(edit, &QLineEdit::textEdited, this, [this, field](const QString& text) {
      typed_[field] = text;
      if (said_.erase(field)) Q_EMIT changed();
    });
    connect(box, &QAbstractSpinBox::editingFinished, this, [this, field, box, edit] {
      const auto it = typed_.find(field);
      if (it == typed_.end()) return;
      const QString typed = it->second.trimmed();
      typed_.erase(it);
      if (typed.isEmpty() || typed == edit->text().trimmed()) return;  // taken as typed
      said_[field] = QObject::tr("%1 %2: not taken, the field takes %3; it stays %4")
                         .arg(QString::fromStdString(plan::field_label(field)), typed, range_of(box), box->text())
                         .toStdString();
      Q_EMIT changed();
    });
  }
}

std::vector<plan::Problem> RevertNotice::problems() const {
  std::vector<plan::Problem> out;
  for (const auto& [field, why] : said_) out.push_back({field, why});
  return out;
}

}  // namespace studio::gui
