// Where the programs, the workers and the built-in demo models are, relative to the running executable:
// the same in the build tree, an installed prefix and an unpacked archive (bin/ beside share/dit-studio/).
#pragma once
#include <string>
#include <vector>

namespace studio::workers {

std::string executable_dir();   // the folder of the running program
std::string programs_dir();     // $DIT_STUDIO_BIN_DIR, else executable_dir() (where dit-launch and dit-worker are)
std::string data_dir();         // share/dit-studio beside that bin/ (the installed layout)
std::string demo_model_dir();   // data_dir()/demo-model (CogVideoX-shaped: clips)
std::string demo_flux_dir();    // data_dir()/demo-flux (FLUX.1-shaped: images)

// Where workers are looked for, in order: `chosen` (a flag or the studio's setting), the entries of
// $DIT_STUDIO_WORKER_PATH (':'-separated), then programs_dir(). An entry is a dit-worker file, a folder
// holding one, or an unpacked worker archive (its bin/dit-worker).
std::vector<std::string> worker_search_path(const std::vector<std::string>& chosen = {});
// The executable dit-worker that `entry` names (the file, its folder, or an archive's folder); "" if none.
std::string worker_at(const std::string& entry);
// The executable dit-worker files on that path, in its order, each once (by its real path).
std::vector<std::string> find_workers(const std::vector<std::string>& chosen = {});
// The first of find_workers(chosen); programs_dir()/dit-worker when there is none (so a failure names it).
std::string worker_program(const std::vector<std::string>& chosen = {});

}  // namespace studio::workers
