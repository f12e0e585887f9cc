// The settings' names in the studio's words, and what each does: one table shared by the studio's labels,
// tooltips and messages. A plan::Problem names its field by its flag (the launcher prints it as is);
// in_window_words() rewrites the flags of a message into these labels ("--width 17: ..." -> "Width 17: ...").
// Torch-free and Qt-free.
#pragma once
#include <string>

namespace studio::plan {

struct FieldText {
  const char* field;  // the flag without its dashes, as Problem::field names it ("num_inference_steps")
  const char* label;  // as the window shows it ("Steps")
  const char* help;   // what it does and when to use it (the tooltip)
};

// The field's entry; nullptr for a field the table does not know.
const FieldText* field_text(const std::string& field);
// Its label; for an unknown field, the name with spaces ("max_sequence_length" -> "max sequence length").
std::string field_label(const std::string& field);
// Its help, "" when unknown.
std::string field_help(const std::string& field);
// `message` with every "--flag" written as the flag's label.
std::string in_window_words(const std::string& message);

}  // namespace studio::plan
