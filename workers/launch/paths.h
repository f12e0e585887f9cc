// Where the programs and the built-in demo model are, relative to the running executable: the same in
// the build tree and in an installed package (bin/ beside share/dit-studio/).
#pragma once
#include <string>

namespace studio::workers {

std::string executable_dir();   // the folder of the running program
std::string programs_dir();     // $DIT_STUDIO_BIN_DIR, else executable_dir() (where dit-worker is)
std::string worker_program();   // dit-worker there
std::string demo_model_dir();   // share/dit-studio/demo-model beside that bin/ (CogVideoX-shaped: clips)
std::string demo_flux_dir();    // share/dit-studio/demo-flux beside it (FLUX.1-shaped: images)

}  // namespace studio::workers
