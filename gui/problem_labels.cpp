#include "gui/problem_labels.h"

namespace studio::gui {

QLabel* ProblemLabels::make(const std::string& field) {
  auto* l = new QLabel;
  l->setObjectName(QString::fromStdString("problem_" + field));
  l->setWordWrap(true);
  l->setStyleSheet("color: #c0392b;");
  l->hide();
  labels_[field] = l;
  return l;
}

std::vector<plan::Problem> ProblemLabels::show(const std::vector<plan::Problem>& problems) {
  std::map<std::string, QString> text;
  std::vector<plan::Problem> rest;
  for (const auto& p : problems) {
    if (!labels_.count(p.field)) {
      rest.push_back(p);
      continue;
    }
    auto& t = text[p.field];
    t += (t.isEmpty() ? "" : "\n") + QString::fromStdString(p.message);
  }
  for (auto& [field, label] : labels_) {
    label->setText(text[field]);
    label->setVisible(!text[field].isEmpty());
  }
  return rest;
}

QString ProblemLabels::text(const std::string& field) const {
  auto it = labels_.find(field);
  return it == labels_.end() || it->second->isHidden() ? QString() : it->second->text();
}

}  // namespace studio::gui
