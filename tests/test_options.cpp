// The options table (plan/options.h) as each of its readers sees it: the command line sets every option
// from its text and says why a value is refused, --help lists every option, the job file keeps every
// value, the studio has a label and a tooltip for each, and ParallelConfig::flags writes the parallel ones.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/field_labels.h"
#include "plan/job_file.h"
#include "plan/nearest_names.h"
#include "plan/options.h"
#include "support.h"
#include "workers/launch/launch_args.h"

using namespace studio;

namespace {

// A value for the option other than its default, as the command line writes it.
std::string other_value(const plan::Option& o) {
  if (o.spec.kind == plan::OptionKind::Switch) return "";
  if (o.spec.kind == plan::OptionKind::Text) return std::string("x-") + o.spec.key;
  if (o.spec.kind == plan::OptionKind::Number) return "2.5";
  return std::to_string(o.spec.min + 2 <= o.spec.max ? o.spec.min + 2 : o.spec.max);
}

TEST(Options, every_option_has_one_key_a_label_a_tooltip_and_help) {
  std::set<std::string> keys;
  for (const auto& o : plan::options()) {
    SCOPED_TRACE(o.spec.key);
    EXPECT_TRUE(keys.insert(o.spec.key).second) << "two options are named " << o.spec.key;
    EXPECT_TRUE(std::regex_match(o.spec.key, std::regex("[a-z][a-z0-9_]*")));
    EXPECT_EQ(plan::field_label(o.spec.key), o.label);
    EXPECT_FALSE(std::string(o.label).empty());
    EXPECT_FALSE(plan::field_help(o.spec.key).empty());
    EXPECT_FALSE(std::string(o.spec.usage).empty());
    EXPECT_EQ(o.spec.kind == plan::OptionKind::Switch, std::string(o.spec.value).empty());
    if (o.shown_with) EXPECT_NE(plan::option(o.shown_with), nullptr);
  }
}

// Each option given on the command line lands in the job file's field of the same name and reads back.
TEST(Options, the_command_line_and_the_job_file_carry_every_option) {
  for (const auto& o : plan::options()) {
    if (std::string(o.spec.key) == "model") continue;  // --model resolves a Hub name: test_hub
    SCOPED_TRACE(o.spec.key);
    std::vector<std::string> argv{std::string("--") + o.spec.key};
    if (o.spec.kind != plan::OptionKind::Switch) argv.push_back(other_value(o));
    const auto args = workers::parse_launch_args(argv);
    const plan::JobFile given{args.job, args.parallel}, defaults{};
    const auto value = plan::option_value(o, given);
    EXPECT_NE(value, plan::option_value(o, defaults)) << "--" << o.spec.key << " changed nothing";
    const auto again = plan::job_file_from_json(plan::to_json(given), "job.json");
    EXPECT_EQ(plan::option_value(o, again), value);
    EXPECT_EQ(nlohmann::json::parse(plan::to_json(given))[o.spec.key], value);
  }
}

TEST(Options, a_value_the_command_line_cannot_read_names_the_flag_and_what_would_work) {
  for (const auto& o : plan::options()) {
    if (o.spec.kind != plan::OptionKind::Integer && o.spec.kind != plan::OptionKind::Number) continue;
    SCOPED_TRACE(o.spec.key);
    const std::string flag = std::string("--") + o.spec.key;
    const std::string bad = flag + " 'lots'", hint = "expected e.g. " + flag + " " + o.spec.example;
    EXPECT_TRUE(test::throws_with<workers::ArgError>([&] { workers::parse_launch_args({flag, "lots"}); },
                                                     {bad.c_str(), hint.c_str()}));
    const std::string range = "expected " + std::to_string(o.spec.min) + " to " + std::to_string(o.spec.max);
    if (o.spec.kind == plan::OptionKind::Integer)
      EXPECT_TRUE(test::throws_with<workers::ArgError>(
          [&] { workers::parse_launch_args({flag, std::to_string(o.spec.min - 1)}); }, {"out of range", range.c_str()}));
  }
}

// --help lists every option of the table, and every flag it names is one the parser knows.
TEST(Options, help_lists_every_option_and_only_options) {
  const std::string help = workers::launch_usage();
  for (const auto& o : plan::options())
    EXPECT_TRUE(test::contains(help, std::string("  --") + o.spec.key + " ")) << o.spec.key;
  const std::regex flag(R"(--[a-z][a-z0-9_]*)");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), flag); it != std::sregex_iterator(); ++it) {
    const std::string f = it->str();
    if (f == "--help" || f == "--version" || f == "--job") continue;  // --job: dit-worker's, named in --write_job
    try {
      workers::parse_launch_args({f});
    } catch (const workers::ArgError& e) {
      EXPECT_FALSE(test::contains(e.what(), "unknown option")) << f << " is in --help but not an option";
    }
  }
  for (const auto& line : {"usage: dit-launch", "Exit status:"}) EXPECT_TRUE(test::contains(help, line)) << line;
}

TEST(Options, parallel_flags_are_written_from_the_table) {
  plan::ParallelConfig p;
  EXPECT_EQ(p.flags(), "(no parallel flags)");
  p.ulysses_degree = 2;
  p.use_cfg_parallel = true;
  EXPECT_EQ(p.flags(), "--ulysses_degree 2 --use_cfg_parallel");
  p = {};
  p.pipefusion_parallel_degree = 2;
  p.use_parallel_vae = true;
  EXPECT_EQ(p.flags(), "--pipefusion_parallel_degree 2 --num_pipeline_patch 1 --warmup_steps 1 --use_parallel_vae");
  // The flags read back as the same configuration.
  p.num_pipeline_patch = 4;
  p.data_parallel_degree = 3;
  std::vector<std::string> argv;
  const std::string flags = p.flags();
  for (size_t i = 0, j; i < flags.size(); i = j + 1) {
    j = flags.find(' ', i);
    if (j == std::string::npos) j = flags.size();
    argv.push_back(flags.substr(i, j - i));
  }
  EXPECT_TRUE(workers::parse_launch_args(argv).parallel == p) << flags;
}

// A flag given twice with two values, or a setting the configuration has no use for, is noted before the run: a
// flag that silently does nothing looks like one that worked. --lora adds a LoRA each time, and is not noted.
TEST(Options, flags_given_twice_and_settings_without_use_are_noted) {
  auto args = workers::parse_launch_args({"--num_inference_steps", "4", "--lora", "a.safetensors", "--lora",
                                          "b.safetensors", "--num_inference_steps=8", "--use_cfg_parallel",
                                          "--use_cfg_parallel", "--seed", "3", "--seed", "3"});
  ASSERT_EQ(args.notes.size(), 1u);
  EXPECT_EQ(args.notes[0], "--num_inference_steps is given twice (4, then 8); the last counts");
  EXPECT_EQ(args.job.num_inference_steps, 8);
  args = workers::parse_launch_args({"--warmup_steps", "3", "--num_pipeline_patch", "2", "--use_parallel_vae"});
  workers::note_unused_settings(args);
  ASSERT_EQ(args.notes.size(), 3u);
  EXPECT_NE(args.notes[0].find("--warmup_steps 3 is PipeFusion's"), std::string::npos) << args.notes[0];
  EXPECT_NE(args.notes[1].find("--num_pipeline_patch 2 is PipeFusion's"), std::string::npos) << args.notes[1];
  EXPECT_NE(args.notes[2].find("--use_parallel_vae divides the decoding among the ranks; this run has one"),
            std::string::npos) << args.notes[2];
  args = workers::parse_launch_args({"--pipefusion_parallel_degree", "2", "--warmup_steps", "3", "--use_parallel_vae"});
  workers::note_unused_settings(args);
  EXPECT_TRUE(args.notes.empty()) << args.notes.front();
}

// A mistyped flag or job file field names what was most likely meant: a letter or two off, or a part of a
// longer name; nothing when nothing is near.
TEST(Options, a_mistyped_name_says_what_was_meant) {
  const auto refused = [](const std::vector<std::string>& argv) {
    try {
      workers::parse_launch_args(argv);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(refused({"--num_inference_step", "4"}),
            "unknown option '--num_inference_step'; did you mean --num_inference_steps? (dit-launch --help lists the "
            "options)");
  EXPECT_TRUE(test::contains(refused({"--hieght=480"}), "'--hieght'; did you mean --height?")) << refused({"--hieght"});
  EXPECT_TRUE(test::contains(refused({"--ulysses", "2"}), "did you mean --ulysses_degree?"));
  EXPECT_EQ(refused({"--qwertyuiop"}), "unknown option '--qwertyuiop' (dit-launch --help lists the options)");
  EXPECT_EQ(plan::nearest_names("STEPS", {"warmup_steps", "seed", "num_inference_steps"}),
            (std::vector<std::string>{"warmup_steps", "num_inference_steps"}));  // contained, shorter first
  EXPECT_EQ(plan::did_you_mean("lst", {"list", "known", "last"}, ""), "; did you mean list or last?");
  EXPECT_EQ(plan::did_you_mean("ab", {"abcdef"}), "");  // too short to be a part that says anything

  // A job file a person wrote: a field that is no setting would be dropped without a word.
  const std::string text = R"({"prompt": "a boat", "num_inference_step": 4})";
  try {
    plan::job_file_from_json(text, "job.json");
    ADD_FAILURE() << "a field that is no setting was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "job.json: field 'num_inference_step' is not a job setting of DiT Studio " STUDIO_VERSION
                                     "; did you mean num_inference_steps? (a job of a newer version needs that "
                                     "version's dit-worker; a job's fields are dit-launch's job flags without the "
                                     "dashes)");
  }
  // The studio's own records of another version's settings: what this one knows is read, the rest skipped.
  EXPECT_EQ(plan::job_file_from_json(text, "history", plan::UnknownKeys::Skipped).job.prompt, "a boat");
  // A worker is handed only what differs from the defaults: an older worker reads a job that sets nothing it lacks.
  plan::JobFile f;
  f.job.prompt = "a boat";
  f.parallel.ulysses_degree = 2;
  EXPECT_EQ(nlohmann::json::parse(plan::to_worker_json(f)),
            (nlohmann::json{{"prompt", "a boat"}, {"ulysses_degree", 2}}));
  EXPECT_GT(nlohmann::json::parse(plan::to_json(f)).size(), 2u);  // what the studio keeps: every setting
}

}  // namespace
