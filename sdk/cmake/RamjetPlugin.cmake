# ramjet_add_plugin(<name>
#     VERSION <x.y.z>
#     SOURCES <files...>
#     PROVIDES <kind>=<component> ...        e.g. transform=invert data_source=my_reader
#     [LINK_LIBRARIES <targets...>]
#     [ABI_MIN <n>] [ABI_MAX <n>]            ABI range written to the manifest (default: this SDK's version)
#     [OUTPUT_DIR <dir>]                     where the library and manifest are built (default: RAMJET_PLUGIN_BUILD_DIR
#                                            if set, else ${CMAKE_CURRENT_BINARY_DIR})
#     [INSTALL_DIR <dir>]                    install destination (default: RAMJET_PLUGIN_INSTALL_DIR)
#     [NO_INSTALL] [NO_MANIFEST])
#
# Builds target ramjet_<name> as a MODULE library libramjet_<name>.so that exports only the entry symbol
# (hidden visibility plus a version script), and writes <name>.json beside it, with the library path relative to
# the manifest. The plugin's sources see RAMJET_PLUGIN_VERSION as a string macro. Without a build type the plugin
# is compiled with -O2 (see below).
include_guard(GLOBAL)

set(_RAMJET_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(ramjet_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_INSTALL;NO_MANIFEST" "VERSION;ABI_MIN;ABI_MAX;OUTPUT_DIR;INSTALL_DIR"
                        "SOURCES;PROVIDES;LINK_LIBRARIES")
  if(NOT arg_VERSION)
    message(FATAL_ERROR "ramjet_add_plugin(${name}): VERSION is required")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "ramjet_add_plugin(${name}): SOURCES is required")
  endif()
  if(NOT name MATCHES "^[A-Za-z0-9_.-]+$")
    message(FATAL_ERROR "ramjet_add_plugin(${name}): the name may use letters, digits, '_', '.' and '-' only")
  endif()
  if(NOT DEFINED RAMJET_ABI_VERSION)  # in the source tree (the installed ramjetConfig.cmake sets it): read abi.h
    file(STRINGS "${_RAMJET_PLUGIN_CMAKE_DIR}/../include/ramjet/abi.h" abi_define
         REGEX "^#define RAMJET_ABI_VERSION [0-9]+u?$")
    string(REGEX REPLACE "^#define RAMJET_ABI_VERSION ([0-9]+)u?$" "\\1" RAMJET_ABI_VERSION "${abi_define}")
    if(NOT RAMJET_ABI_VERSION MATCHES "^[0-9]+$")
      message(FATAL_ERROR "ramjet_add_plugin(${name}): cannot read RAMJET_ABI_VERSION from ramjet/abi.h")
    endif()
  endif()
  if(NOT arg_ABI_MIN)
    set(arg_ABI_MIN ${RAMJET_ABI_VERSION})
  endif()
  if(NOT arg_ABI_MAX)
    set(arg_ABI_MAX ${RAMJET_ABI_VERSION})
  endif()
  if(NOT arg_OUTPUT_DIR)
    if(RAMJET_PLUGIN_BUILD_DIR)
      set(arg_OUTPUT_DIR ${RAMJET_PLUGIN_BUILD_DIR})
    else()
      set(arg_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  if(NOT arg_INSTALL_DIR)
    if(RAMJET_PLUGIN_INSTALL_DIR)
      set(arg_INSTALL_DIR ${RAMJET_PLUGIN_INSTALL_DIR})
    else()
      set(arg_INSTALL_DIR lib/ramjet/plugins)
    endif()
  endif()

  set(target ramjet_${name})
  add_library(${target} MODULE ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE ramjet::sdk ${arg_LINK_LIBRARIES})
  target_compile_definitions(${target} PRIVATE RAMJET_PLUGIN_VERSION="${arg_VERSION}")
  set(version_script ${CMAKE_CURRENT_BINARY_DIR}/${target}.map)
  file(WRITE ${version_script} "{ global: ramjet_plugin_entry; local: *; };\n")
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY $<1:${arg_OUTPUT_DIR}>
    LINK_DEPENDS ${version_script})
  target_link_options(${target} PRIVATE "LINKER:--version-script=${version_script}" "LINKER:--exclude-libs,ALL")
  # Optimised by default. A single-config project configured without a build type compiles with no -O flag at all,
  # i.e. unoptimised, and a plugin's kernels run many times slower; so add -O2 then. A build type (or
  # multi-config generator) chosen by the user wins, and so does an -O the user put in CMAKE_<LANG>_FLAGS.
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT multi_config AND NOT CMAKE_BUILD_TYPE AND NOT "${CMAKE_CXX_FLAGS} ${CMAKE_C_FLAGS}" MATCHES "(^| )-O")
    target_compile_options(${target} PRIVATE -O2)
  endif()
  # Unresolved symbols fail at link time, not at load (sanitizer runtimes live in the executable, so not then).
  if(NOT RAMJET_SANITIZE)
    target_link_options(${target} PRIVATE "LINKER:-z,defs")
  endif()

  if(NOT arg_NO_MANIFEST)
    # Group PROVIDES by kind: {"transform": ["a", "b"], ...}
    set(kinds "")
    foreach(item IN LISTS arg_PROVIDES)
      if(NOT item MATCHES "^([a-z_]+)=(.+)$")
        message(FATAL_ERROR "ramjet_add_plugin(${name}): PROVIDES entry '${item}' is not <kind>=<name>")
      endif()
      set(kind ${CMAKE_MATCH_1})
      set(component ${CMAKE_MATCH_2})
      if(NOT kind MATCHES "^(data_source|transform|precision_policy|strategy|quantizer|exporter|backend)$")
        message(FATAL_ERROR "ramjet_add_plugin(${name}): unknown component kind '${kind}' in PROVIDES")
      endif()
      if(NOT component MATCHES "^[A-Za-z0-9_.-]+$")
        message(FATAL_ERROR "ramjet_add_plugin(${name}): component name '${component}' may use letters, digits, '_', '.' and '-' only")
      endif()
      list(APPEND kinds ${kind})
      list(APPEND _names_${kind} "\"${component}\"")
    endforeach()
    list(REMOVE_DUPLICATES kinds)
    set(provides "")
    foreach(kind IN LISTS kinds)
      list(JOIN _names_${kind} ", " joined)
      if(provides)
        string(APPEND provides ",\n")
      endif()
      string(APPEND provides "    \"${kind}\": [${joined}]")
    endforeach()
    set(manifest "{\n  \"file_format_version\": \"1.0\",\n  \"name\": \"${name}\",\n  \"version\": \"${arg_VERSION}\",\n")
    string(APPEND manifest "  \"abi\": {\"min\": ${arg_ABI_MIN}, \"max\": ${arg_ABI_MAX}},\n")
    string(APPEND manifest "  \"library\": \"$<TARGET_FILE_NAME:${target}>\",\n")
    string(APPEND manifest "  \"provides\": {\n${provides}\n  }\n}\n")
    file(GENERATE OUTPUT ${arg_OUTPUT_DIR}/${name}.json CONTENT "${manifest}")
  endif()

  if(NOT arg_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${arg_INSTALL_DIR})
    if(NOT arg_NO_MANIFEST)
      install(FILES ${arg_OUTPUT_DIR}/${name}.json DESTINATION ${arg_INSTALL_DIR})
    endif()
  endif()
endfunction()
