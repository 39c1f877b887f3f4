# find_package(gpuflow): the installed headers as the INTERFACE target gpuflow::gpuflow, with
# threads, the dynamic loader and the backends whose vendor headers are found (see
# gpuflow-backends.cmake for GPUFLOW_CUDA / _HIP / _OPENCL). The version is
# gpuflowConfigVersion.cmake's, read from the installed gpuflow.h.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
get_filename_component(_gpuflow_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET gpuflow::gpuflow)
    add_library(gpuflow::gpuflow INTERFACE IMPORTED)
    set_target_properties(gpuflow::gpuflow PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_gpuflow_prefix}/include")
    target_link_libraries(gpuflow::gpuflow INTERFACE Threads::Threads ${CMAKE_DL_LIBS} $<$<NOT:$<PLATFORM_ID:Windows>>:m>)
    include("${CMAKE_CURRENT_LIST_DIR}/gpuflow-backends.cmake")
    gpuflow_add_backends(gpuflow::gpuflow)
endif()
unset(_gpuflow_prefix)
