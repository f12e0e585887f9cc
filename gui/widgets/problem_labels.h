// Problems from engine/plan shown in the window's words (plan::in_window_words: "Height 200: ..."), in
// one label per group of fields placed below the group: a problem appearing moves nothing above it, so a
// field never slides away from the pointer. Errors in red, warnings in amber, hints in grey.
#pragma once
#include <QLabel>
#include <QString>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan/job.h"

namespace studio::gui {

class ProblemLabels {
 public:
  // The label for the problems of `fields` (plan's field names, e.g. "height"), to go below them. With
  // `reserve_line` it keeps one line's height when it has nothing to say, so that what is below it stays put
  // when a short message comes and goes (the prompt's hint above Generate).
  QLabel* make(const std::vector<std::string>& fields, bool reserve_line = false);
  // Shows the problems of the fields it has a label for; returns the others' errors, in the window's words.
  std::vector<plan::Problem> show(const std::vector<plan::Problem>& errors,
                                  const std::vector<plan::Problem>& warnings = {},
                                  const std::vector<plan::Problem>& hints = {});
  // What is shown for `field` (every kind), one message a line.
  QString text(const std::string& field) const;

 private:
  std::map<std::string, QLabel*> label_of_;  // field -> its group's label
  std::vector<QLabel*> labels_;
  std::set<QLabel*> reserved_;
  std::map<std::string, QString> shown_;  // field -> its messages
};

}  // namespace studio::gui
