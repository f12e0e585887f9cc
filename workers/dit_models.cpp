// dit-models: the models in the Hugging Face Hub's cache, shared with huggingface-cli and diffusers:
// lists them, downloads a repository (only what the engine reads, resumable, every file hashed before it
// is linked), verifies one again, removes one. Links no LibTorch. Exit statuses as dit-launch's.
#include <algorithm>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "hub/cache.h"
#include "hub/known_models.h"
#include "hub/download.h"
#include "io/safetensors/single_file_kind.h"
#include "plan/error.h"
#include "workers/launch/guarded_main.h"
#include "workers/launch/launch_args.h"
#include "plan/human_bytes.h"
#include "plan/nearest_names.h"

namespace {

using namespace studio;

std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) { g_cancel.store(true); }

const char* kUsage = R"(usage: dit-models COMMAND [REPO_ID] [options]

Finds, downloads and checks diffusers models (CogVideoX, FLUX.1, Wan, HunyuanVideo-1.5) and LoRAs in the
Hugging Face Hub's cache, the one huggingface-cli and diffusers use: a model downloaded by either is found
here and never fetched twice, and ours is theirs too. dit-launch --model ORG/NAME runs a model from this cache.

Commands:
  list                        the models in the cache: repo id, revision, size on disk, family, and
                              whether it is complete and verified
  known                       the models the engine runs, to download: family, repo id, download size,
                              GPU memory, and what they take (words, or a picture: image-to-video)
  download REPO_ID            fetch what the engine reads (safetensors, JSON configs, tokenizer files;
                              never pickled .bin/.pt/.ckpt/.pth, nor fp16 variants) of e.g.
                              THUDM/CogVideoX-2b; an interrupted download resumes where it stopped
  download REPO_ID FILE...    fetch only these files of the repository: a single-file checkpoint for
                              dit-launch --transformer, e.g. city96/FLUX.1-dev-gguf flux1-dev-Q4_K_S.gguf
                              (with --base, the pipeline it goes with too), or a LoRA for
                              dit-launch --lora
  verify REPO_ID              hash every file of the cached snapshot again (sha256 for weights, git's
                              blob id for the rest) and name any that does not match
  remove REPO_ID              delete the repository from the cache

Options:
  --revision R                a branch, tag or commit of REPO_ID (default main)
  --file FILE                 download: a file of the repository to fetch alone, as FILE... above;
                              repeat it for several
  --base ORG/NAME             download with FILE...: also the pipeline the file goes with (its main),
                              less the weights the file stands for (transformer/, transformer_2/ for a
                              second checkpoint, none for a LoRA; or what --without says), e.g.
                              download city96/FLUX.1-dev-gguf FILE --base black-forest-labs/FLUX.1-dev
  --without PART              download of a pipeline: leave out this part's weights (its config is
                              fetched), for a single file given to dit-launch --PART FILE: transformer,
                              transformer_2, text_encoder or text_encoder_2; repeat it for several
  -h, --help                  this text
  --version                   the version

Environment (as huggingface_hub reads it):
  HF_HUB_CACHE                the cache (default $HF_HOME/hub, ~/.cache/huggingface/hub)
  HF_HOME                     default ~/.cache/huggingface; its file `token` is read when HF_TOKEN is unset
  HF_TOKEN                    an access token for gated models such as black-forest-labs/FLUX.1-dev
                              (or run `huggingface-cli login`; accept the license on the model's page)
  HF_ENDPOINT                 the Hub (default https://huggingface.co), e.g. a mirror

Exit status: 0 done, 1 network or internal failure, 2 bad command-line argument, 3 bad input (the Hub
refused, a file did not match its hash, too little disk space, a model not in the cache), 130 cancelled
(SIGINT/SIGTERM; run the same download again to resume).
)";

struct Args {
  std::string command, repo, revision = "main";
  std::vector<std::string> files;  // download: only these
  std::string base;                 // download: also this pipeline, less `without`
  std::vector<std::string> without;
  bool help = false, version = false;
};

Args parse(const std::vector<std::string>& argv) {
  Args a;
  std::vector<std::string> words;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w == "-h" || w == "--help") a.help = true;
    else if (w == "--version") a.version = true;
    else if (w == "--revision" || w.rfind("--revision=", 0) == 0) {
      if (w == "--revision" && (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0))
        throw workers::ArgError("--revision needs a value: a branch, tag or commit, e.g. --revision main");
      a.revision = w == "--revision" ? argv[++i] : w.substr(11);
      if (a.revision.empty() || a.revision.find("..") != std::string::npos)
        throw workers::ArgError("--revision '" + a.revision + "': not a branch, tag or commit name; e.g. --revision main");
    } else if (w == "--file" || w.rfind("--file=", 0) == 0) {
      if (w == "--file" && (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0))
        throw workers::ArgError("--file needs a file of the repository, e.g. --file flux1-dev-Q4_K_S.gguf");
      a.files.push_back(w == "--file" ? argv[++i] : w.substr(7));
      if (a.files.back().empty())
        throw workers::ArgError("--file needs a file of the repository, e.g. --file flux1-dev-Q4_K_S.gguf");
    } else if (w == "--base" || w.rfind("--base=", 0) == 0) {
      if (w == "--base" && (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0))
        throw workers::ArgError("--base needs the pipeline's repository id, e.g. --base black-forest-labs/FLUX.1-dev");
      a.base = w == "--base" ? argv[++i] : w.substr(7);
      if (!hub::is_repo_id(a.base))
        throw workers::ArgError("--base '" + a.base + "': not a Hub repository id; expected ORG/NAME, e.g. "
                                "--base black-forest-labs/FLUX.1-dev");
    } else if (w == "--without" || w.rfind("--without=", 0) == 0) {
      if (w == "--without" && (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0))
        throw workers::ArgError("--without needs a component of the pipeline, e.g. --without transformer");
      a.without.push_back(w == "--without" ? argv[++i] : w.substr(10));
      const std::string& c = a.without.back();
      if (c != "transformer" && c != "transformer_2" && c != "text_encoder" && c != "text_encoder_2")
        throw workers::ArgError("--without '" + c + "': leaves out the weights a single file stands for, given to "
                                "dit-launch by the flag of the same name: transformer, transformer_2, text_encoder "
                                "or text_encoder_2");
    } else if (w.rfind("-", 0) == 0) {
      std::string name = w.substr(0, w.find('='));
      name.erase(0, name.find_first_not_of('-'));  // npos: all of it
      throw workers::ArgError("unknown option '" + w + "'" +
                              plan::did_you_mean(name,
                                                 {"revision", "file", "base", "without", "help", "version"}) +
                              " (dit-models --help lists the options)");
    }
    else words.push_back(w);
  }
  if (a.help || a.version) return a;
  if (words.empty()) throw workers::ArgError("no command; expected list, known, download, verify or remove (see dit-models --help)");
  a.command = words[0];
  const bool wants_repo = a.command == "download" || a.command == "verify" || a.command == "remove";
  if (!wants_repo && a.command != "list" && a.command != "known")
    throw workers::ArgError("unknown command '" + a.command + "'" +
                            plan::did_you_mean(a.command, {"list", "known", "download", "verify", "remove"}, "") +
                            " (expected list, known, download, verify or remove)");
  if (wants_repo && words.size() < 2)
    throw workers::ArgError(a.command + " needs a repository id, e.g. dit-models " + a.command + " THUDM/CogVideoX-2b");
  if (!a.files.empty() && a.command != "download")
    throw workers::ArgError("--file applies to download only, e.g. dit-models download ORG/NAME --file FILE");
  if ((!a.base.empty() || !a.without.empty()) && a.command != "download")
    throw workers::ArgError(std::string(a.base.empty() ? "--without" : "--base") +
                            " applies to download only, e.g. dit-models download ORG/NAME --without transformer");
  if (a.command == "download" && words.size() > 2) a.files.insert(a.files.end(), words.begin() + 2, words.end());
  else if (words.size() > (wants_repo ? 2u : 1u))
    throw workers::ArgError("'" + words.back() + "': one " + (wants_repo ? "repository id" : "command") + " only; see dit-models --help");
  if (!a.base.empty() && a.files.empty())
    throw workers::ArgError("--base " + a.base + " goes with a single file to download, e.g. dit-models download "
                            "city96/FLUX.1-dev-gguf flux1-dev-Q4_K_S.gguf --base " + a.base);
  if (!a.without.empty() && !a.files.empty() && a.base.empty())
    throw workers::ArgError("--without " + a.without.front() + " leaves out a component of a pipeline; with FILE... "
                            "give the pipeline with --base ORG/NAME");
  if (wants_repo) {
    a.repo = words[1];
    if (!hub::is_repo_id(a.repo))
      throw workers::ArgError("'" + a.repo + "': not a Hub repository id; expected ORG/NAME, e.g. THUDM/CogVideoX-2b");
  }
  return a;
}

std::string duration(double s) {
  char out[32];
  if (s < 60) std::snprintf(out, sizeof out, "%.0f s", s);
  else if (s < 3600) std::snprintf(out, sizeof out, "%d min %02d s", int(s) / 60, int(s) % 60);
  else std::snprintf(out, sizeof out, "%d h %02d min", int(s) / 3600, int(s) / 60 % 60);
  return out;
}

// One line per file on a pipe; a line redrawn in place on a terminal.
class ProgressLine {
 public:
  explicit ProgressLine(bool tty) : tty_(tty) {}
  void show(const hub::Progress& p) {
    const bool file_done = p.file_total > 0 && p.file_bytes >= p.file_total;
    if (!tty_ && !(file_done && p.file != last_file_)) return;
    if (file_done) last_file_ = p.file;
    char line[512];
    std::snprintf(line, sizeof line, "[%d/%d] %s %s %3.0f%% | %s of %s, %s/s, ETA %s", p.files_done + (file_done ? 0 : 1),
                  p.files_total, p.file.c_str(), p.hashing ? "hashing" : "", p.file_total ? 100.0 * double(p.file_bytes) / double(p.file_total) : 100.0,
                  plan::human_bytes(p.bytes).c_str(), plan::human_bytes(p.total).c_str(),
                  plan::human_bytes(uint64_t(p.bytes_per_second)).c_str(),
                  p.eta_seconds < 0 ? "?" : duration(p.eta_seconds).c_str());
    if (tty_) std::fprintf(stderr, "\r\033[K%s", line);
    else std::fprintf(stderr, "%s\n", line);
    drawn_ = tty_;
  }
  void end() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  bool tty_, drawn_ = false;
  std::string last_file_;
};

int list(const hub::HubSettings& s) {
  const auto repos = hub::list_cache(s.cache_dir);
  if (repos.empty()) {
    std::cout << "no models in " << s.cache_dir << "; fetch one with e.g. `dit-models download THUDM/CogVideoX-2b`\n";
    return workers::kOk;
  }
  // A pipeline's family; a repository of single files by what each file is
  // ("LoRA for FLUX.1, width 3072: style.safetensors").
  std::vector<std::string> families;
  for (const auto& r : repos) {
    std::string what = r.family;
    for (const auto& f : r.single_files)
      what += (what.empty() ? "" : "; ") + io::single_file_kind(r.snapshot + "/" + f) + ": " + f;
    families.push_back(what.empty() ? "-" : what);
  }
  int repo = 4, family = 6;
  for (size_t i = 0; i < repos.size(); ++i) {
    repo = std::max(repo, int(repos[i].repo_id.size()));
    family = std::max(family, int(families[i].size()));
  }
  std::printf("%-*s %-12s %10s  %-*s %s\n", repo, "REPO", "REVISION", "SIZE", family, "FAMILY", "STATE");
  for (size_t i = 0; i < repos.size(); ++i) {
    const auto& r = repos[i];
    std::string revision = r.commit.substr(0, 8);
    for (const auto& [ref, commit] : r.refs)
      if (commit == r.commit) revision = ref;
    const std::string state = !r.complete ? "incomplete: " + (r.problems.empty() ? std::string("?") : r.problems.front())
                              : r.verified ? "complete, verified"
                                           : "complete, not verified (dit-models verify " + r.repo_id + ")";
    std::string without, flags;  // a component's single file is given by the flag of its name
    for (const auto& c : r.without_weights) {
      without += (without.empty() ? "; no " : ", ") + c + "/";
      flags += " --" + c + " FILE";
    }
    if (!without.empty()) without += " weights: give dit-launch" + flags;
    std::printf("%-*s %-12s %10s  %-*s %s\n", repo, r.repo_id.c_str(), revision.c_str(),
                plan::human_bytes(r.bytes_on_disk).c_str(), family, families[i].c_str(),
                (state + without).c_str());
  }
  std::cout << "cache: " << s.cache_dir << "\n";
  return workers::kOk;
}

int known() {
  const auto models = hub::known_models();
  int family = 6, repo = 4;  // the columns as wide as their longest entry
  for (const auto& m : models) {
    family = std::max(family, int(m.family.size()));
    repo = std::max(repo, int(m.repo_id.size()));
  }
  std::printf("%-*s %-*s %9s %11s  %s\n", family, "FAMILY", repo, "REPO", "DOWNLOAD", "GPU MEMORY", "TAKES");
  for (const auto& m : models) {
    std::string takes = !m.image_to_video ? "words" : m.words_alone ? "words, or words and a picture" : "words and a picture";
    if (m.image_to_video) takes += m.last_image ? ", or a first and a last (--image, --last_image)" : " (--image)";
    std::printf("%-*s %-*s %6.1f GB %8.1f GB  %s%s\n", family, m.family.c_str(), repo, m.repo_id.c_str(),
                m.download_gb, m.gpu_memory_gb, takes.c_str(),
                m.gated ? "; gated: accept the license on its page, set HF_TOKEN" : "");
  }
  std::cout << "GPU memory: one GPU's for the default job (the Models tab of dit-studio says what each assumes)\n";
  return workers::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string prefix = "dit-models: ";
  return workers::guarded_main(prefix, [&]() -> int {
    const Args a = parse(std::vector<std::string>(argv + 1, argv + argc));
    if (a.help) return std::cout << kUsage, workers::kOk;
    if (a.version) return std::cout << "dit-models " STUDIO_VERSION "\n", workers::kOk;
    const hub::HubSettings s = hub::settings_from_environment();
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    ProgressLine line(::isatty(STDERR_FILENO) == 1);
    try {
      if (a.command == "list") return list(s);
      if (a.command == "known") return known();
      if (a.command == "remove") {
        const uint64_t freed = hub::remove_repo(s.cache_dir, a.repo);
        std::cerr << prefix << "removed " << a.repo << " (" << plan::human_bytes(freed) << ") from " << s.cache_dir << std::endl;
        return workers::kOk;
      }
      if (a.command == "verify") {
        const auto r = hub::verify_repo(s.cache_dir, a.repo, a.revision, [&](const hub::Progress& p) { line.show(p); }, &g_cancel);
        line.end();
        for (const auto& m : r.mismatched) std::cerr << prefix << "does not match: " << m << std::endl;
        for (const auto& u : r.unchecked) std::cerr << prefix << "no hash to check against: " << u << std::endl;
        const std::string again = "; `dit-models remove " + a.repo + "` then download it again";
        if (!r.mismatched.empty())
          throw InputError(a.repo + ": " + std::to_string(r.mismatched.size()) + " of " + std::to_string(r.files) +
                           " files do not match their hash" + again);
        // A file without a hash in its name can still be seen to be damaged: what `list` reads of it.
        if (a.revision.empty())
          if (const auto cached = hub::read_cached_repo(s.cache_dir, a.repo); !cached.problems.empty())
            throw InputError(a.repo + ": " + cached.problems.front() + again);
        const int checked = r.files - int(r.unchecked.size());
        if (checked == 0)
          throw InputError(a.repo + ": none of its " + std::to_string(r.files) + " files could be checked: their blobs "
                           "are not named by a content hash (put in the cache by hand, not downloaded); download it "
                           "again to have files that can be verified");
        if (r.unchecked.empty())
          std::cerr << prefix << a.repo << ": " << r.files << " files (" << plan::human_bytes(r.bytes)
                    << ") match their hashes" << std::endl;
        else
          std::cerr << prefix << a.repo << ": " << checked << " of " << r.files << " files match their hashes; "
                    << r.unchecked.size() << " have no hash to check against" << std::endl;
        return workers::kOk;
      }
      hub::HubClient client(s);
      hub::DownloadOptions o;
      o.revision = a.revision;
      o.cancel = &g_cancel;
      o.on_progress = [&](const hub::Progress& p) { line.show(p); };
      o.on_note = [&](const std::string& note) { line.end(), std::cerr << prefix << note << std::endl; };
      o.files = a.files;
      if (a.files.empty()) o.without = a.without;
      auto fetch = [&](const std::string& repo, const hub::DownloadOptions& options) {
        const auto r = hub::download_repo(client, repo, options);
        line.end();
        std::cerr << prefix << repo << " at " << r.commit << ": " << r.files << " files (" << r.fetched << " fetched, "
                  << plan::human_bytes(r.bytes_fetched) << ") in " << r.snapshot << std::endl;
        return r;
      };
      const auto r = fetch(a.repo, o);
      // A checkpoint stands for the base's transformer (a second one for Wan2.2's transformer_2); a LoRA for none.
      int checkpoints = 0;
      for (const auto& f : a.files)
        checkpoints += !io::lora_fit_if_any((std::filesystem::path(r.snapshot) / f).string()).is_lora;
      if (!a.base.empty()) {
        o.files.clear();
        o.revision = "main";  // --revision names one of REPO_ID's
        o.without = a.without;
        if (o.without.empty() && checkpoints > 0) o.without.push_back("transformer");
        if (o.without.size() == 1 && checkpoints > 1) o.without.push_back("transformer_2");
        fetch(a.base, o);
      }
      const std::string model = !a.base.empty() ? a.base : a.files.empty() ? a.repo : "BASE_REPO";
      std::string run = "run it with `dit-launch --model " + model;
      int given = 0;  // the second checkpoint is Wan2.2's second expert
      for (const auto& f : a.files) {
        const std::string path = (std::filesystem::path(r.snapshot) / f).string();
        run += io::lora_fit_if_any(path).is_lora ? " --lora " + path + ":1"
               : given++ == 0                ? " --transformer " + path
                                             : " --transformer_2 " + path;
      }
      if (a.files.empty())  // the parts left out, each given by its flag
        for (const auto& c : a.without) run += " --" + c + " FILE";
      std::cerr << prefix << run << " --prompt ...`" << std::endl;
      return workers::kOk;
    } catch (const hub::NetworkError& e) {
      line.end();
      std::cerr << prefix << "network failure: " << e.what() << std::endl;
      return workers::kInternal;
    } catch (const Cancelled&) {
      line.end();
      std::cerr << prefix << "cancelled; what arrived is kept: run the same command again to resume" << std::endl;
      return workers::kCancelled;
    } catch (...) {
      line.end();
      throw;
    }
  });
}
