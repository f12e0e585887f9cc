# The fuzzers: the event decoder and the loaders of untrusted files under libFuzzer (clang), for a bounded
# time each. Built with clang directly from their sources, apart from the g++ build; left out, with a note,
# where clang cannot build them. bench/fuzz_loaders.sh runs them for longer.
find_program(STUDIO_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
if(STUDIO_CLANGXX)
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo "extern \"C\" int LLVMFuzzerTestOneInput(const char*, unsigned long){return 0;}"
                  OUTPUT_FILE ${CMAKE_BINARY_DIR}/fuzz_probe.cpp)
  execute_process(COMMAND ${STUDIO_CLANGXX} -fsanitize=fuzzer ${CMAKE_BINARY_DIR}/fuzz_probe.cpp -o ${CMAKE_BINARY_DIR}/fuzz_probe
                  RESULT_VARIABLE fuzz_probe_failed OUTPUT_QUIET ERROR_QUIET)
endif()
if(NOT STUDIO_CLANGXX OR fuzz_probe_failed)
  message(STATUS "clang++ with -fsanitize=fuzzer not found: the fuzz tests are left out (apt install clang)")
  return()
endif()

function(studio_fuzzer name)
  cmake_parse_arguments(F "" "" "SOURCES;HEADERS;SANITIZE;LIBS" ${ARGN})
  if(NOT F_SANITIZE)
    set(F_SANITIZE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  endif()
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/tests/${name}
    COMMAND ${STUDIO_CLANGXX} -std=c++17 -O1 -g ${F_SANITIZE} "-DSTUDIO_PRIVATE_LIB_FROM_BIN=\"${STUDIO_PRIVATE_LIB_FROM_BIN}\""
            "-DSTUDIO_VERSION=\"${PROJECT_VERSION}\""
            -I${CMAKE_SOURCE_DIR} -I${CMAKE_SOURCE_DIR}/engine ${F_SOURCES} ${F_LIBS} -o ${CMAKE_BINARY_DIR}/tests/${name}
    DEPENDS ${F_SOURCES} ${F_HEADERS}
    COMMENT "Building ${name} with clang" VERBATIM)
  string(REPLACE "-" "_" target ${name})  # a target named as its output would clash with it in Ninja
  add_custom_target(${target} ALL DEPENDS ${CMAKE_BINARY_DIR}/tests/${name})
endfunction()

# A bounded, repeatable run of one target: a fresh corpus folder, its seeds, a fixed seed and a fixed number
# of runs, so that CI's verdict is the same on every machine (a time bound made it depend on the machine's
# speed: how far the search got). bench/fuzz_loaders.sh explores for longer, with other seeds.
function(studio_fuzz_test name program)
  cmake_parse_arguments(F "" "TARGET;MAX_LEN;RUNS" "SEEDS" ${ARGN})
  set(corpus ${CMAKE_BINARY_DIR}/tests/fuzz-corpus/${name})
  add_test(NAME ${name} COMMAND sh -c "rm -rf \"$0\" && mkdir -p \"$0\" && exec \"$@\"" ${corpus}
           ${CMAKE_BINARY_DIR}/tests/${program} ${corpus} ${F_SEEDS} -runs=${F_RUNS}
           -max_len=${F_MAX_LEN} -rss_limit_mb=1024 -timeout=5 -seed=1)
  set_tests_properties(${name} PROPERTIES TIMEOUT 240 LABELS fuzz ENVIRONMENT "FUZZ_TARGET=${F_TARGET}")
endfunction()

studio_fuzzer(fuzz-events
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz_events.cpp ${CMAKE_SOURCE_DIR}/workers/events/protocol.cpp
          ${CMAKE_SOURCE_DIR}/workers/events/messages.cpp
  HEADERS ${CMAKE_SOURCE_DIR}/workers/events/protocol.h ${CMAKE_SOURCE_DIR}/workers/events/messages.h)
add_test(NAME fuzz_events COMMAND ${CMAKE_BINARY_DIR}/tests/fuzz-events -runs=400000 -max_len=4096 -rss_limit_mb=1024
         -timeout=5 -seed=1)
set_tests_properties(fuzz_events PROPERTIES TIMEOUT 240 LABELS fuzz)

file(GLOB plan_sources ${CMAKE_SOURCE_DIR}/engine/plan/*.cpp ${CMAKE_SOURCE_DIR}/engine/plan/families/*.cpp)
file(GLOB plan_headers ${CMAKE_SOURCE_DIR}/engine/plan/*.h ${CMAKE_SOURCE_DIR}/engine/plan/families/*.h)
studio_fuzzer(fuzz-loaders
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz_loaders.cpp ${CMAKE_SOURCE_DIR}/engine/io/safetensors/safetensors_file.cpp
          ${CMAKE_SOURCE_DIR}/engine/io/gguf/gguf_file.cpp
          ${CMAKE_SOURCE_DIR}/engine/io/files/whole_file.cpp
          ${CMAKE_SOURCE_DIR}/engine/io/files/mapped_file.cpp ${plan_sources}
          ${CMAKE_SOURCE_DIR}/engine/text/tokenize/clip_tokenizer.cpp ${CMAKE_SOURCE_DIR}/engine/text/tokenize/byte_bpe.cpp
          ${CMAKE_SOURCE_DIR}/engine/text/tokenize/added_tokens.cpp
          ${CMAKE_SOURCE_DIR}/engine/text/tokenize/unicode_text.cpp
  HEADERS ${plan_headers} ${CMAKE_SOURCE_DIR}/engine/io/safetensors/safetensors_file.h ${CMAKE_SOURCE_DIR}/engine/io/gguf/gguf_file.h
          ${CMAKE_SOURCE_DIR}/engine/io/files/whole_file.h
          ${CMAKE_SOURCE_DIR}/engine/io/files/mapped_file.h
          ${CMAKE_SOURCE_DIR}/engine/text/tokenize/clip_tokenizer.h
          ${CMAKE_SOURCE_DIR}/engine/text/tokenize/unicode_text.h)

# The T5 tokenizer reaches sentencepiece through a module loaded with RTLD_DEEPBIND, which the sanitizers'
# runtime refuses: this one runs under libFuzzer alone (a crash or a hang still fails it).
studio_fuzzer(fuzz-t5-tokenizer
  SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz_t5_tokenizer.cpp ${CMAKE_SOURCE_DIR}/engine/text/tokenize/t5_tokenizer.cpp ${plan_sources}
  HEADERS ${plan_headers} ${CMAKE_SOURCE_DIR}/engine/text/tokenize/t5_tokenizer.h
  SANITIZE -fsanitize=fuzzer
  LIBS -ldl)
add_dependencies(fuzz_t5_tokenizer studio_sentencepiece)

# CI's fuzzing budget: about 15 s a target on a quiet machine of this kind (2 cores), each target's runs
# sized from its measured executions per second (docs/performance.md, "Figures the tests are sized by");
# a fixed count, not a time, so that the verdict does not depend on the machine. bench/fuzz_loaders.sh
# explores for longer.
# Seeds from the shared goldens where they are here: small tensor files, every kind of config, a CLIP
# tokenizer with a prompt; and tests/fuzz_seeds: job files, and inputs that once failed (kept as regressions).
set(seeds ${CMAKE_BINARY_DIR}/tests/fuzz-seeds)
file(MAKE_DIRECTORY ${seeds}/safetensors ${seeds}/configs ${seeds}/clip ${seeds}/t5)
set(G ${STUDIO_GOLDENS_DIR})
foreach(f fbcache_cogvx2b/golden.safetensors flux_words_tiny/text_encoder_2/model-00004-of-00005.safetensors
          t5_tiny/golden.safetensors)
  if(EXISTS ${G}/${f})
    string(REPLACE "/" "_" seed ${f})
    configure_file(${G}/${f} ${seeds}/safetensors/${seed} COPYONLY)
  endif()
endforeach()
file(GLOB_RECURSE golden_configs ${G}/*/config.json ${G}/*/scheduler_config.json)
foreach(f ${golden_configs})
  file(RELATIVE_PATH rel ${G} ${f})
  string(REPLACE "/" "_" seed ${rel})
  configure_file(${f} ${seeds}/configs/${seed} COPYONLY)
endforeach()
if(EXISTS ${G}/flux_words_tiny/tokenizer/vocab.json)
  file(READ ${G}/flux_words_tiny/tokenizer/vocab.json vocab)
  file(READ ${G}/flux_words_tiny/tokenizer/merges.txt merges)
  file(WRITE ${seeds}/clip/flux_words_tiny "${vocab}\n--8<--\n${merges}\n--8<--\nIt's a DOG's life!!! 42 café 深圳 🚣")
endif()

if(EXISTS ${G}/flux_words_tiny/tokenizer_2/spiece.model)
  # Binary-safe: the parts joined by `cmake -E cat` (spiece.model holds NUL bytes).
  file(WRITE ${seeds}/cut.txt "\n--8<--\n")
  file(WRITE ${seeds}/t5_text.txt "A paper boat <extra_id_5> drifts </s> on a pond")
  execute_process(COMMAND ${CMAKE_COMMAND} -E cat ${G}/flux_words_tiny/tokenizer_2/spiece.model ${seeds}/cut.txt
                          ${G}/flux_words_tiny/tokenizer_2/tokenizer_config.json ${seeds}/cut.txt ${seeds}/t5_text.txt
                  OUTPUT_FILE ${seeds}/t5/flux_words_tiny)
  file(REMOVE ${seeds}/cut.txt ${seeds}/t5_text.txt)
endif()

studio_fuzz_test(fuzz_safetensors fuzz-loaders TARGET safetensors RUNS 55000 MAX_LEN 65536 SEEDS ${seeds}/safetensors)
studio_fuzz_test(fuzz_gguf fuzz-loaders TARGET gguf RUNS 110000 MAX_LEN 65536 SEEDS ${CMAKE_SOURCE_DIR}/tests/fuzz_seeds/gguf)
studio_fuzz_test(fuzz_configs fuzz-loaders TARGET configs RUNS 18000 MAX_LEN 8192
                 SEEDS ${seeds}/configs ${CMAKE_SOURCE_DIR}/tests/fuzz_seeds/configs)
studio_fuzz_test(fuzz_job_file fuzz-loaders TARGET job RUNS 100000 MAX_LEN 8192 SEEDS ${CMAKE_SOURCE_DIR}/tests/fuzz_seeds/job)
studio_fuzz_test(fuzz_t5_tokenizer fuzz-t5-tokenizer TARGET t5 RUNS 4000 MAX_LEN 524288 SEEDS ${seeds}/t5)
studio_fuzz_test(fuzz_clip_tokenizer fuzz-loaders TARGET clip RUNS 3600 MAX_LEN 65536
                 SEEDS ${seeds}/clip ${CMAKE_SOURCE_DIR}/tests/fuzz_seeds/clip)
