#include "plan/field_labels.h"

#include <cctype>
#include <iterator>

#include "plan/options.h"

namespace studio::plan {

namespace {

struct FieldText {
  const char* field;  // as Problem::field or the studio names it
  const char* label;  // as the window shows it
  const char* help;   // what it does and when to use it (the tooltip)
};

const FieldText kFields[] = {
    {"model_dir", "Model folder", "A diffusers model folder (model_index.json and its parts)."},
    {"seed_mode", "Seed mode",
     "Fixed: every run uses the seed shown. Random: a new seed each run. +1: the next seed each run, to go "
     "through takes in order."},
    {"preset", "Preset",
     "Size, length and steps together: the model's own size, other shapes with about as many pixels, and a "
     "quick draft. Says Custom once a field differs from every preset."},
    {"step_cache", "Step cache",
     "Reuses the blocks' work on steps that change little: faster, and the result drifts from the uncached "
     "one as the threshold rises. First-Block Cache decides after the first block; TeaCache before any, from "
     "the model's timestep signal. Not with PipeFusion."},
    {"devices", "Devices",
     "The GPUs the ranks run on, one process each (uncheck one to leave it free); with no GPU, the ranks run "
     "as processes on the CPU."},
    {"worker", "Worker", "The dit-worker program that runs the ranks, and what it was built with."},
    {"world_size", "Processes", "The ranks the configuration needs: data x CFG x PipeFusion x Ring x Ulysses."},
    {"memory", "Memory", "The estimated memory of each rank against what each device has."},
    {"oversubscribe", "Oversubscribe",
     "On the CPU: lets the configuration ask for more processes than the CPU has cores. They share the cores, "
     "so each step is slower; for trying a configuration meant for more devices."},
};

bool flag_char(char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }

const FieldText* field_text(const std::string& field) {
  for (const auto& f : kFields)
    if (field == f.field) return &f;
  return nullptr;
}

}  // namespace

std::string field_label(const std::string& field) {
  if (const auto* o = option(field)) return o->label;
  if (const auto* f = field_text(field)) return f->label;
  std::string out = field;
  for (char& c : out)
    if (c == '_') c = ' ';
  return out;
}

std::string field_help(const std::string& field) {
  if (const auto* o = option(field)) return o->help;
  const auto* f = field_text(field);
  return f ? f->help : "";
}

std::string in_window_words(const std::string& message) {
  std::string out;
  for (size_t i = 0; i < message.size();) {
    // A flag: "--" then a lower-case name, not inside a word ("a--b" stays).
    const bool starts = message.compare(i, 2, "--") == 0 && i + 2 < message.size() && flag_char(message[i + 2]) &&
                        (i == 0 || !std::isalnum(static_cast<unsigned char>(message[i - 1])));
    if (!starts) {
      out += message[i++];
      continue;
    }
    size_t end = i + 2;
    while (end < message.size() && flag_char(message[end])) ++end;
    out += field_label(message.substr(i + 2, end - i - 2));
    i = end;
  }
  return out;
}

}  // namespace studio::plan
