# Installation: `cmake --install build --prefix P` then `find_package(luminal)` with
# CMAKE_PREFIX_PATH=P gives the imported targets luminal::luminal (= luminal::core, the
# compiler and runtime, + luminal::cpu, the CPU backend) and luminal::io.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS luminal luminal_core luminal_cpu EXPORT luminalTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET luminal_io)
  install(TARGETS luminal_io luminal_models EXPORT luminalTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(TARGET luminal_cuda)
  install(TARGETS luminal_cuda EXPORT luminalTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/luminal DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(EXPORT luminalTargets NAMESPACE luminal:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/luminal)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/luminalConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/luminalConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/luminal)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/luminalConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/luminalConfig.cmake ${PROJECT_BINARY_DIR}/luminalConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/luminal)
