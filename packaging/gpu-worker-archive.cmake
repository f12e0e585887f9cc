# The self-contained worker of a LibTorch 2.x build (CUDA and NCCL with the wheel's CUDA build): `cmake
# --build build --target worker_archive` writes build/dit-worker-<version>-libtorch<v>-cuda<v>-linux-<arch>.tar.gz
# (packaging/pack-worker.sh says how it is made self-contained).
add_custom_target(worker_archive
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pack-worker.sh $<TARGET_FILE:dit-worker>
          $<TARGET_FILE:studio_sentencepiece> ${CMAKE_BINARY_DIR}
  DEPENDS dit-worker studio_sentencepiece
  COMMENT "Packing the self-contained dit-worker" VERBATIM)
