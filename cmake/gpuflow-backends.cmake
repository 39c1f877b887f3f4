# gpuflow's vendor backends for a CMake target: shared by the in-tree CMakeLists.txt and the
# installed gpuflowConfig.cmake. A backend is compiled in when its option is ON, or (AUTO, the
# default) when its vendor header is found; it adds GPUFLOW_<B> and the header's directory.
# No vendor library is linked: gpuflow loads drivers at run time.
# A consumer's own (normal) variable of an option's name is taken as it is: creating the cache
# entry would remove it under CMake's old policy CMP0126 (before 3.21), so the first configure
# ignored it and the second honoured it (found by review).
if(NOT DEFINED GPUFLOW_CUDA)
    set(GPUFLOW_CUDA "AUTO" CACHE STRING "gpuflow: compile in the CUDA backend (ON, OFF, AUTO: if cuda.h is found)")
endif()
if(NOT DEFINED GPUFLOW_HIP)
    set(GPUFLOW_HIP "AUTO" CACHE STRING "gpuflow: compile in the HIP backend (ON, OFF, AUTO: if hip/hip_runtime_api.h is found)")
endif()
if(NOT DEFINED GPUFLOW_OPENCL)
    set(GPUFLOW_OPENCL "AUTO" CACHE STRING "gpuflow: compile in the OpenCL backend (ON, OFF, AUTO: if CL/cl.h is found)")
endif()

function(gpuflow_add_backends target)
    find_path(GPUFLOW_CUDA_INCLUDE cuda.h PATHS /usr/local/cuda/include ENV CUDA_PATH PATH_SUFFIXES include)
    find_path(GPUFLOW_HIP_INCLUDE hip/hip_runtime_api.h PATHS /opt/rocm/include /usr/include)
    find_path(GPUFLOW_OPENCL_INCLUDE CL/cl.h)
    foreach(b CUDA HIP OPENCL)
        # The mode is kept in a name that is not itself a CMake constant: `if(on)` reads the
        # constant ON, so every backend was forced on whatever the option said.
        string(TOUPPER "${GPUFLOW_${b}}" _gpuflow_mode)
        if(_gpuflow_mode STREQUAL "AUTO")
            set(_gpuflow_mode OFF)
            if(GPUFLOW_${b}_INCLUDE)
                set(_gpuflow_mode ON)
            endif()
        elseif(NOT _gpuflow_mode MATCHES "^(ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
            message(FATAL_ERROR "gpuflow: GPUFLOW_${b}=${GPUFLOW_${b}} is not understood (ON, OFF or AUTO)")
        endif()
        if(_gpuflow_mode)
            if(NOT GPUFLOW_${b}_INCLUDE)
                message(FATAL_ERROR "gpuflow: GPUFLOW_${b}=ON but its vendor header was not found (set GPUFLOW_${b}_INCLUDE)")
            endif()
            target_compile_definitions(${target} INTERFACE GPUFLOW_${b})
            target_include_directories(${target} SYSTEM INTERFACE "${GPUFLOW_${b}_INCLUDE}")
            message(STATUS "gpuflow: ${b} backend compiled in (${GPUFLOW_${b}_INCLUDE})")
        endif()
    endforeach()
endfunction()
