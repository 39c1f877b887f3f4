# find_package(gpuflow [version]): the version is the installed gpuflow.h's (one version
# everywhere). A request is met by the same major version at or below it, as pkg-config's
# `gpuflow >= x` and Meson's '>=x' are; a range (CMake 3.19) by a version inside it.
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../../../include/gpuflow.h" _gpuflow_version_lines
     REGEX "^#define GPUFLOW_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
set(PACKAGE_VERSION "")
foreach(_gpuflow_part MAJOR MINOR PATCH)
    string(REGEX MATCH "GPUFLOW_VERSION_${_gpuflow_part} ([0-9]+)" _gpuflow_match "${_gpuflow_version_lines}")
    list(APPEND PACKAGE_VERSION "${CMAKE_MATCH_1}")
endforeach()
string(REPLACE ";" "." PACKAGE_VERSION "${PACKAGE_VERSION}")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(NOT PACKAGE_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
    set(PACKAGE_VERSION_UNSUITABLE TRUE)   # no gpuflow.h beside the package: not this install
elseif(PACKAGE_FIND_VERSION_RANGE)
    if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN AND
       ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE" AND PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX) OR
        (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE" AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
        set(PACKAGE_VERSION_COMPATIBLE TRUE)
    endif()
elseif(NOT PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
else()
    string(REGEX MATCH "^[0-9]+" _gpuflow_major "${PACKAGE_VERSION}")
    if(PACKAGE_FIND_VERSION_MAJOR STREQUAL _gpuflow_major AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
        set(PACKAGE_VERSION_COMPATIBLE TRUE)
        if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
            set(PACKAGE_VERSION_EXACT TRUE)
        endif()
    endif()
endif()
unset(_gpuflow_version_lines)
unset(_gpuflow_part)
unset(_gpuflow_match)
unset(_gpuflow_major)
