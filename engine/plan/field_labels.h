// The settings' names in the studio's words, and what each does, for the studio's labels, tooltips and
// messages: a job option's from the options table (plan/options.h), and here the few fields the studio shows
// that are not options (the preset, the seed mode, the devices, ...). A plan::Problem names its field by its
// flag (the launcher prints it as is); in_window_words() rewrites the flags of a message into these labels
// ("--width 17: ..." -> "Width 17: ..."). Torch-free and Qt-free.
#pragma once
#include <string>

namespace studio::plan {

// Its label; for an unknown field, the name with spaces ("max_sequence_length" -> "max sequence length").
std::string field_label(const std::string& field);
// Its help, "" when unknown.
std::string field_help(const std::string& field);
// `message` with every "--flag" written as the flag's label.
std::string in_window_words(const std::string& message);

}  // namespace studio::plan
