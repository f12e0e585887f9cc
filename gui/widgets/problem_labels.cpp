#include "gui/widgets/problem_labels.h"

#include "plan/field_labels.h"

namespace studio::gui {

QLabel* ProblemLabels::make(const std::vector<std::string>& fields, bool reserve_line) {
  auto* l = new QLabel;
  l->setObjectName(QString::fromStdString("problems_" + fields.front()));
  l->setWordWrap(true);
  l->setTextFormat(Qt::RichText);
  if (reserve_line) {
    reserved_.insert(l);
    l->setMinimumHeight(l->fontMetrics().lineSpacing());
  } else {
    l->hide();
  }
  for (const auto& f : fields) label_of_[f] = l;
  labels_.push_back(l);
  return l;
}

std::vector<plan::Problem> ProblemLabels::show(const std::vector<plan::Problem>& errors,
                                               const std::vector<plan::Problem>& warnings,
                                               const std::vector<plan::Problem>& hints) {
  std::map<QLabel*, QString> html;
  std::vector<plan::Problem> rest;
  shown_.clear();
  auto put = [&](const std::vector<plan::Problem>& problems, const char* colour, bool keep_rest) {
    for (const auto& p : problems) {
      const QString words = QString::fromStdString(plan::in_window_words(p.message));
      auto it = label_of_.find(p.field);
      if (it == label_of_.end()) {
        if (keep_rest) rest.push_back({p.field, words.toStdString()});
        continue;
      }
      html[it->second] += QString("<div style='color:%1'>%2</div>").arg(colour, words.toHtmlEscaped());
      auto& t = shown_[p.field];
      t += (t.isEmpty() ? "" : "\n") + words;
    }
  };
  put(errors, "#c0392b", true);
  put(warnings, "#b9770e", false);
  put(hints, "#808080", false);
  for (QLabel* l : labels_) {
    l->setText(html[l]);
    l->setVisible(!html[l].isEmpty() || reserved_.count(l));
  }
  return rest;
}

QString ProblemLabels::text(const std::string& field) const {
  auto it = shown_.find(field);
  return it == shown_.end() ? QString() : it->second;
}

}  // namespace studio::gui
