// Problems from engine/plan shown next to the field that causes them: a red label under each field's
// widget, hidden while the field is fine.
#pragma once
#include <QLabel>
#include <QString>

#include <map>
#include <string>
#include <vector>

#include "plan/job.h"

namespace studio::gui {

class ProblemLabels {
 public:
  // A label for `field` (plan's field name, e.g. "height"), to be placed under its widget.
  QLabel* make(const std::string& field);
  // Shows the problems of the fields it knows; returns the others.
  std::vector<plan::Problem> show(const std::vector<plan::Problem>& problems);
  QString text(const std::string& field) const;

 private:
  std::map<std::string, QLabel*> labels_;
};

}  // namespace studio::gui
