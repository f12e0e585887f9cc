# The Debian package of a -DSTUDIO_TORCH=system build (Debian's LibTorch 1.13, CPU): the studio, the
# launcher, the CPU worker, the demo models and the desktop files, under /usr. `cmake --build build
# --target package` writes build/dit-studio_<version>_<arch>.deb.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dit-studio)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "The DiT Studio developers <developers@ditstudio.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "generate video clips and images with Diffusion Transformers")
# The extended description (CPack puts the summary above it); lines under 80 columns.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "DiT Studio generates short video clips (CogVideoX, Wan) and images
(FLUX.1) from a prompt, with the model folders diffusers uses, on the CPU
or, with the self-contained CUDA worker, on GPUs.

This package holds the desktop studio (dit-studio), the command-line
launcher (dit-launch), the CPU worker (dit-worker, built with Debian's
LibTorch), the model downloader (dit-models) and a small built-in demo
model.")
set(CPACK_DEBIAN_PACKAGE_SECTION video)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/ditstudio/dit-studio")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The libraries the binaries link, as dpkg-shlibdeps reads them; then what is loaded at run time and so
# invisible to it: Qt's platform plugins (xcb, offscreen) and SQLite driver, and OpenBLAS, which makes
# LibTorch's libblas.so.3 about 30x faster than the reference BLAS it would otherwise get.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-pthread")
if(TARGET dit-studio)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", qt6-qpa-plugins, libqt6sql6-sqlite")
  # qtkeychain reaches the desktop's secret store through libsecret, which it loads at run time; without
  # it the Models view keeps a Hub token for the session only (and says so).
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libsecret-1-0")
endif()

# A native package's changelog, in Debian's format, for this version.
set(changelog ${CMAKE_BINARY_DIR}/debian-changelog)
string(TIMESTAMP now "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${changelog} "dit-studio (${PROJECT_VERSION}) stable; urgency=medium\n\n"
     "  * Release ${PROJECT_VERSION}: see README.md and docs/ in the source.\n\n"
     " -- ${CPACK_PACKAGE_CONTACT}  ${now}\n")
add_custom_command(OUTPUT ${changelog}.gz COMMAND gzip -9nc ${changelog} > ${changelog}.gz DEPENDS ${changelog})
add_custom_target(debian_changelog ALL DEPENDS ${changelog}.gz)
install(FILES ${changelog}.gz DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/dit-studio RENAME changelog.gz)
include(CPack)
