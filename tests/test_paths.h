// Where the build put what the suites use, compiled into one small generated file (test_paths.cpp in the
// build folder) instead of into every suite as definitions: a suite's object then holds no absolute path,
// so ccache's copy of it serves a clone in any folder (CI's).
#pragma once

namespace studio::test {

const char* configured_goldens_dir();  // STUDIO_GOLDENS_DIR as configured (tests/support.h: goldens_dir())
const char* build_bin_dir();           // the build's bin/: dit-launch, dit-worker
const char* torch_pythonpath();        // the unpacked torch wheel, for torchrun ("" where the build has none)
const char* source_dir();              // the source tree (tests/test_layering reads its includes)

}  // namespace studio::test
