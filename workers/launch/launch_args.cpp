#include "workers/launch/launch_args.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <filesystem>
#include <functional>

#include "hub/cache.h"
#include "plan/error.h"
#include "plan/families/registry.h"
#include "plan/nearest_names.h"
#include "plan/options.h"
#include "plan/output_folder.h"

namespace studio::workers {

namespace {

// --model ORG/NAME that is no folder here: the Hugging Face cache's snapshot, as from_pretrained finds it.
std::string model_folder(const std::string& v) {
  try {
    return hub::local_model_dir(v);
  } catch (const InputError& e) {
    throw ArgError(std::string("--model ") + e.what());
  }
}

int integer(const plan::OptionSpec& o, const std::string& v) {
  return int(plan::parse_integer(std::string("--") + o.key, v, o.min, o.max, o.example));
}

double seconds(const plan::OptionSpec& o, const std::string& v) {
  const std::string flag = std::string("--") + o.key;
  const double s = plan::parse_number(flag, v, o.example);
  if (s < 1 || s > 86400) throw ArgError(flag + " " + v + ": out of range; expected 1 to 86400 seconds");
  return s;
}

// The launcher's own options, described as the job's are (plan/options.h) and listed with them in --help.
struct LauncherOption {
  plan::OptionSpec spec;
  std::function<void(LaunchArgs&, plan::JobFile&, const plan::OptionSpec&, const std::string& value)> set;
};

using K = plan::OptionKind;
using S = plan::HelpSection;

const std::vector<LauncherOption>& launcher_options() {
  static const std::vector<LauncherOption> all = {
      // diffusers' name for images; one field, as the pipelines treat them alike.
      {{"num_images_per_prompt", K::Integer, "N", 1, 1024, "2", S::Job,
        "--num_videos_per_prompt under diffusers' name for images (FLUX.1)"},
       [](LaunchArgs&, plan::JobFile& f, auto& o, auto& v) { f.job.num_videos_per_prompt = integer(o, v); }},
      {{"plan", K::Switch, "", 0, 0, "", S::Choosing,
        "print every valid configuration for the GPUs here (or --nproc_per_node CPU processes) ranked by "
        "predicted time, with memory per rank; run nothing"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto&) { a.plan = true; }},
      {{"json", K::Switch, "", 0, 0, "", S::Choosing,
        "with --plan: a JSON array of {args, seconds_per_step, peak_bytes_per_rank, fits, ...}"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto&) { a.json = true; }},
      {{"auto", K::Switch, "", 0, 0, "", S::Choosing,
        "run the configuration predicted fastest among those that fit, saying why"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto&) { a.auto_pick = true; }},
      {{"calibrate", K::Switch, "", 0, 0, "", S::Choosing,
        "measure the devices and links again (alone: print the figures and exit)"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto&) { a.calibrate = true; }},
      {{"nnodes", K::Integer, "N", 1, 4096, "2", S::Running, "machines in the job"},
       [](LaunchArgs& a, plan::JobFile&, auto& o, auto& v) { a.run.nnodes = integer(o, v); }},
      {{"node_rank", K::Integer, "I", 0, 4095, "0", S::Running, "which machine this is (0 collects the events)"},
       [](LaunchArgs& a, plan::JobFile&, auto& o, auto& v) { a.run.node_rank = integer(o, v); }},
      {{"nproc_per_node", K::Integer, "N", 1, 1024, "8", S::Running,
        "ranks on each machine (default: the job's ranks / nnodes)"},
       [](LaunchArgs& a, plan::JobFile&, auto& o, auto& v) { a.run.nproc_per_node = integer(o, v); }},
      {{"master_addr", K::Text, "A", 0, 0, "10.0.0.1", S::Running, "where the ranks meet; events go to A"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto& v) { a.run.master_addr = v; }},
      {{"master_port", K::Integer, "P", 1, 65534, "29500", S::Running,
        "the ranks' rendezvous port; events go to port P + 1"},
       [](LaunchArgs& a, plan::JobFile&, auto& o, auto& v) { a.run.master_port = integer(o, v); }},
      {{"heartbeat_timeout", K::Number, "S", 0, 0, "30", S::Running,
        "a rank silent this long is declared hung and the job stopped (default 30)"},
       [](LaunchArgs& a, plan::JobFile&, auto& o, auto& v) { a.run.heartbeat_timeout_s = seconds(o, v); }},
      {{"collective_timeout", K::Number, "S", 0, 0, "30", S::Running,
        "c10d's timeout for one collective (default 600)"},
       [](LaunchArgs& a, plan::JobFile&, auto& o, auto& v) { a.run.collective_timeout_s = seconds(o, v); }},
      {{"events_log", K::Text, "FILE", 0, 0, "events.jsonl", S::Running, "every event of every rank as a line of JSON"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto& v) { a.run.events_log = v; }},
      {{"worker", K::Text, "PATH", 0, 0, "build/bin/dit-worker", S::Running,
        "the dit-worker to run: the file, its folder, or an unpacked worker archive (default: the first found in "
        "$DIT_STUDIO_WORKER_PATH, then beside dit-launch; e.g. the self-contained CUDA worker, see README)"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto& v) { a.worker = v; }},
      {{"write_job", K::Text, "FILE", 0, 0, "job.json", S::Running,
        "validate the job, write it as a job file and run nothing: start its ranks with torchrun, srun or mpirun "
        "running `dit-worker --job FILE`"},
       [](LaunchArgs& a, plan::JobFile&, auto&, auto& v) { a.write_job = v; }},
  };
  return all;
}

const LauncherOption* launcher_option(const std::string& key) {
  for (const auto& o : launcher_options())
    if (key == o.spec.key) return &o;
  return nullptr;
}

// Every flag's name, the job's and the launcher's own, without the dashes.
std::vector<std::string> option_names() {
  std::vector<std::string> names;
  for (const auto& o : plan::options()) names.push_back(o.spec.key);
  for (const auto& o : launcher_options()) names.push_back(o.spec.key);
  return names;
}

}  // namespace

LaunchArgs parse_launch_args(const std::vector<std::string>& argv) {
  LaunchArgs a;
  plan::JobFile file;
  std::map<std::string, std::string> given;  // flag -> its value as given, for one given twice
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string flag = argv[i], value;
    bool inline_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      a.help = true;
      continue;
    }
    if (flag == "--version") {
      a.version = true;
      continue;
    }
    const std::string key = flag.rfind("--", 0) == 0 ? flag.substr(2) : "";
    const plan::Option* job_option = plan::option(key);
    const LauncherOption* own = job_option ? nullptr : launcher_option(key);
    if (!job_option && !own) throw ArgError("unknown option '" + flag + "'" + plan::did_you_mean(key, option_names()) +
                                            " (dit-launch --help lists the options)");
    const plan::OptionSpec& spec = job_option ? job_option->spec : own->spec;
    if (spec.kind == plan::OptionKind::Switch) {
      if (inline_value) throw ArgError(flag + " takes no value (it is a switch)");
    } else {
      if (!inline_value) {
        if (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)
          throw ArgError(flag + " needs a value; see dit-launch --help");
        value = argv[++i];
      }
      if (value.empty() && key != "negative_prompt") throw ArgError(flag + " needs a value; see dit-launch --help");
    }
    const bool adds = job_option && job_option->repeated;  // --lora: each one another LoRA
    if (const auto [before, first] = given.emplace(key, value); !first && !adds) {
      if (before->second != value)  // a switch given twice, or a value repeated, changes nothing
        a.notes.push_back(flag + " is given twice (" + before->second + ", then " + value + "); the last counts");
      before->second = value;
    }
    try {
      if (own) own->set(a, file, spec, value);
      else if (key == "model") file.job.model_dir = model_folder(value);
      else plan::set_option_text(*job_option, file, value);
    } catch (const InputError& e) {  // a value the command line cannot read: a bad argument
      throw ArgError(e.what());
    }
  }
  a.job = file.job;
  a.parallel = file.parallel;
  if (a.json && !a.plan) throw ArgError("--json goes with --plan (the ranked configurations as a JSON array)");
  if (a.plan && a.auto_pick) throw ArgError("--plan prints the ranking and runs nothing; --auto runs the best: choose one");
  if (a.auto_pick && a.parallel.world_size() > 1)
    throw ArgError("--auto chooses how the ranks divide the work, and " + a.parallel.describe() +
                   " was given too: drop --auto to run exactly that, or drop the degrees and let --auto choose");
  // The events log is opened in place: an existing file, pipe or device takes it (/dev/stdout, >(jq ...)); a new
  // file needs its folder.
  std::vector<plan::Problem> log_problems;
  std::error_code ec;
  if (!a.run.events_log.empty() && std::filesystem::is_directory(a.run.events_log, ec))
    plan::check_output_target("events_log", a.run.events_log, false, log_problems);
  else if (!a.run.events_log.empty() && !std::filesystem::exists(a.run.events_log, ec))
    plan::check_output_folder("events_log", a.run.events_log, log_problems);
  if (!a.run.events_log.empty()) {  // nor is it a file the job writes or reads
    auto outputs = plan::output_names(a.job);
    outputs.push_back({"events_log", a.run.events_log});
    plan::check_outputs_differ(outputs, plan::input_names(a.job), log_problems);
    log_problems.erase(std::remove_if(log_problems.begin(), log_problems.end(),
                                      [](const plan::Problem& p) { return p.field != "events_log"; }),
                       log_problems.end());
  }
  if (!log_problems.empty()) throw ArgError(log_problems.front().message);
  if (a.run.node_rank >= a.run.nnodes)
    throw ArgError("--node_rank " + std::to_string(a.run.node_rank) + ": must be below --nnodes " +
                   std::to_string(a.run.nnodes) + " (machines are numbered from 0)");
  if (a.run.nnodes > 1 && (a.run.master_addr.empty() || a.run.master_port == 0))
    throw ArgError("--nnodes " + std::to_string(a.run.nnodes) + " needs --master_addr and --master_port: the first "
                   "machine's address and a port every machine can reach it on");
  return a;
}

void note_unused_settings(LaunchArgs& args) {
  const plan::ParallelConfig& p = args.parallel;
  const plan::ParallelConfig defaults;
  if (p.pipefusion_parallel_degree <= 1)
    for (const auto& [flag, value, unset] : {std::tuple{"--warmup_steps", p.warmup_steps, defaults.warmup_steps},
                                             {"--num_pipeline_patch", p.num_pipeline_patch, defaults.num_pipeline_patch}})
      if (value != unset)
        args.notes.push_back(std::string(flag) + " " + std::to_string(value) +
                             " is PipeFusion's (--pipefusion_parallel_degree 2 or more); this run has none, so it is "
                             "unused");
  if (p.use_parallel_vae && p.world_size() == 1)
    args.notes.push_back("--use_parallel_vae divides the decoding among the ranks; this run has one, so it is unused");
}

std::string launch_usage() {
  std::string models;
  for (const plan::Family* f : plan::families()) {
    std::string names;
    for (const auto& r : f->known_repos()) names += (names.empty() ? "" : ", ") + r.name;
    models += std::string(models.empty() ? "" : "; ") + f->name() + " (" + names + ")";
  }
  std::string out = "usage: dit-launch [--model DIR] --prompt TEXT [--output FILE] [options]\n\n" +
                    plan::wrapped("Generates a video clip or an image with a diffusers folder of " + models +
                                  "; the family is read from model_index.json.") + "\n";
  const std::pair<plan::HelpSection, const char*> sections[] = {
      {plan::HelpSection::Job, ""},
      {plan::HelpSection::Memory,
       "Fitting the model in memory (single files as ComfyUI, stable-diffusion.cpp and Wan2GP keep them):\n"},
      {plan::HelpSection::Caching,
       "Step caching (faster, approximate; every parallel mix but PipeFusion takes the one-process decisions):\n"},
      {plan::HelpSection::Parallel,
       "Parallel (xDiT's flags; processes = data x CFG x PipeFusion x ring x Ulysses, started here as\n"
       "dit-worker ranks; each degree 1 is the single-process path):\n"},
      {plan::HelpSection::Choosing,
       "Choosing a configuration (the cost model, docs/cost-model.md; the devices are measured once, in seconds,\n"
       "and the figures cached per device set in $XDG_CACHE_HOME/dit-studio/):\n"},
      {plan::HelpSection::Decoding,
       "Decoding in one process (diffusers' names; out of memory while decoding, a job decodes again with\n"
       "tiling, from the same latents):\n"},
      {plan::HelpSection::Running,
       "Running (one machine by default; several with torchrun's flags, one dit-launch per machine, each with\n"
       "DIT_STUDIO_TOKEN set to the same secret in its environment):\n"},
  };
  for (const auto& [section, heading] : sections) {
    out += heading;
    for (const auto& o : plan::options())
      if (o.spec.section == section) out += plan::usage_line(o.spec);
    for (const auto& o : launcher_options())
      if (o.spec.section == section) out += plan::usage_line(o.spec);
    out += "\n";
  }
  return out + "Exit status: 0 done, 1 internal failure (or a rank hung), 2 bad command-line argument, 3 bad input\n"
               "(model folder or tensor file), 4 out of memory, 5 a rank lost its peer, 128+N a rank was killed by\n"
               "signal N, 130 cancelled (SIGINT/SIGTERM). A failure names the rank, why, and its last lines.\n";
}

}  // namespace studio::workers
