# gpuflow -- tests, sanitizers, examples, benchmarks, install.
#
#   make test                  build and run every test and example; the last line is `N passed, N failed`
#   make test-gpu              on the GPU machine: the conformance suite on CUDA (+ memcheck)
#   make test-multigpu         the multi-device tests and NCCL on every GPU present (one GPU: two devices on it)
#   make test-vulkan           gpuflow with a real Vulkan driver (NVIDIA's on the GPU machine; VULKAN_INCLUDE=dir)
#   make sanitize              the tests under ASan+UBSan, then under TSan
#   make analyze               clang's static analyzer over the header (every backend) and the tests (make test: the header)
#   make stress                8 threads over shared objects, a create/destroy soak, a race-detector
#                              toggle storm, the kernel cache under 6 processes and a corrupter (bounded)
#   make fuzz                  the API-sequence fuzzer, then the recording replayer's, for FUZZ_TIME seconds
#                              each (clang, libFuzzer), then the lines of gpuflow.h the API corpus reaches
#   make tools                 build/tools/gfreplay: replays a recording (GPUFLOW_RECORD=file)
#   make examples | bench      build (and run) examples/*.c; build bench/*.c
#   make install PREFIX=dir    headers to dir/include, gpuflow.pc, a CMake package (gpuflow::gpuflow)
#   make ptx                   regenerate the test kernels' PTX (needs nvcc)
#   make clean
#
# A vendor backend is compiled into the tests only when its headers are here AND its
# gpuflow_<b>.h exists; a backend without a driver or device skips itself at run time.

CC           ?= cc
GXX          ?= g++
CLANG        ?= clang
CLANGXX      ?= clang++
NVCC         ?= nvcc
CUDA_INCLUDE ?= /usr/local/cuda/include
HIP_INCLUDE  ?= $(firstword $(wildcard /opt/rocm/include) /usr/include)
PREFIX       ?= /usr/local
BUILD        ?= build

CSTD   = -std=c99
WARN   = -Wall -Wextra -Wpedantic -Werror
OPT    = -g -Og
LDLIBS = -pthread -ldl -lm

# ---- which backends to compile in ------------------------------------------------------------
HAVE_CUDA   := $(shell test -f gpuflow_cuda.h && test -f $(CUDA_INCLUDE)/cuda.h && echo 1)
HAVE_OPENCL := $(shell test -f gpuflow_opencl.h && printf '\043include <CL/cl.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
HAVE_HIP    := $(shell test -f gpuflow_hip.h && test -f $(HIP_INCLUDE)/hip/hip_runtime_api.h && echo 1)
HAVE_CLANG  := $(shell command -v $(CLANG) >/dev/null 2>&1 && echo 1)
# NVRTC beside the CUDA headers: CI compiles every kernel file to PTX with it (no GPU needed)
HAVE_NVRTC  := $(if $(HAVE_CUDA),$(shell ls $(dir $(CUDA_INCLUDE))lib64/libnvrtc.so* >/dev/null 2>&1 && echo 1))
PTXAS       ?= $(dir $(CUDA_INCLUDE))bin/ptxas
HAVE_CLANGXX:= $(shell command -v $(CLANGXX) >/dev/null 2>&1 && echo 1)

# /usr/include is already a system directory; naming it again would reorder C++'s include_next
isys = $(if $(filter /usr/include,$(1)),,-isystem $(1))
BACKENDS = $(if $(HAVE_CUDA),-DGPUFLOW_CUDA $(call isys,$(CUDA_INCLUDE))) \
           $(if $(HAVE_OPENCL),-DGPUFLOW_OPENCL) \
           $(if $(HAVE_HIP),-DGPUFLOW_HIP $(call isys,$(HIP_INCLUDE)))

HDRS = gpuflow.h $(wildcard gpuflow_*.h) tests/harness.h tests/backends.h tests/test_kernels.h tests/rtc_check.h tests/dialect_kernels.gfk \
       tests/newcomer.gfk tests/newcomer_error.inc tests/decide.gfk $(BUILD)/flags

# ---- make test ---------------------------------------------------------------------------------
TEST_BINS = $(BUILD)/conformance $(BUILD)/bad_input $(BUILD)/threads $(BUILD)/no_driver $(BUILD)/reliability $(BUILD)/races \
            $(BUILD)/faults $(BUILD)/dialect $(BUILD)/cache $(BUILD)/stub_checks $(BUILD)/no_stalls $(BUILD)/interop $(BUILD)/multi_device $(BUILD)/vulkan $(BUILD)/fuzz_replay $(BUILD)/debug_shells $(BUILD)/newcomer $(BUILD)/newcomer_stubonly $(BUILD)/on_demand $(BUILD)/realtime $(BUILD)/hot_reload $(BUILD)/decide \
            $(BUILD)/record $(BUILD)/fuzz_record_replay $(BUILD)/tools/gfreplay $(BUILD)/cpp_gxx $(if $(HAVE_CLANGXX),$(BUILD)/cpp_clangxx) \
            $(if $(HAVE_CLANG),$(BUILD)/conformance_clang) $(BUILD)/conformance_debug $(BUILD)/interop_debug $(if $(HAVE_CUDA),$(BUILD)/nvrtc_check) \
            $(if $(HAVE_HIP),$(BUILD)/hiprtc_check $(BUILD)/hiprtc_missing) $(if $(HAVE_OPENCL),$(BUILD)/opencl_limits)
# tests/run.sh runs these TEST_JOBS at a time (default: every core), the longest first; "then:"
# waits for the one before it.
TEST_RUNS = "sh tests/windows.sh $(BUILD) examples" "sh tests/windows.sh $(BUILD) tests" \
            "sh tests/examples.sh $(BUILD)/examples-test '$(CC) $(CSTD) $(WARN) $(BACKENDS)' stub $(if $(HAVE_OPENCL),opencl)" \
            "then: sh tests/replay.sh $(BUILD)/tools/gfreplay $(BUILD)/examples-test $(BUILD) stub $(if $(HAVE_OPENCL),opencl)" \
            "sh tests/compile_checks.sh $(BUILD) '$(CC) $(CSTD) $(WARN) $(call isys,$(CUDA_INCLUDE)) $(call isys,$(HIP_INCLUDE))' \
                $(if $(HAVE_CUDA),cuda) $(if $(HAVE_OPENCL),opencl) $(if $(HAVE_HIP),hip)" \
            "sh tests/package.sh $(BUILD)" "sh tests/doc_blocks.sh $(BUILD)" \
            "CC='$(CC)' CXX='$(GXX)' sh tests/header_versions.sh $(VENDOR_HEADERS) $(CUDA_INCLUDE)" \
            "sh tests/cross.sh $(BUILD) aarch64" "sh tests/cross.sh $(BUILD) i686" "sh tests/readme.sh $(BUILD)" \
            "sh tests/env_debug.sh $(BUILD)/env-debug '$(CC) $(CSTD) $(WARN)'" "sh tests/valgrind.sh $(BUILD)/valgrind '$(CC) $(CSTD) $(WARN)'" \
            "$(BUILD)/conformance stub" "$(BUILD)/conformance opencl" \
            "$(BUILD)/conformance cuda" "$(BUILD)/conformance hip" \
            "$(BUILD)/bad_input" "$(BUILD)/threads stub" "$(BUILD)/threads opencl" \
            "$(BUILD)/reliability stub" "$(BUILD)/reliability opencl" \
            "$(BUILD)/races stub" "$(BUILD)/races opencl" "$(BUILD)/dialect stub" "$(BUILD)/dialect opencl" "$(BUILD)/cache opencl" "$(BUILD)/stub_checks" \
            "$(BUILD)/no_stalls stub" "$(BUILD)/no_stalls opencl" "$(BUILD)/interop stub" "$(BUILD)/interop opencl" "$(BUILD)/vulkan stub" \
            "$(BUILD)/multi_device stub" "GPUFLOW_STUB_DEVICES=2 $(BUILD)/multi_device stub" "$(BUILD)/multi_device staged" "$(BUILD)/multi_device opencl" "$(BUILD)/multi_device mixed" \
            "$(BUILD)/faults alloc stub" "$(BUILD)/faults slots stub" "$(BUILD)/faults slots opencl" "$(BUILD)/faults entries opencl" \
            "$(BUILD)/fuzz_replay tests/fuzz_corpus" "$(BUILD)/debug_shells" \
            "$(BUILD)/newcomer stub" "$(BUILD)/newcomer opencl" "$(BUILD)/newcomer_stubonly stub" "$(BUILD)/on_demand stub" "$(BUILD)/on_demand opencl" "$(BUILD)/realtime stub" "$(BUILD)/realtime opencl" \
            "$(BUILD)/hot_reload stub" "$(BUILD)/hot_reload opencl" "$(BUILD)/decide stub" "$(BUILD)/decide opencl" \
            "$(BUILD)/record stub" "$(BUILD)/record opencl" "$(BUILD)/fuzz_record_replay tests/replay_corpus" \
            $(if $(HAVE_OPENCL),"$(BUILD)/opencl_limits") \
            $(if $(HAVE_NVRTC),"$(BUILD)/nvrtc_check --require $(if $(wildcard $(PTXAS)),--ptxas $(PTXAS)) $(wildcard examples/*.gfk tests/*.gfk)") \
            $(if $(HAVE_HIP),"$(BUILD)/hiprtc_check --require $(wildcard examples/*.gfk tests/*.gfk)" "$(BUILD)/hiprtc_missing --expect-missing") \
            "$(BUILD)/no_driver" "$(BUILD)/cpp_gxx" \
            $(if $(HAVE_CLANGXX),"$(BUILD)/cpp_clangxx") \
            $(if $(HAVE_CLANG),"$(BUILD)/conformance_clang stub") \
            "$(BUILD)/conformance_debug stub" $(if $(HAVE_OPENCL),"$(BUILD)/conformance_debug opencl") "$(BUILD)/interop_debug stub" \
            "sh tests/backend_rules.sh $(CC)" "sh tests/await.sh $(BUILD)/analyze-header" \
            $(if $(HAVE_CUDA),"sh tests/driver_skew.sh $(BUILD)/driver-skew '$(CC) $(CSTD) $(WARN)' $(CUDA_INCLUDE)")

# make analyze: the header with every backend, and each test program as make test builds it
# (the *_sigcheck_fail files must not compile; cuBLAS's test compiles CUDA alone)
ANALYZE_FILES = gpuflow.h $(filter-out tests/%_sigcheck_fail.c tests/cublas_interop.c $(if $(HAVE_CUDA),,tests/cuda_backend.c tests/nvrtc_check.c), \
                  $(sort $(wildcard tests/*.c))) \
                $(if $(HAVE_CUDA),'tests/cublas_interop.c=$(CC) $(CSTD) -DGPUFLOW_CUDA $(call isys,$(CUDA_INCLUDE))')
analyze:
	@sh tests/analyze.sh $(BUILD)/analyze '$(CC) $(CSTD) $(BACKENDS)' $(ANALYZE_FILES)

.PHONY: tools test test-gpu test-multigpu test-vulkan analyze sanitize examples bench install clean ptx stress stress-sanitize fuzz faults-all hip-headers vendor-headers FORCE
.DELETE_ON_ERROR:

# make test starts the static analyzer over the header (every backend compiled in; the longest
# single step, 3 minutes on one core) in the background first, builds its programs on every
# core, then runs the tests one more at a time than there are cores (tests/run.sh; wine, qemu
# and the programs' own waits leave a core idle otherwise): the whole run stays under 10
# minutes on 2 cores. When make test ends early (a failed build, Ctrl-C), the analyzer goes
# with it (tests/await.sh stop; the line with $(MAKE) stays on its own, since make -n runs it).
# `make analyze` adds every test program.
JOBS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
ANALYZER_STOP = sh tests/await.sh stop $(BUILD)/analyze-header
test: | $(BUILD)
	@sh tests/await.sh start $(BUILD)/analyze-header sh tests/analyze.sh $(BUILD)/analyze '$(CC) $(CSTD) $(BACKENDS)' gpuflow.h
	@trap '$(ANALYZER_STOP)' INT TERM; $(MAKE) --no-print-directory -j$(JOBS) $(TEST_BINS) || { $(ANALYZER_STOP); exit 1; }
	@echo "backends compiled in:$(if $(HAVE_CUDA), cuda)$(if $(HAVE_OPENCL), opencl)$(if $(HAVE_HIP), hip) stub"
	@trap '$(ANALYZER_STOP)' EXIT; trap 'exit 130' INT TERM; \
	TEST_TIMEOUT=$${TEST_TIMEOUT:-300} TEST_JOBS=$${TEST_JOBS:-$$(($(JOBS) + 1))} sh tests/run.sh $(TEST_RUNS)

$(BUILD) $(BUILD)/asan $(BUILD)/tsan $(BUILD)/msan $(BUILD)/examples $(BUILD)/bench $(BUILD)/tools:
	@mkdir -p $@

# Rebuild everything when the compilers, flags or compiled-in backends change.
FLAGS_NOW = $(CC) $(GXX) $(CLANG) $(CLANGXX) $(OPT) $(BACKENDS)
$(BUILD)/flags: FORCE | $(BUILD)
	@echo '$(FLAGS_NOW)' | cmp -s - $@ || echo '$(FLAGS_NOW)' > $@
FORCE:

$(BUILD)/%: tests/%.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(BACKENDS) $< -o $@ $(LDLIBS)

# The tests that use only the public API link one compile of the implementation instead of each
# compiling it again (GF_TEST_LINKED_IMPL: tests/backends.h): make test's builds took 224 of its
# 549 s on 2 cores before, 117 after (with -Og). The others define allocators, GPUFLOW_DEBUG...
LINKED_IMPL_TESTS = bad_input cache conformance decide dialect hot_reload interop no_driver no_stalls on_demand races realtime threads
$(BUILD)/gpuflow_impl.o: gpuflow.h $(wildcard gpuflow_*.h) $(BUILD)/flags | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(BACKENDS) -DGPUFLOW_IMPLEMENTATION -x c -c gpuflow.h -o $@
$(addprefix $(BUILD)/,$(LINKED_IMPL_TESTS)): $(BUILD)/%: tests/%.c $(HDRS) $(BUILD)/gpuflow_impl.o | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(BACKENDS) -DGF_TEST_LINKED_IMPL $< $(BUILD)/gpuflow_impl.o -o $@ $(LDLIBS)

tools: $(BUILD)/tools/gfreplay
# tools/gfreplay: replays a recording (GPUFLOW_RECORD); it builds the stub's kernels against this gpuflow.h
$(BUILD)/tools/gfreplay: tools/gfreplay.c $(HDRS) | $(BUILD)/tools
	$(CC) $(CSTD) $(WARN) -O2 $(BACKENDS) -DGFREPLAY_INCLUDE='"$(CURDIR)"' $< -o $@ $(LDLIBS) -rdynamic
$(BUILD)/fuzz_record_replay: tests/fuzz_record.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) -DFUZZ_REPLAY $< -o $@ $(LDLIBS)
$(BUILD)/asan/fuzz_record_replay: tests/fuzz_record.c $(HDRS) | $(BUILD)/asan
	$(CC) $(CSTD) $(WARN) -g -O1 $(ASAN) -DFUZZ_REPLAY $< -o $@ $(LDLIBS)

# the newcomer regressions once more with no vendor backend: the not-compiled-in refusals
$(BUILD)/newcomer_stubonly: tests/newcomer.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $< -o $@ $(LDLIBS)

# Vulkan's headers (types only: the loader is opened at run time): Debian's libvulkan-dev, or
# VULKAN_INCLUDE=dir (the GPU machine: a copy carried in .gl/include)
VULKAN_INCLUDE ?=
$(BUILD)/vulkan: tests/vulkan.c examples/vulkan_setup.h examples/scale.gfk $(HDRS) $(BUILD)/gpuflow_impl.o | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(BACKENDS) $(if $(VULKAN_INCLUDE),-isystem $(VULKAN_INCLUDE)) -DGF_TEST_LINKED_IMPL $< $(BUILD)/gpuflow_impl.o -o $@ $(LDLIBS)

# make test-vulkan: gpuflow with a real Vulkan driver (NVIDIA's on the GPU machine: the loader
# carried as the device README says); skips where no driver exports opaque fds
# (and each run recorded and replayed where it ran: its semaphores and imports by stand-ins)
test-vulkan: $(BUILD)/vulkan $(BUILD)/tools/gfreplay
	@if [ -f "$(NV_OPENCL)" ]; then mkdir -p $(BUILD)/icd && echo "$(NV_OPENCL)" > $(BUILD)/icd/nvidia.icd; fi
	@mkdir -p $(BUILD)/replay-vulkan
	@if [ -f "$(NV_OPENCL)" ]; then export OCL_ICD_VENDORS=$(abspath $(BUILD)/icd); fi; \
	TEST_JOBS=$${TEST_JOBS:-1} sh tests/run.sh "$(BUILD)/vulkan cuda" "$(BUILD)/vulkan hip" "$(BUILD)/vulkan opencl" "$(BUILD)/vulkan stub" \
	    "env REPLAY_TESTS=vulkan sh tests/replay.sh $(BUILD)/tools/gfreplay $(BUILD)/replay-vulkan $(BUILD) $(if $(HAVE_CUDA),cuda) $(if $(HAVE_OPENCL),opencl) stub"

# cuBLAS's headers and HIP's define the same vector types: this test compiles CUDA alone
$(BUILD)/cublas_interop: tests/cublas_interop.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) -DGPUFLOW_CUDA $(call isys,$(CUDA_INCLUDE)) $< -o $@ $(LDLIBS)

$(BUILD)/cuda_backend: tests/cuda_backend.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(call isys,$(CUDA_INCLUDE)) $< -o $@ $(LDLIBS)

# the NVRTC check compiles the CUDA backend itself (no -D list: it defines what it needs)
$(BUILD)/nvrtc_check: tests/nvrtc_check.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(call isys,$(CUDA_INCLUDE)) $< -o $@ $(LDLIBS)

# hiprtc compiles every kernel file to AMD code objects without a GPU (Debian's ROCm runtime
# carries hiprtc); the second build names a hiprtc that is not there: the refusal path
$(BUILD)/hiprtc_check: tests/hip_on_cuda/hiprtc_check.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(call isys,$(HIP_INCLUDE)) $< -o $@ $(LDLIBS)

$(BUILD)/hiprtc_missing: tests/hip_on_cuda/hiprtc_check.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) $(call isys,$(HIP_INCLUDE)) -DGF__HIPRTC_IN_RUNTIME=0 \
	    -DGF__HIPRTC_NAMES='"libhiprtc-missing.so.5"' $< -o $@ $(LDLIBS)

# GPUFLOW_DEBUG: every "caller holds this lock" is an assert (GF__HELD), destroyed objects stay shells
$(BUILD)/conformance_debug: tests/conformance.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) -O1 -g -DGPUFLOW_DEBUG $(BACKENDS) $< -o $@ $(LDLIBS)
# interop under GPUFLOW_DEBUG: imported and shared memory has no guard zones to check
$(BUILD)/interop_debug: tests/interop.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) -O1 -g -DGPUFLOW_DEBUG $(BACKENDS) $< -o $@ $(LDLIBS)

$(BUILD)/conformance_clang: tests/conformance.c $(HDRS) | $(BUILD)
	$(CLANG) $(CSTD) $(WARN) $(OPT) $(BACKENDS) $< -o $@ $(LDLIBS)

$(BUILD)/cpp_gxx: tests/cpp_compile.cpp $(HDRS) | $(BUILD)
	$(GXX) -std=c++11 $(WARN) $(OPT) $(BACKENDS) $< -o $@ $(LDLIBS)

$(BUILD)/cpp_clangxx: tests/cpp_compile.cpp $(HDRS) | $(BUILD)
	$(CLANGXX) -std=c++11 $(WARN) $(OPT) $(BACKENDS) $< -o $@ $(LDLIBS)

# C++ under ThreadSanitizer: the stub's fiber hooks must link unmangled
$(BUILD)/tsan/cpp_clangxx: tests/cpp_compile.cpp $(HDRS) | $(BUILD)/tsan
	$(CLANGXX) -std=c++11 $(WARN) -g -O1 $(TSAN) $< -o $@ $(LDLIBS)

# ---- make test-gpu (the GPU machine) ---------------------------------------------------------------
# CUDA, then OpenCL through NVIDIA's ICD (registered here through OCL_ICD_VENDORS when its
# library is present), then memcheck. memcheck does not report the API errors that the suite
# provokes on purpose (unknown kernel, bad PTX, refused graph update, unjoined capture). The GPU
# targets and the stress runs run one test at a time (TEST_JOBS=1): they share one device, and
# stress runs measure.
NV_OPENCL ?= /usr/local/nvidia/lib64/libnvidia-opencl.so.1
test-gpu: $(BUILD)/conformance $(BUILD)/threads $(BUILD)/reliability $(BUILD)/races $(BUILD)/faults $(BUILD)/dialect $(BUILD)/newcomer $(BUILD)/cache $(BUILD)/no_stalls $(BUILD)/interop $(BUILD)/multi_device $(BUILD)/on_demand $(BUILD)/realtime $(BUILD)/hot_reload $(BUILD)/decide $(BUILD)/record $(BUILD)/tools/gfreplay \
          $(BUILD)/cublas_interop $(BUILD)/nvrtc_check $(BUILD)/cuda_backend $(BUILD)/graph_pool_measure $(BUILD)/conformance_debug
	@test -n "$(HAVE_CUDA)" || { echo "test-gpu: needs $(CUDA_INCLUDE)/cuda.h and gpuflow_cuda.h"; exit 1; }
	@if [ -f "$(NV_OPENCL)" ]; then mkdir -p $(BUILD)/icd && echo "$(NV_OPENCL)" > $(BUILD)/icd/nvidia.icd; fi
	@status=0; \
	OCL_ICD_VENDORS=$(abspath $(BUILD)/icd) TEST_JOBS=$${TEST_JOBS:-1} sh tests/run.sh "$(BUILD)/conformance cuda" "$(BUILD)/threads cuda" "$(BUILD)/reliability cuda" "$(BUILD)/races cuda" \
	    "$(BUILD)/faults entries cuda" "$(BUILD)/faults slots cuda" "$(BUILD)/dialect cuda" "$(BUILD)/dialect opencl" \
	    "$(BUILD)/newcomer cuda" "$(BUILD)/newcomer opencl" "$(BUILD)/cache cuda" "$(BUILD)/cache opencl" "$(BUILD)/on_demand cuda" "$(BUILD)/on_demand opencl" "$(BUILD)/realtime cuda" "$(BUILD)/realtime opencl" \
	    "$(BUILD)/hot_reload cuda" "$(BUILD)/hot_reload opencl" "$(BUILD)/decide cuda" "$(BUILD)/decide opencl" \
	    "$(BUILD)/record cuda" "$(BUILD)/record opencl" \
	    "$(BUILD)/conformance opencl" "$(BUILD)/threads opencl" "$(BUILD)/reliability opencl" "$(BUILD)/races opencl" \
	    "$(BUILD)/conformance_debug cuda" "$(BUILD)/conformance_debug opencl" "$(BUILD)/no_stalls cuda" "$(BUILD)/no_stalls opencl" "$(BUILD)/interop cuda" "$(BUILD)/interop opencl" \
	    "$(BUILD)/multi_device cuda" "$(BUILD)/multi_device opencl" "$(BUILD)/multi_device mixed cuda" \
	    "$(BUILD)/cublas_interop" "$(BUILD)/cuda_backend" "$(BUILD)/graph_pool_measure cuda" "$(BUILD)/nvrtc_check --require --arch compute_90 --ptxas $(PTXAS) $(wildcard examples/*.gfk tests/*.gfk)" \
	    "sh tests/examples.sh $(BUILD)/examples-gpu '$(CC) $(CSTD) $(WARN) $(BACKENDS)' cuda opencl" \
	    "then: sh tests/replay.sh $(BUILD)/tools/gfreplay $(BUILD)/examples-gpu $(BUILD) cuda opencl" || status=1; \
	if [ -f $(HIP_HEADERS)/hip/hip_runtime_api.h ]; then \
	    CC='$(CC)' HIP_HEADERS=$(HIP_HEADERS) CUDA_INCLUDE=$(CUDA_INCLUDE) TEST_TIMEOUT=300 \
	        sh tests/run.sh "sh tests/hip_on_cuda/run.sh $(BUILD)/hip_on_cuda" || status=1; \
	else echo "notice: $(HIP_HEADERS)/hip not found (make hip-headers, then carry it): HIP through the stand-in skipped"; fi; \
	if command -v compute-sanitizer >/dev/null 2>&1; then \
	    echo "== compute-sanitizer --tool memcheck --report-api-errors no $(BUILD)/conformance cuda"; \
	    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 $(BUILD)/conformance cuda || status=1; \
	    echo "== compute-sanitizer --tool memcheck --report-api-errors no $(BUILD)/interop cuda"; \
	    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 $(BUILD)/interop cuda || status=1; \
	    echo "== compute-sanitizer --tool memcheck --report-api-errors no $(BUILD)/record cuda"; \
	    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 $(BUILD)/record cuda || status=1; \
	else echo "notice: compute-sanitizer not found; memcheck skipped"; fi; \
	exit $$status

# ---- make test-multigpu (every GPU present; unchanged from one GPU to several) ----------------------
# The multi-device tests on CUDA, NVIDIA's OpenCL and a stub + CUDA pair (with one GPU: two
# gf_devices on it), the NCCL all-reduce over every GPU (skipped without libnccl.so.2), and
# memcheck over the CUDA run. NCCL_* variables already set are left as they are.
test-multigpu: $(BUILD)/multi_device $(BUILD)/examples/nccl_allreduce
	@test -n "$(HAVE_CUDA)" || { echo "test-multigpu: needs $(CUDA_INCLUDE)/cuda.h and gpuflow_cuda.h"; exit 1; }
	@if [ -f "$(NV_OPENCL)" ]; then mkdir -p $(BUILD)/icd && echo "$(NV_OPENCL)" > $(BUILD)/icd/nvidia.icd; fi
	@status=0; \
	OCL_ICD_VENDORS=$(abspath $(BUILD)/icd) GPUFLOW_OPENCL_PLATFORM=$${GPUFLOW_OPENCL_PLATFORM:-NVIDIA} TEST_JOBS=$${TEST_JOBS:-1} sh tests/run.sh \
	    "$(BUILD)/multi_device cuda" "$(BUILD)/multi_device opencl" "$(BUILD)/multi_device mixed cuda" "sh tests/nccl_check.sh $(BUILD)/examples/nccl_allreduce" || status=1; \
	if command -v compute-sanitizer >/dev/null 2>&1; then \
	    echo "== compute-sanitizer --tool memcheck --report-api-errors no $(BUILD)/multi_device cuda"; \
	    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 $(BUILD)/multi_device cuda || status=1; \
	else echo "notice: compute-sanitizer not found; memcheck skipped"; fi; \
	exit $$status
$(BUILD)/examples/nccl_allreduce: examples/nccl_allreduce.c $(HDRS) | $(BUILD)/examples
	$(CC) $(CSTD) $(WARN) $(OPT) -I. -DGPUFLOW_CUDA $(call isys,$(CUDA_INCLUDE)) $< -o $@ $(LDLIBS)

# HIP on the GPU machine: tests/hip_on_cuda builds a stand-in libamdhip64.so over the CUDA driver
# API and runs the HIP suite through it. That machine has no HIP headers: `make hip-headers` here
# copies Debian's into $(HIP_HEADERS) (git-ignored), which the device run carries.
# Vendor headers of the oldest and newest versions the backends support (git-ignored), for
# tests/header_versions.sh, which make test runs (a set not fetched is skipped): CUDA 12.3's
# cuda.h, cudaTypedefs.h, nvrtc.h and nvtx3 (NVIDIA's redistributable archives, sha256-checked)
# and the oldest and newest Khronos OpenCL headers (GitHub tags, else Debian's opencl-c-headers).
VENDOR_HEADERS ?= .vendor-headers
vendor-headers:
	sh tests/fetch_headers.sh $(VENDOR_HEADERS)

HIP_HEADERS ?= .hip-headers
hip-headers:
	mkdir -p $(HIP_HEADERS) && rm -rf $(HIP_HEADERS)/hip && cp -r $(HIP_INCLUDE)/hip $(HIP_HEADERS)/

# ---- make sanitize ---------------------------------------------------------------------------------
ASAN = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TSAN = -fsanitize=thread
MSAN = -fsanitize=memory -fno-omit-frame-pointer
SAN_ENV = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
          UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
          TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# The sanitizer builds hold the core and the stub only: that is what they run, and vendor
# runtimes (PoCL, drivers) are not built with the sanitizers. races runs under ASan only: its
# racy programs race for real on the stub (that is what the detector must report).
$(BUILD)/asan/%: tests/%.c $(HDRS) | $(BUILD)/asan
	$(CC) $(CSTD) $(WARN) -g -O1 $(ASAN) $< -o $@ $(LDLIBS)

$(BUILD)/tsan/%: tests/%.c $(HDRS) | $(BUILD)/tsan
	$(CC) $(CSTD) $(WARN) -g -O1 $(TSAN) $< -o $@ $(LDLIBS)

# MemorySanitizer (clang only): a read of memory nothing wrote, e.g. a command field of
# another kind (gf_launch fills only a launch's fields of its command)
$(BUILD)/msan/%: tests/%.c $(HDRS) | $(BUILD)/msan
	$(CLANG) $(CSTD) $(WARN) -g -O1 $(MSAN) $< -o $@ $(LDLIBS)
$(BUILD)/msan/fuzz_replay: tests/fuzz.c $(HDRS) | $(BUILD)/msan
	$(CLANG) $(CSTD) $(WARN) -g -O1 $(MSAN) -DFUZZ_REPLAY $< -o $@ $(LDLIBS)
MSAN_TESTS = $(if $(HAVE_CLANG),$(BUILD)/msan/conformance $(BUILD)/msan/races $(BUILD)/msan/bad_input $(BUILD)/msan/fuzz_replay)
MSAN_RUNS = $(if $(HAVE_CLANG),"$(BUILD)/msan/conformance stub" "$(BUILD)/msan/races stub" "$(BUILD)/msan/bad_input" \
              "$(BUILD)/msan/fuzz_replay tests/fuzz_corpus")

SAN_BINS = $(BUILD)/asan/conformance $(BUILD)/asan/bad_input $(BUILD)/asan/threads $(BUILD)/asan/reliability $(BUILD)/asan/races \
          $(BUILD)/asan/faults $(BUILD)/asan/dialect $(BUILD)/tsan/dialect $(BUILD)/asan/fuzz_replay $(BUILD)/asan/debug_shells \
          $(BUILD)/asan/stub_checks $(BUILD)/tsan/stub_checks $(BUILD)/asan/no_stalls $(BUILD)/tsan/no_stalls $(BUILD)/asan/interop $(BUILD)/tsan/interop \
          $(BUILD)/asan/multi_device $(BUILD)/tsan/multi_device $(BUILD)/tsan/conformance $(BUILD)/tsan/threads $(BUILD)/tsan/reliability \
          $(BUILD)/asan/on_demand $(BUILD)/tsan/on_demand $(BUILD)/asan/realtime $(BUILD)/tsan/realtime \
          $(BUILD)/asan/hot_reload $(BUILD)/tsan/hot_reload $(BUILD)/asan/decide $(BUILD)/tsan/decide \
          $(BUILD)/asan/record $(BUILD)/tsan/record $(BUILD)/asan/fuzz_record_replay $(BUILD)/tsan/cpp_clangxx $(MSAN_TESTS)
# built on every core like make test's programs, then run side by side (tests/run.sh)
sanitize:
	@$(MAKE) --no-print-directory -j$(JOBS) $(SAN_BINS)
	@$(SAN_ENV) sh tests/run.sh "$(BUILD)/asan/conformance stub" "$(BUILD)/asan/bad_input" \
	    "$(BUILD)/asan/threads stub" "$(BUILD)/asan/reliability stub" "$(BUILD)/asan/races stub" \
	    "$(BUILD)/asan/faults alloc stub" "$(BUILD)/asan/faults slots stub" "$(BUILD)/asan/dialect stub" "$(BUILD)/tsan/dialect stub" \
	    "$(BUILD)/asan/fuzz_replay tests/fuzz_corpus" "$(BUILD)/asan/debug_shells" "$(BUILD)/asan/stub_checks" "$(BUILD)/tsan/stub_checks" \
	    "$(BUILD)/asan/no_stalls stub" "$(BUILD)/tsan/no_stalls stub" "$(BUILD)/asan/interop stub" "$(BUILD)/tsan/interop stub" "$(BUILD)/asan/no_stalls opencl" \
	    "$(BUILD)/asan/multi_device stub" "$(BUILD)/tsan/multi_device stub" "$(BUILD)/asan/multi_device staged" "$(BUILD)/tsan/multi_device staged" \
	    "$(BUILD)/tsan/conformance stub" "$(BUILD)/tsan/threads stub" "$(BUILD)/tsan/reliability stub" \
	    "$(BUILD)/asan/on_demand stub" "$(BUILD)/tsan/on_demand stub" "$(BUILD)/asan/realtime stub" "$(BUILD)/tsan/realtime stub" \
	    "$(BUILD)/asan/hot_reload stub" "$(BUILD)/tsan/hot_reload stub" "$(BUILD)/asan/decide stub" "$(BUILD)/tsan/decide stub" \
	    "$(BUILD)/asan/record stub" "$(BUILD)/tsan/record stub" "$(BUILD)/asan/fuzz_record_replay tests/replay_corpus" "$(BUILD)/tsan/cpp_clangxx" $(MSAN_RUNS)

# Every N of the fault loops rather than a sample (minutes): make faults-all
faults-all: $(BUILD)/faults
	@sh tests/run.sh "$(BUILD)/faults alloc stub --all" "$(BUILD)/faults slots stub --all" \
	    "$(BUILD)/faults slots opencl --all" "$(BUILD)/faults entries opencl --all"

# ---- make fuzz: the API-sequence fuzzer (clang + libFuzzer); make test replays its corpus -----------
FUZZ_TIME ?= 60
$(BUILD)/fuzz: tests/fuzz.c $(HDRS) | $(BUILD)
	@printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }\n' | \
	    $(CLANG) -fsanitize=fuzzer -x c - -o $@.probe 2>/dev/null && rm -f $@.probe || \
	    { echo "make fuzz: $(CLANG) cannot link libFuzzer (Debian: apt-get install libclang-rt-dev)"; exit 1; }
	$(CLANG) $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined $< -o $@ $(LDLIBS)
$(BUILD)/fuzz_replay: tests/fuzz.c $(HDRS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) -DFUZZ_REPLAY $< -o $@ $(LDLIBS)
$(BUILD)/asan/fuzz_replay: tests/fuzz.c $(HDRS) | $(BUILD)/asan
	$(CC) $(CSTD) $(WARN) -g -O1 $(ASAN) -DFUZZ_REPLAY $< -o $@ $(LDLIBS)
$(BUILD)/fuzz_record: tests/fuzz_record.c $(HDRS) | $(BUILD)
	$(CLANG) $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined $< -o $@ $(LDLIBS)
fuzz: $(BUILD)/fuzz $(BUILD)/fuzz_record
	@mkdir -p $(BUILD)/fuzz_corpus $(BUILD)/fuzz_record_corpus
	$(BUILD)/fuzz -max_total_time=$(FUZZ_TIME) -timeout=10 -print_final_stats=1 -artifact_prefix=$(BUILD)/ \
	    $(BUILD)/fuzz_corpus tests/fuzz_corpus
	$(BUILD)/fuzz_record -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$(BUILD)/ \
	    $(BUILD)/fuzz_record_corpus tests/replay_corpus
	@sh tests/fuzz_coverage.sh $(BUILD) $(BUILD)/fuzz_corpus

# ---- make stress -----------------------------------------------------------------------------------
# 8 threads over shared streams, pools, event pools, waiters, flows and graphs for STRESS_SECONDS,
# then a create/destroy soak on a fresh device (50k rounds or STRESS_SECONDS, whichever ends first),
# per backend in STRESS_BACKENDS, printing RSS, fds and threads per 10k rounds, then the race
# detector switched on and off from 2 threads while 4 run correct work (no race may be reported).
# STRESS_UPDATE=update also races gf_graph_update against launches of the same graph. Then the
# kernel cache: 6 processes loading 3 modules against one directory for CACHE_STRESS_SECONDS while
# a 7th damages its entries, on each backend that compiles source (CACHE_STRESS_BACKENDS). stress-sanitize: shorter, under
# ASan+UBSan and TSan, with a soak sample every 500 rounds so the short soak is still judged.
STRESS_SECONDS     ?= 20
STRESS_SAN_SECONDS ?= 5
STRESS_BACKENDS    ?= stub
STRESS_UPDATE      ?= update
CACHE_STRESS_SECONDS  ?= 10
CACHE_STRESS_BACKENDS ?= $(if $(HAVE_OPENCL),opencl) $(if $(HAVE_CUDA),cuda) $(if $(HAVE_HIP),hip)
stress: $(BUILD)/stress $(BUILD)/cache_stress
	@STRESS_SECONDS=$(STRESS_SECONDS) CACHE_STRESS_SECONDS=$(CACHE_STRESS_SECONDS) TEST_TIMEOUT=$$((3 * $(STRESS_SECONDS) + 120)) TEST_JOBS=1 sh tests/run.sh \
	    $(foreach b,$(STRESS_BACKENDS),"$(BUILD)/stress $(b) $(STRESS_UPDATE)") \
	    $(foreach b,$(CACHE_STRESS_BACKENDS),"$(BUILD)/cache_stress $(b)")

stress-sanitize: $(BUILD)/asan/stress $(BUILD)/tsan/stress
	@$(SAN_ENV) STRESS_SECONDS=$(STRESS_SAN_SECONDS) STRESS_SOAK_EVERY=500 TEST_TIMEOUT=$$((4 * $(STRESS_SAN_SECONDS) + 240)) \
	    TEST_JOBS=1 sh tests/run.sh "$(BUILD)/asan/stress stub $(STRESS_UPDATE)" "$(BUILD)/tsan/stress stub $(STRESS_UPDATE)"

# ---- make examples / bench ---------------------------------------------------------------------------
# Each example builds with its own one cc line (stub backend) and runs in build/examples.
examples: | $(BUILD)/examples
	@set -e; for f in examples/*.c; do \
	    [ -e "$$f" ] || { echo "no examples"; break; }; \
	    n=$$(basename "$$f" .c); \
	    echo "$(CC) $(CSTD) $(WARN) -I. $$f -o $(BUILD)/examples/$$n $(LDLIBS)"; \
	    $(CC) $(CSTD) $(WARN) -I. "$$f" -o "$(BUILD)/examples/$$n" $(LDLIBS); \
	    echo "== $$n"; (cd $(BUILD)/examples && ./$$n); \
	done

# A benchmark that compiles in a vendor backend is skipped when that backend's headers are absent.
bench: | $(BUILD)/bench
	@set -e; for f in bench/*.c; do \
	    [ -e "$$f" ] || { echo "no benchmarks"; break; }; \
	    n=$$(basename "$$f" .c); \
	    if grep -q '^#define GPUFLOW_CUDA' "$$f" && [ -z "$(HAVE_CUDA)" ]; then echo "skip $$f: no CUDA headers"; continue; fi; \
	    if grep -q '^#define GPUFLOW_OPENCL' "$$f" && [ -z "$(HAVE_OPENCL)" ]; then echo "skip $$f: no OpenCL headers"; continue; fi; \
	    if grep -q '^#define GPUFLOW_HIP' "$$f" && [ -z "$(HAVE_HIP)" ]; then echo "skip $$f: no HIP headers"; continue; fi; \
	    echo "$(CC) $(CSTD) -O2 -I. $(if $(HAVE_CUDA),$(call isys,$(CUDA_INCLUDE))) $$f -o $(BUILD)/bench/$$n $(LDLIBS)"; \
	    $(CC) $(CSTD) -O2 -I. $(if $(HAVE_CUDA),$(call isys,$(CUDA_INCLUDE))) "$$f" -o "$(BUILD)/bench/$$n" $(LDLIBS); \
	done; echo "benchmarks are in $(BUILD)/bench/"

# ---- make install / ptx / clean ---------------------------------------------------------------------
# Headers, a pkg-config file and a CMake package (find_package(gpuflow) -> gpuflow::gpuflow).
install:
	install -d "$(DESTDIR)$(PREFIX)/include" "$(DESTDIR)$(PREFIX)/lib/pkgconfig" "$(DESTDIR)$(PREFIX)/share/cmake/gpuflow"
	install -m 644 gpuflow*.h "$(DESTDIR)$(PREFIX)/include/"
	install -m 644 cmake/gpuflow.pc "$(DESTDIR)$(PREFIX)/lib/pkgconfig/"
	install -m 644 cmake/gpuflowConfig.cmake cmake/gpuflowConfigVersion.cmake cmake/gpuflow-backends.cmake "$(DESTDIR)$(PREFIX)/share/cmake/gpuflow/"

# The PTX text in tests/test_kernels.h, between its ptx:begin and ptx:end markers.
ptx: | $(BUILD)
	$(NVCC) -ptx -arch=compute_75 tests/kernels.cu -o $(BUILD)/kernels.ptx
	awk 'FNR == NR { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); ptx = ptx "    \"" $$0 "\\n\"\n"; next } \
	     /ptx:begin/ { print; printf "%s", ptx; skip = 1; next } \
	     /ptx:end/ { skip = 0 } \
	     !skip { print }' $(BUILD)/kernels.ptx tests/test_kernels.h > $(BUILD)/test_kernels.h
	mv $(BUILD)/test_kernels.h tests/test_kernels.h

clean:
	rm -rf $(BUILD)
