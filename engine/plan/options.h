// Every setting of a job and of its parallel configuration, once, as llama.cpp's common/arg.cpp keeps its
// flags: the flag (the job file's key is the same name without the dashes, and Problem::field names it),
// the value it takes and the range the command line accepts, its line in dit-launch --help, and its label
// and tooltip in the studio's words. The launcher's parser and --help, the job file, the studio's labels
// and tooltips, the history's sidecar and ParallelConfig::flags all read this table. Torch-free, Qt-free.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/job_file.h"

namespace studio::plan {

enum class OptionKind { Text, Integer, Number, Switch };

// Where dit-launch --help lists an option (the launcher writes each section's heading).
enum class HelpSection { Job, Memory, Caching, Parallel, Choosing, Decoding, Running };

// What the command line needs to know of an option: the launcher's own options (--worker, --nnodes, ...)
// are described the same way in workers/launch/launch_args.cpp.
struct OptionSpec {
  const char* key;         // "num_inference_steps": the flag without "--"
  OptionKind kind;
  const char* value;       // what --help writes after the flag ("N", "FILE"); "" for a switch
  long long min, max;      // an Integer's range on the command line
  const char* example;     // a value that works, for messages ("50")
  HelpSection section;
  const char* usage;       // its --help text, unwrapped
};

template <class Member>
struct member_class;
template <class Class, class T>
struct member_class<T Class::*> {
  using type = Class;
};
template <class Member>
using member_class_t = typename member_class<Member>::type;

using OptionMember = std::variant<std::string JobSpec::*, int JobSpec::*, uint64_t JobSpec::*, double JobSpec::*,
                                  bool JobSpec::*, int ParallelConfig::*, bool ParallelConfig::*>;

struct Option {
  OptionSpec spec;
  OptionMember member;
  const char* label;  // as the studio shows it ("Steps")
  const char* help;   // its tooltip: what it does and when to use it
  // A parallel degree printed by ParallelConfig::flags whenever this other option is above 1 (PipeFusion's
  // patches and warm-up), and never otherwise; null: printed when it differs from its default.
  const char* shown_with = nullptr;
  // A flag that may be given several times, each value added to a comma-separated list (--lora).
  bool repeated = false;
};

// The table, in the order ParallelConfig::flags and the job file list the options.
const std::vector<Option>& options();
// The option of that key; nullptr if none.
const Option* option(const std::string& key);

// Calls fn with the option's field in `f` (a JobSpec's or a ParallelConfig's member, as its type).
template <class File, class Fn>
void with_field(const Option& o, File& f, Fn&& fn) {
  std::visit(
      [&](auto member) {
        if constexpr (std::is_same_v<member_class_t<decltype(member)>, JobSpec>) fn(f.job.*member);
        else fn(f.parallel.*member);
      },
      o.member);
}

// The option's value in `f` as JSON; null for a number left unset (NaN: the model's or the method's default).
nlohmann::json option_value(const Option& o, const JobFile& f);
// Sets the option in `f` from the command line's text (ranges checked; InputError in the flag's words:
// "--seed 'x': not an integer; expected e.g. --seed 42"). A switch takes "".
void set_option_text(const Option& o, JobFile& f, const std::string& text);

// The command line's reading of a number: InputError "--flag 'x': not an integer; expected e.g. --flag 50",
// "--flag 0: out of range; expected 1 to 1024".
long long parse_integer(const std::string& flag, const std::string& text, long long min, long long max,
                        const char* example);
double parse_number(const std::string& flag, const std::string& text, const char* example);

// "--flag VALUE" padded, then the usage wrapped under it: dit-launch --help's line for the option.
std::string usage_line(const OptionSpec& o);
// `text` in lines of --help's width, the first starting at column `start`, the others after `indent`
// spaces; ends with a newline.
std::string wrapped(const std::string& text, size_t indent = 0, size_t start = 0);

}  // namespace studio::plan
