# Which LibTorch the engine builds against, as one target, studio::torch.
#   STUDIO_TORCH=wheel (default): LibTorch 2.x from PyPI's torch wheel, unpacked by packaging/install-deps.sh
#     into .deps/libtorch-<packaging/torch-version>. Its headers need C++20. Its CUDA build is used as it is:
#     the CUDA headers and NCCL come from the wheel's own dependencies, so no CUDA toolkit is needed.
#   STUDIO_TORCH=system: Debian's libtorch-dev 1.13 (CPU, Gloo), through its CMake package.
# Sets STUDIO_TORCH_CUDA (a CUDA LibTorch: NCCL process groups) and the C++ standard.
set(STUDIO_TORCH "wheel" CACHE STRING "LibTorch to build against: wheel (.deps/, the default) or system (Debian's 1.13)")
set_property(CACHE STUDIO_TORCH PROPERTY STRINGS wheel system)
add_library(studio_torch INTERFACE)
add_library(studio::torch ALIAS studio_torch)

if(STUDIO_TORCH STREQUAL "system")
  find_package(Torch REQUIRED)
  set(STUDIO_CXX_STANDARD 17)
  target_link_libraries(studio_torch INTERFACE ${TORCH_LIBRARIES})
  set(torch_flags "${TORCH_CXX_FLAGS}")
  set(TORCH_VERSION "${Torch_VERSION}")
  set(STUDIO_TORCH_CUDA OFF)
  if(TARGET c10_cuda)
    set(STUDIO_TORCH_CUDA ON)
  endif()
elseif(STUDIO_TORCH STREQUAL "wheel")
  file(READ ${CMAKE_SOURCE_DIR}/packaging/torch-version torch_version)
  string(STRIP "${torch_version}" torch_version)
  set(STUDIO_TORCH_PREFIX "${CMAKE_SOURCE_DIR}/.deps/libtorch-${torch_version}" CACHE PATH
      "Folder with the unpacked torch wheel and its CUDA libraries (packaging/fetch-libtorch.sh)")
  set(root "${STUDIO_TORCH_PREFIX}/torch")
  if(NOT EXISTS "${root}/lib/libtorch_cpu.so")
    message(FATAL_ERROR "LibTorch ${torch_version} is not in ${STUDIO_TORCH_PREFIX}: run packaging/install-deps.sh "
                        "(it fetches it), or configure with -DSTUDIO_TORCH=system for Debian's LibTorch 1.13")
  endif()
  set(STUDIO_CXX_STANDARD 20)  # the 2.x headers stop with an #error below C++20
  target_include_directories(studio_torch SYSTEM INTERFACE ${root}/include ${root}/include/torch/csrc/api/include)
  # c10d's Gloo process group is declared only with this defined (the wheel is built with it).
  target_compile_definitions(studio_torch INTERFACE USE_C10D_GLOO USE_DISTRIBUTED)
  set(libs ${root}/lib/libtorch.so ${root}/lib/libtorch_cpu.so ${root}/lib/libc10.so)
  set(STUDIO_TORCH_CUDA OFF)
  if(EXISTS ${root}/lib/libtorch_cuda.so)
    set(STUDIO_TORCH_CUDA ON)
    file(GLOB cuda_includes LIST_DIRECTORIES true ${STUDIO_TORCH_PREFIX}/nvidia/*/include)
    target_include_directories(studio_torch SYSTEM INTERFACE ${cuda_includes})
    target_compile_definitions(studio_torch INTERFACE USE_C10D_NCCL)
    # libtorch_cuda registers the CUDA backend when loaded: keep it even though no symbol is used directly.
    list(APPEND libs -Wl,--no-as-needed ${root}/lib/libtorch_cuda.so ${root}/lib/libc10_cuda.so -Wl,--as-needed)
  endif()
  target_link_libraries(studio_torch INTERFACE ${libs})
  target_link_options(studio_torch INTERFACE "LINKER:-rpath,${root}/lib")
  file(STRINGS ${root}/share/cmake/Torch/TorchConfig.cmake torch_flags REGEX "TORCH_CXX_FLAGS \"")
  set(TORCH_VERSION "${torch_version}")
else()
  message(FATAL_ERROR "STUDIO_TORCH is '${STUDIO_TORCH}': use wheel (LibTorch 2.x in .deps/) or system (Debian's 1.13)")
endif()

# LibTorch fixes the C++ library's string ABI (PyPI's wheels before 2.7 use the old one). Everything that
# hands a std::string to or from the engine must be compiled the same way, torch-free libraries included.
if(torch_flags MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
  add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=${CMAKE_MATCH_1})
endif()
message(STATUS "LibTorch: ${STUDIO_TORCH} ${TORCH_VERSION} (CUDA: ${STUDIO_TORCH_CUDA}), C++${STUDIO_CXX_STANDARD}")
