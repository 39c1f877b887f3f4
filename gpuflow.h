/* gpuflow.h -- GPU streams and everything around them, in one header.

    Do this:
        #define GPUFLOW_IMPLEMENTATION
    before you include this file in *one* C or C++ file to create the implementation.
    Every other file includes it plain, for the declarations.

        #define GPUFLOW_IMPLEMENTATION
        #define GPUFLOW_CUDA              // optional: any of GPUFLOW_CUDA / _HIP / _OPENCL
        #include "gpuflow_cuda.h"         // each backend header includes gpuflow.h
        #include "gpuflow.h"

        cc -std=c99 app.c -o app -pthread -ldl

    No vendor library is linked: a backend loads its driver at run time, so a program built
    with every backend runs on a machine with none of them and falls back to the CPU stub.

    OVERVIEW
    ========
    One API over four backends: CUDA (driver API), HIP, OpenCL and a CPU stub. The stub is a
    faithful emulation, not a no-op: every stream is a FIFO run by its own worker thread, so
    "async" calls return at once and run later, in order, exactly as on a GPU. A program
    that forgets a synchronize misbehaves on the stub too.

        public API (gf_*) -> validation -> core objects -> backend vtable -> driver

    The core (stream pools, stream sets, event pools, barriers, flows, recorded graphs, the
    profiler, the stream-ordered allocator, async waiters) is written once over a small
    vtable of primitive operations; a backend header only fills that vtable.

    CONFIGURATION (define before including the implementation)
    =============
        GPUFLOW_IMPLEMENTATION   emit the implementation in this translation unit
        GPUFLOW_CUDA / _HIP / _OPENCL   compile in a vendor backend (include its header)
        GPUFLOW_API              decoration of every public function (default: extern)
        GPUFLOW_STATIC           make every public function static (one-TU use)
        GPUFLOW_MALLOC(n) / GPUFLOW_REALLOC(p, n) / GPUFLOW_FREE(p)   memory (default: libc)
        GPUFLOW_ASSERT(c)        internal invariants (default: assert)
        GPUFLOW_STUB_INLINE      the stub runs work inline in the calling thread (debugging)

    Environment: GPUFLOW_BACKEND=cuda|hip|opencl|stub forces the backend that
    GF_BACKEND_AUTO picks.

    CONVENTIONS
    ===========
    - Objects are opaque pointers created by gf_<object>_create(..., &out) and released by
      gf_<object>_destroy. A NULL desc pointer, or a zeroed desc field, means "the default".
    - Every fallible call returns gf_result: GF_OK == 0, failures negative, GF_NOT_READY and
      GF_TIMEOUT positive. gf_last_error() gives this thread's detail for the last failure.
    - Bad input (NULL or wrong-type handles, out-of-range sizes, objects of another device,
      misuse during capture, ...) returns a specific code and changes nothing.
    - Every object may be used from several threads. The order of work on one stream is the
      order in which its enqueue calls returned.
    - Destroying a stream that still has work first waits for that work (it drains).

    CALLBACKS
    =========
    Host callbacks (gf_stream_add_callback, gf_event_on_complete) run on a thread owned by
    the backend or the device. On CUDA and HIP a stream callback must not call into the
    driver: it may touch host memory, signal your own threads, or set flags, but must not
    call gpuflow functions that enqueue, synchronize or allocate. Async waiters
    (gf_event_on_complete) run on the device's waiter thread and may call gpuflow freely,
    except gf_device_close.

    LICENSE: zlib/libpng, see the end of the file.
*/
#ifndef GPUFLOW_H
#define GPUFLOW_H

/* The implementation needs POSIX clocks and threads even under -std=c99. The feature macro
   must come before the first system header, so it is set here. */
#if defined(GPUFLOW_IMPLEMENTATION) && !defined(_WIN32) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif

#include <stddef.h>
#include <stdint.h>

#ifndef GPUFLOW_API
#  ifdef GPUFLOW_STATIC
#    define GPUFLOW_API static
#  else
#    define GPUFLOW_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GPUFLOW_VERSION_MAJOR 0
#define GPUFLOW_VERSION_MINOR 1

/* ---- results ------------------------------------------------------------------------ */
typedef enum gf_result {
    GF_OK                         = 0,
    GF_NOT_READY                  = 1,   /* work still pending (query) */
    GF_TIMEOUT                    = 2,   /* a bounded wait ran out */
    GF_ERROR_INVALID_ARGUMENT     = -1,
    GF_ERROR_INVALID_HANDLE       = -2,  /* NULL, destroyed or of the wrong type */
    GF_ERROR_OUT_OF_RANGE         = -3,  /* offset or size past a buffer's end */
    GF_ERROR_OUT_OF_MEMORY        = -4,
    GF_ERROR_BACKEND_UNAVAILABLE  = -5,  /* not compiled in, or its driver failed to load */
    GF_ERROR_NO_DEVICE            = -6,
    GF_ERROR_NOT_SUPPORTED        = -7,  /* the backend truly cannot do it */
    GF_ERROR_WRONG_DEVICE         = -8,  /* objects of different devices mixed */
    GF_ERROR_CAPTURE              = -9,  /* illegal during (or outside) stream capture */
    GF_ERROR_CYCLE                = -10, /* a flow edge would close a cycle */
    GF_ERROR_INVALID_STATE        = -11, /* e.g. event not recorded, released twice */
    GF_ERROR_NOT_FOUND            = -12, /* kernel name, wait id */
    GF_ERROR_BUILD                = -13, /* module compile / link failed (log in gf_last_error) */
    GF_ERROR_DRIVER               = -14  /* any other driver failure (named in gf_last_error) */
} gf_result;

/* ---- opaque objects ------------------------------------------------------------------ */
typedef struct gf_device      gf_device;
typedef struct gf_buffer      gf_buffer;
typedef struct gf_stream      gf_stream;
typedef struct gf_event       gf_event;
typedef struct gf_event_pool  gf_event_pool;
typedef struct gf_stream_pool gf_stream_pool;
typedef struct gf_stream_set  gf_stream_set;
typedef struct gf_flow        gf_flow;
typedef struct gf_graph       gf_graph;
typedef struct gf_module      gf_module;
typedef struct gf_kernel      gf_kernel;
typedef uint32_t gf_task;

typedef enum gf_backend {
    GF_BACKEND_AUTO = 0, GF_BACKEND_CUDA, GF_BACKEND_HIP, GF_BACKEND_OPENCL, GF_BACKEND_STUB
} gf_backend;

typedef enum gf_priority { GF_PRIORITY_NORMAL = 0, GF_PRIORITY_HIGH, GF_PRIORITY_LOW } gf_priority;

typedef enum gf_workload {
    GF_WORKLOAD_ANY = 0, GF_WORKLOAD_COMPUTE, GF_WORKLOAD_MEMORY,
    GF_WORKLOAD_MIXED, GF_WORKLOAD_COORDINATION
} gf_workload;
#define GF_WORKLOAD_COUNT 5

typedef enum gf_pool_strategy {
    GF_POOL_ROUND_ROBIN = 0,  /* streams in turn */
    GF_POOL_LEAST_PENDING,    /* the stream with the fewest pending operations */
    GF_POOL_PRIORITY,         /* streams at each priority; the hint's priority picks */
    GF_POOL_WORKLOAD          /* compute, memory and coordination work on separate streams */
} gf_pool_strategy;

typedef enum gf_capture_mode {
    GF_CAPTURE_GLOBAL = 0, GF_CAPTURE_THREAD_LOCAL, GF_CAPTURE_RELAXED
} gf_capture_mode;

/* Kinds of operation, as counted by the profiler. */
typedef enum gf_op_kind {
    GF_OP_COPY = 0, GF_OP_FILL, GF_OP_LAUNCH, GF_OP_CALLBACK, GF_OP_GRAPH, GF_OP_WAIT,
    GF_OP_KIND_COUNT
} gf_op_kind;

/* ---- callbacks ----------------------------------------------------------------------- */
typedef void      (*gf_callback)(void *user, gf_result status);   /* status: GF_OK or the stream's error */
typedef gf_result (*gf_task_fn)(gf_stream *stream, void *user);    /* enqueue a flow task's work */
typedef gf_result (*gf_capture_fn)(gf_stream *stream, void *user); /* enqueue the work to capture */

/* ---- descriptions and reports ------------------------------------------------------- */
typedef struct gf_device_info {
    gf_backend backend;
    char   name[256];
    size_t total_memory;
    int    compute_units;         /* SMs, CUs, or CPU threads */
    int    native_graphs;         /* capture becomes a driver graph replayed with one launch */
    int    stream_priorities;     /* priorities reach the hardware scheduler */
    int    managed_memory;        /* gf_buffer_create_managed works */
    int    async_alloc;           /* stream-ordered allocation is the driver's own pool */
    int    spirv;                 /* gf_module_desc.spirv is accepted */
    char   note[256];             /* for GF_BACKEND_AUTO: why other backends were passed over */
} gf_device_info;

typedef struct gf_stream_desc { const char *label; gf_priority priority; } gf_stream_desc;

typedef struct gf_stream_stats {
    uint64_t ops, copies, bytes_copied, launches, callbacks;
    uint64_t pending;             /* operations not yet known to be complete */
    double   busy_ms;             /* device time of profiled operations (profiler on) */
} gf_stream_stats;

#define GF_EVENT_TIMING 1u        /* gf_event_create flag: the event can be timed */

typedef struct gf_event_pool_desc { int capacity; int timing_capacity; } gf_event_pool_desc;
typedef struct gf_event_pool_stats { int available, in_use, created; } gf_event_pool_stats;

typedef struct gf_stream_pool_desc {
    int count;                    /* streams in the pool (default 4) */
    gf_pool_strategy strategy;
    const char *label;            /* streams are labelled "<label>/<i>" */
    int measure_completion;       /* time acquire -> completion per workload (one event per release) */
} gf_stream_pool_desc;
typedef struct gf_acquire_hint { gf_priority priority; gf_workload workload; } gf_acquire_hint;

#define GF_POOL_MAX_STREAMS 64
typedef struct gf_stream_pool_stats {
    int      count;
    uint64_t acquisitions[GF_POOL_MAX_STREAMS];     /* per stream, in pool order */
    uint64_t completions[GF_WORKLOAD_COUNT];        /* measured (measure_completion) */
    double   avg_completion_ms[GF_WORKLOAD_COUNT];  /* acquire -> work done, per workload */
} gf_stream_pool_stats;

typedef struct gf_flow_desc { const char *label; gf_workload workload; } gf_flow_desc;

typedef struct gf_graph_info { int nodes; int native; gf_capture_mode mode; } gf_graph_info;

typedef struct gf_buffer_desc { size_t size; int managed; } gf_buffer_desc;

/* Kernels. One module description carries each backend's form of the same kernels. */
typedef struct gf_launch_dims { unsigned grid[3]; unsigned block[3]; size_t shared_bytes; } gf_launch_dims;
typedef struct gf_arg { const void *value; size_t size; gf_buffer *buffer; } gf_arg;
#define GF_ARG(v)        { &(v), sizeof(v), 0 }
#define GF_ARG_BUFFER(b) { 0, 0, (b) }

typedef struct gf_kernel_ctx { unsigned grid[3], block[3], block_idx[3], thread_idx[3]; } gf_kernel_ctx;
/* A stub kernel runs once per thread; args[i] points at the argument's value, and for a
   buffer at a pointer to the buffer's host memory (as CUDA's kernelParams do). */
typedef struct gf_stub_kernel {
    const char *name;
    void (*fn)(const gf_kernel_ctx *ctx, void *const *args);
} gf_stub_kernel;
typedef struct gf_module_desc {
    const char *ptx; const void *cubin; size_t cubin_size;
    const void *hip_code; size_t hip_code_size;
    const char *opencl_source; const void *spirv; size_t spirv_size;
    const char *build_options;
    const gf_stub_kernel *stub_kernels; int stub_kernel_count;
} gf_module_desc;

/* Profiler. */
#define GF_PROFILE_ON 1u          /* gf_profiler_enable flag; 0 turns profiling off */
#define GF_PROFILE_MAX_STREAMS 64
#define GF_PROFILE_LONGEST 4
typedef struct gf_profile_op {
    gf_op_kind kind; char name[48]; uint64_t bytes; double start_ms, duration_ms;
} gf_profile_op;
typedef struct gf_profile_stream {
    uint64_t id; char label[64];
    uint64_t ops[GF_OP_KIND_COUNT]; uint64_t bytes; double busy_ms;
    gf_profile_op longest[GF_PROFILE_LONGEST];   /* longest first; kind-less entries unused */
} gf_profile_stream;
typedef struct gf_profile_report {
    int stream_count; uint64_t total_ops; uint64_t dropped_ops; double span_ms;
    gf_profile_stream streams[GF_PROFILE_MAX_STREAMS];
} gf_profile_report;

/* ---- results, backends --------------------------------------------------------------- */
GPUFLOW_API const char *gf_result_name(gf_result r);
GPUFLOW_API const char *gf_last_error(void);
GPUFLOW_API const char *gf_backend_name(gf_backend b);
GPUFLOW_API int         gf_backend_available(gf_backend b);

/* ---- devices ------------------------------------------------------------------------- */
GPUFLOW_API int        gf_device_count(gf_backend b);
GPUFLOW_API gf_result  gf_device_open(gf_backend b, int index, gf_device **out);
GPUFLOW_API void       gf_device_close(gf_device *dev);
GPUFLOW_API gf_backend gf_device_backend(const gf_device *dev);
GPUFLOW_API const char *gf_device_name(const gf_device *dev);
GPUFLOW_API gf_result  gf_device_get_info(gf_device *dev, gf_device_info *out);
GPUFLOW_API gf_result  gf_device_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes);
GPUFLOW_API gf_result  gf_device_synchronize(gf_device *dev);

/* ---- memory -------------------------------------------------------------------------- */
GPUFLOW_API gf_result gf_buffer_create(gf_device *dev, size_t bytes, gf_buffer **out);
GPUFLOW_API gf_result gf_buffer_create_desc(gf_device *dev, const gf_buffer_desc *desc, gf_buffer **out);
GPUFLOW_API void      gf_buffer_destroy(gf_buffer *buf);
GPUFLOW_API size_t    gf_buffer_size(const gf_buffer *buf);
GPUFLOW_API gf_result gf_host_alloc(gf_device *dev, size_t bytes, void **out);   /* pinned */
GPUFLOW_API void      gf_host_free(gf_device *dev, void *ptr);
GPUFLOW_API gf_result gf_copy_to_device(gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes);
GPUFLOW_API gf_result gf_copy_to_host(void *dst, gf_buffer *src, size_t src_offset, size_t bytes);
GPUFLOW_API gf_result gf_copy_to_device_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes);
GPUFLOW_API gf_result gf_copy_to_host_async(gf_stream *s, void *dst, gf_buffer *src, size_t src_offset, size_t bytes);
GPUFLOW_API gf_result gf_copy_buffer_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, gf_buffer *src, size_t src_offset, size_t bytes);
GPUFLOW_API gf_result gf_fill_async(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes);
GPUFLOW_API gf_result gf_prefetch_async(gf_stream *s, gf_buffer *buf, int to_device);  /* managed buffers */
GPUFLOW_API gf_result gf_buffer_create_async(gf_stream *s, size_t bytes, gf_buffer **out);  /* stream-ordered */
GPUFLOW_API gf_result gf_buffer_destroy_async(gf_stream *s, gf_buffer *buf);

/* ---- streams ------------------------------------------------------------------------- */
GPUFLOW_API gf_result   gf_stream_create(gf_device *dev, const gf_stream_desc *desc, gf_stream **out);
GPUFLOW_API void        gf_stream_destroy(gf_stream *s);   /* drains pending work first */
GPUFLOW_API gf_result   gf_stream_synchronize(gf_stream *s);
GPUFLOW_API gf_result   gf_stream_query(gf_stream *s);     /* GF_OK or GF_NOT_READY */
GPUFLOW_API gf_result   gf_stream_wait_event(gf_stream *s, gf_event *ev);
GPUFLOW_API gf_result   gf_stream_wait_stream(gf_stream *waiter, gf_stream *other);
GPUFLOW_API gf_result   gf_stream_add_callback(gf_stream *s, gf_callback fn, void *user);
GPUFLOW_API gf_result   gf_stream_get_stats(gf_stream *s, gf_stream_stats *out);
GPUFLOW_API const char *gf_stream_label(const gf_stream *s);
GPUFLOW_API uint64_t    gf_stream_id(const gf_stream *s);
GPUFLOW_API gf_device  *gf_stream_device(const gf_stream *s);

/* ---- events and event pools ------------------------------------------------------------ */
GPUFLOW_API gf_result gf_event_create(gf_device *dev, unsigned flags, gf_event **out);
GPUFLOW_API void      gf_event_destroy(gf_event *ev);
GPUFLOW_API gf_result gf_event_record(gf_event *ev, gf_stream *s);
GPUFLOW_API gf_result gf_event_synchronize(gf_event *ev);
GPUFLOW_API gf_result gf_event_query(gf_event *ev);       /* GF_OK or GF_NOT_READY */
GPUFLOW_API gf_result gf_event_elapsed_ms(gf_event *start, gf_event *end, float *ms);
GPUFLOW_API gf_result gf_event_on_complete(gf_event *ev, gf_callback fn, void *user, uint64_t *wait_id);
GPUFLOW_API gf_result gf_event_cancel_wait(gf_device *dev, uint64_t wait_id);
GPUFLOW_API gf_result gf_event_pool_create(gf_device *dev, const gf_event_pool_desc *desc, gf_event_pool **out);
GPUFLOW_API gf_result gf_event_pool_acquire(gf_event_pool *pool, unsigned flags, gf_event **out);
GPUFLOW_API gf_result gf_event_pool_release(gf_event_pool *pool, gf_event *ev);
GPUFLOW_API gf_result gf_event_pool_get_stats(gf_event_pool *pool, gf_event_pool_stats *out);
GPUFLOW_API void      gf_event_pool_destroy(gf_event_pool *pool);

/* ---- stream pools -------------------------------------------------------------------- */
GPUFLOW_API gf_result gf_stream_pool_create(gf_device *dev, const gf_stream_pool_desc *desc, gf_stream_pool **out);
GPUFLOW_API gf_result gf_stream_pool_acquire(gf_stream_pool *pool, const gf_acquire_hint *hint, gf_stream **out);
GPUFLOW_API gf_result gf_stream_pool_release(gf_stream_pool *pool, gf_stream *s);
GPUFLOW_API gf_result gf_stream_pool_acquire_ready(gf_stream_pool *pool, unsigned timeout_ms, gf_stream **out);
GPUFLOW_API gf_result gf_stream_pool_synchronize(gf_stream_pool *pool);
GPUFLOW_API gf_result gf_stream_pool_get_stats(gf_stream_pool *pool, gf_stream_pool_stats *out);
GPUFLOW_API void      gf_stream_pool_destroy(gf_stream_pool *pool);

/* ---- stream sets: a fixed-depth ring for pipelines ------------------------------------- */
GPUFLOW_API gf_result  gf_stream_set_create(gf_device *dev, int depth, const char *label, gf_stream_set **out);
GPUFLOW_API gf_stream *gf_stream_set_get(gf_stream_set *set, size_t i);
GPUFLOW_API gf_result  gf_stream_set_next(gf_stream_set *set, size_t i, gf_stream **out);
GPUFLOW_API gf_result  gf_stream_set_synchronize(gf_stream_set *set);
GPUFLOW_API void       gf_stream_set_destroy(gf_stream_set *set);

/* ---- barriers ------------------------------------------------------------------------ */
GPUFLOW_API gf_result gf_barrier(gf_stream *const *streams, int count);
GPUFLOW_API gf_result gf_synchronize_all(gf_stream *const *streams, int count, double *elapsed_ms);

/* ---- flows: a DAG of GPU tasks ----------------------------------------------------------- */
GPUFLOW_API gf_result gf_flow_create(gf_device *dev, const gf_flow_desc *desc, gf_flow **out);
GPUFLOW_API gf_result gf_flow_add(gf_flow *flow, const char *name, gf_task_fn fn, void *user, gf_task *out);
GPUFLOW_API gf_result gf_flow_depend(gf_flow *flow, gf_task before, gf_task after);
GPUFLOW_API gf_result gf_flow_run(gf_flow *flow, gf_stream_pool *pool);
GPUFLOW_API gf_result gf_flow_capture(gf_flow *flow, gf_stream *s, gf_graph **out);
GPUFLOW_API void      gf_flow_destroy(gf_flow *flow);

/* ---- graphs -------------------------------------------------------------------------- */
GPUFLOW_API gf_result gf_stream_begin_capture(gf_stream *s, gf_capture_mode mode);
GPUFLOW_API gf_result gf_stream_end_capture(gf_stream *s, gf_graph **out);
GPUFLOW_API gf_result gf_graph_launch(gf_graph *g, gf_stream *s);
GPUFLOW_API gf_result gf_graph_update(gf_graph *target, gf_graph *from);
GPUFLOW_API gf_result gf_graph_capture(gf_stream *s, int warmup_runs, gf_capture_fn fn, void *user, gf_graph **out);
GPUFLOW_API gf_result gf_graph_get_info(gf_graph *g, gf_graph_info *out);
GPUFLOW_API void      gf_graph_destroy(gf_graph *g);

/* ---- kernels ------------------------------------------------------------------------- */
GPUFLOW_API gf_result gf_module_load(gf_device *dev, const gf_module_desc *desc, gf_module **out);
GPUFLOW_API gf_result gf_kernel_get(gf_module *mod, const char *name, gf_kernel **out);
GPUFLOW_API void      gf_module_destroy(gf_module *mod);
GPUFLOW_API gf_result gf_launch(gf_stream *s, gf_kernel *k, gf_launch_dims dims, const gf_arg *args, int count);

/* ---- profiling ----------------------------------------------------------------------- */
GPUFLOW_API gf_result gf_profiler_enable(gf_device *dev, unsigned flags);
GPUFLOW_API gf_result gf_profiler_report(gf_device *dev, gf_profile_report *out);
GPUFLOW_API gf_result gf_profiler_write_trace(gf_device *dev, const char *path);

/* The contract spells these queries like their result types (gf_stream_stats(s, &st)). C
   cannot give a function and a type one name, so each is a function-like macro: the name
   followed by '(' calls the function, the bare name is the type. */
#define gf_device_info(dev, out)       gf_device_get_info((dev), (out))
#define gf_stream_stats(s, out)        gf_stream_get_stats((s), (out))
#define gf_event_pool_stats(p, out)    gf_event_pool_get_stats((p), (out))
#define gf_stream_pool_stats(p, out)   gf_stream_pool_get_stats((p), (out))
#define gf_graph_info(g, out)          gf_graph_get_info((g), (out))

#ifdef __cplusplus
}
#endif
#endif /* GPUFLOW_H */

/* ======================================================================================= */
/*                                  IMPLEMENTATION                                         */
/* ======================================================================================= */
#if defined(GPUFLOW_IMPLEMENTATION) && !defined(GPUFLOW_IMPLEMENTATION_DONE)
#define GPUFLOW_IMPLEMENTATION_DONE

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GPUFLOW_MALLOC
#  define GPUFLOW_MALLOC(n)     malloc(n)
#  define GPUFLOW_REALLOC(p, n) realloc((p), (n))
#  define GPUFLOW_FREE(p)       free(p)
#endif
#ifndef GPUFLOW_ASSERT
#  include <assert.h>
#  define GPUFLOW_ASSERT(c) assert(c)
#endif
#ifdef GPUFLOW_STATIC
#  define GPUFLOW_IMPL GPUFLOW_API
#else
#  define GPUFLOW_IMPL
#endif

/* ---- platform: threads, locks, atomics, clocks, dynamic libraries ----------------------- */
#if defined(_WIN32)
#  ifndef WIN32_LEAN_AND_MEAN
#    define WIN32_LEAN_AND_MEAN
#  endif
#  include <windows.h>
typedef CRITICAL_SECTION   gf__mutex;
typedef CONDITION_VARIABLE gf__cond;
typedef HANDLE             gf__thread;
#  define GF__THREAD_LOCAL __declspec(thread)
#else
#  include <pthread.h>
#  include <time.h>
#  include <errno.h>
#  include <dlfcn.h>
#  if !defined(CLOCK_MONOTONIC)
#    error "gpuflow: include gpuflow.h before other headers in the implementation file, or define _POSIX_C_SOURCE=200809L"
#  endif
typedef pthread_mutex_t gf__mutex;
typedef pthread_cond_t  gf__cond;
typedef pthread_t       gf__thread;
#  define GF__THREAD_LOCAL __thread
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#  include <intrin.h>
#  define gf__atomic_load(p)        (*(volatile long long *)(p))
#  define gf__atomic_store(p, v)    InterlockedExchange64((volatile long long *)(p), (long long)(v))
#  define gf__atomic_add(p, v)      ((uint64_t)InterlockedExchangeAdd64((volatile long long *)(p), (long long)(v)))
#  define gf__atomic_load_int(p)    (*(volatile long *)(p))
#  define gf__atomic_store_int(p,v) InterlockedExchange((volatile long *)(p), (long)(v))
#else
#  define gf__atomic_load(p)        __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define gf__atomic_store(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#  define gf__atomic_add(p, v)      __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#  define gf__atomic_load_int(p)    __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define gf__atomic_store_int(p,v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#endif

#if defined(_WIN32)
static void gf__mutex_init(gf__mutex *m)    { InitializeCriticalSection(m); }
static void gf__mutex_destroy(gf__mutex *m) { DeleteCriticalSection(m); }
static void gf__lock(gf__mutex *m)          { EnterCriticalSection(m); }
static void gf__unlock(gf__mutex *m)        { LeaveCriticalSection(m); }
static void gf__cond_init(gf__cond *c)      { InitializeConditionVariable(c); }
static void gf__cond_destroy(gf__cond *c)   { (void)c; }
static void gf__cond_wait(gf__cond *c, gf__mutex *m) { SleepConditionVariableCS(c, m, INFINITE); }
static void gf__cond_timedwait_us(gf__cond *c, gf__mutex *m, uint64_t us) {
    SleepConditionVariableCS(c, m, (DWORD)((us + 999) / 1000));
}
static void gf__cond_broadcast(gf__cond *c) { WakeAllConditionVariable(c); }
typedef struct { void (*fn)(void *); void *arg; } gf__thread_start;
static DWORD WINAPI gf__thread_main(LPVOID p) {
    gf__thread_start st = *(gf__thread_start *)p;
    GPUFLOW_FREE(p);
    st.fn(st.arg);
    return 0;
}
static int gf__thread_create(gf__thread *t, void (*fn)(void *), void *arg) {
    gf__thread_start *st = (gf__thread_start *)GPUFLOW_MALLOC(sizeof *st);
    if (!st) return 0;
    st->fn = fn; st->arg = arg;
    *t = CreateThread(NULL, 0, gf__thread_main, st, 0, NULL);
    if (!*t) { GPUFLOW_FREE(st); return 0; }
    return 1;
}
static void gf__thread_join(gf__thread t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
static uint64_t gf__now_ns(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f); QueryPerformanceCounter(&c);
    return (uint64_t)((double)c.QuadPart * 1e9 / (double)f.QuadPart);
}
static void gf__sleep_us(unsigned us) { Sleep((us + 999) / 1000); }
static void *gf__dlopen(const char *name)            { return (void *)LoadLibraryA(name); }
static void *gf__dlsym(void *lib, const char *name)  { return (void *)GetProcAddress((HMODULE)lib, name); }
static const char *gf__dlerror(void)                 { return "LoadLibrary failed"; }
#else
static void gf__mutex_init(gf__mutex *m)    { pthread_mutex_init(m, NULL); }
static void gf__mutex_destroy(gf__mutex *m) { pthread_mutex_destroy(m); }
static void gf__lock(gf__mutex *m)          { pthread_mutex_lock(m); }
static void gf__unlock(gf__mutex *m)        { pthread_mutex_unlock(m); }
static void gf__cond_init(gf__cond *c) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
#  if !defined(__APPLE__)
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
#  endif
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}
static void gf__cond_destroy(gf__cond *c)   { pthread_cond_destroy(c); }
static void gf__cond_wait(gf__cond *c, gf__mutex *m) { pthread_cond_wait(c, m); }
static void gf__cond_timedwait_us(gf__cond *c, gf__mutex *m, uint64_t us) {
    struct timespec ts;
#  if defined(__APPLE__)
    clock_gettime(CLOCK_REALTIME, &ts);
#  else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#  endif
    ts.tv_sec += (time_t)(us / 1000000u);
    ts.tv_nsec += (long)(us % 1000000u) * 1000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec += 1; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(c, m, &ts);
}
static void gf__cond_broadcast(gf__cond *c) { pthread_cond_broadcast(c); }
typedef struct { void (*fn)(void *); void *arg; } gf__thread_start;
static void *gf__thread_main(void *p) {
    gf__thread_start st = *(gf__thread_start *)p;
    GPUFLOW_FREE(p);
    st.fn(st.arg);
    return NULL;
}
static int gf__thread_create(gf__thread *t, void (*fn)(void *), void *arg) {
    gf__thread_start *st = (gf__thread_start *)GPUFLOW_MALLOC(sizeof *st);
    if (!st) return 0;
    st->fn = fn; st->arg = arg;
    if (pthread_create(t, NULL, gf__thread_main, st) != 0) { GPUFLOW_FREE(st); return 0; }
    return 1;
}
static void gf__thread_join(gf__thread t) { pthread_join(t, NULL); }
static uint64_t gf__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static void gf__sleep_us(unsigned us) {
    struct timespec ts;
    ts.tv_sec = (time_t)(us / 1000000u);
    ts.tv_nsec = (long)(us % 1000000u) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}
static void *gf__dlopen(const char *name)           { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
static void *gf__dlsym(void *lib, const char *name) { return dlsym(lib, name); }
static const char *gf__dlerror(void)                { const char *e = dlerror(); return e ? e : "unknown dlopen error"; }
#endif

/* Lazy driver loading: each backend loads its library once, under one process-wide lock,
   and keeps the outcome (and why it failed) for every later caller. */
typedef struct gf__driver {
    int tried;
    gf_result result;
    char why[512];
    void *lib;
} gf__driver;
#if defined(_WIN32)
static SRWLOCK gf__driver_lock = SRWLOCK_INIT;
static void gf__driver_lock_acquire(void) { AcquireSRWLockExclusive(&gf__driver_lock); }
static void gf__driver_lock_release(void) { ReleaseSRWLockExclusive(&gf__driver_lock); }
#else
static pthread_mutex_t gf__driver_lock = PTHREAD_MUTEX_INITIALIZER;
static void gf__driver_lock_acquire(void) { pthread_mutex_lock(&gf__driver_lock); }
static void gf__driver_lock_release(void) { pthread_mutex_unlock(&gf__driver_lock); }
#endif

/* ---- errors: a per-thread detail for the last failure ----------------------------------- */
static GF__THREAD_LOCAL char gf__error_text[1024];

/* Sets this thread's detail message and returns code, so failures read `return gf__fail(...)`. */
static gf_result gf__fail(gf_result code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static gf_result gf__fail(gf_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gf__error_text, sizeof gf__error_text, fmt, ap);
    va_end(ap);
    return code;
}

/* Loads a driver once: load_fn fills d (lib, result, why) the first time; every call returns
   the stored outcome with its reason as this thread's error detail. */
static gf_result gf__driver_load(gf__driver *d, void (*load_fn)(gf__driver *d)) {
    gf_result r;
    gf__driver_lock_acquire();
    if (!d->tried) { load_fn(d); d->tried = 1; }
    r = d->result;
    gf__driver_lock_release();
    if (r != GF_OK) return gf__fail(r, "%s", d->why);
    return GF_OK;
}

static void *gf__alloc(size_t bytes) {   /* zeroed */
    void *p = GPUFLOW_MALLOC(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}
static void gf__copy_str(char *dst, size_t cap, const char *src) {
    size_t n = src ? strlen(src) : 0;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}
/* Grows *items (of elem bytes) to hold at least need; returns 0 on out-of-memory. */
static int gf__grow(void **items, int *cap, int need, size_t elem) {
    int n;
    void *p;
    if (need <= *cap) return 1;
    n = *cap ? *cap * 2 : 8;
    while (n < need) n *= 2;
    p = GPUFLOW_REALLOC(*items, (size_t)n * elem);
    if (!p) return 0;
    *items = p; *cap = n;
    return 1;
}

/* ---- objects ---------------------------------------------------------------------------- */
/* Every object starts with a type tag, so a handle of the wrong type (or a destroyed one,
   whose tag is cleared before it is freed) is refused instead of misused. */
typedef enum gf__type {
    GF__T_DEAD = 0, GF__T_DEVICE = 0x67660001, GF__T_BUFFER, GF__T_STREAM, GF__T_EVENT,
    GF__T_EVENT_POOL, GF__T_STREAM_POOL, GF__T_STREAM_SET, GF__T_FLOW, GF__T_GRAPH,
    GF__T_MODULE, GF__T_KERNEL
} gf__type;

typedef struct gf__backend gf__backend;
typedef struct gf__capture gf__capture;
typedef struct gf__profiler gf__profiler;
typedef struct gf__waiter gf__waiter;
typedef struct gf__alloc_cache gf__alloc_cache;

struct gf_device {
    uint32_t type;
    const gf__backend *be;
    int index;
    gf_device_info info;
    void *native;                   /* the backend's device state */
    gf__mutex lock;                 /* streams[], graphs[], captures */
    gf_stream **streams; int stream_count, stream_cap;
    gf_graph **graphs; int graph_count, graph_cap;   /* live graphs, to refuse destroyed ones */
    gf_stream *sync_stream;         /* carries the synchronous copies */
    gf_event_pool *events;          /* the device's own events: barriers, flows, profiler */
    uint64_t next_id;
    int active_captures;
    gf__profiler *profiler;
    gf__waiter *waiter;
    gf__alloc_cache *cache;         /* stream-ordered allocator where the driver has none */
};

struct gf_buffer {
    uint32_t type;
    gf_device *dev;
    size_t size;
    int managed;
    void *ptr;                      /* native pointer-like handle: cl_mem, host memory, ... */
    uint64_t addr;                  /* native address-like handle: CUdeviceptr */
    void *host;                     /* host memory a stub kernel sees (stub only) */
    int capture_uses;               /* captures in progress that use it (sync copies refused) */
    int async_state;                /* 0 plain, 1 live stream-ordered, 2 freed stream-ordered */
    gf_graph *graph_owner;          /* allocated inside a capture: the graph owns it */
};

typedef enum gf__copy_kind { GF__COPY_H2D, GF__COPY_D2H, GF__COPY_D2D } gf__copy_kind;
typedef struct gf__copy {
    gf__copy_kind kind;
    gf_buffer *dst; size_t dst_offset;
    gf_buffer *src; size_t src_offset;
    void *host;                     /* H2D source or D2H destination */
    size_t bytes;
} gf__copy;

struct gf_stream {
    uint32_t type;
    gf_device *dev;
    uint64_t id;
    char label[64];
    gf_priority priority;
    void *native;                   /* CUstream, cl_command_queue, stub queue, ... */
    gf__mutex lock;                 /* enqueue order, capture state, profiler records */
    gf_result status;               /* sticky asynchronous error, passed to callbacks */
    uint64_t ops, copies, bytes_copied, launches, callbacks;   /* atomics */
    uint64_t submitted, retired;    /* pending = submitted - retired, refreshed by query */
    uint64_t busy_ns;
    gf__capture *capture;           /* capture this stream takes part in, or NULL */
    int capture_ops, capture_joined;/* ops since joining; ops covered by a join back */
    gf_stream_pool *pool; int pool_index; int leases;
    int internal;                   /* owned by the core (pool, set, sync stream) */
};

struct gf_event {
    uint32_t type;
    gf_device *dev;
    unsigned flags;
    void *native;
    int recorded;
    gf_stream *stream;              /* where it was last recorded */
    gf_event_pool *pool; int in_pool;
    gf__capture *capture;           /* recorded inside this capture */
    int capture_pos;                /* recording stream's capture_ops at the record */
    uint64_t trace_id;              /* profiler: the op it marks, for flow arrows */
};

struct gf_kernel {
    uint32_t type;
    gf_module *mod;
    char name[128];
    void *native;                   /* CUfunction, cl_kernel, ... */
    void (*stub_fn)(const gf_kernel_ctx *, void *const *);
    gf__mutex lock;                 /* OpenCL: clSetKernelArg + enqueue must not interleave */
    gf_kernel *next;
};

struct gf_module {
    uint32_t type;
    gf_device *dev;
    void *native;
    gf_stub_kernel *stub_kernels; int stub_kernel_count;
    gf__mutex lock;
    gf_kernel *kernels;             /* handed out by gf_kernel_get, freed with the module */
};

/* A recorded command: what a capture without native graphs keeps, and replay re-issues. */
typedef enum gf__cmd_kind {
    GF__CMD_COPY, GF__CMD_FILL, GF__CMD_LAUNCH, GF__CMD_CALLBACK, GF__CMD_PREFETCH, GF__CMD_GRAPH
} gf__cmd_kind;
typedef struct gf__cmd {
    gf__cmd_kind kind;
    gf__copy copy;                                  /* COPY */
    gf_buffer *buf; size_t offset, bytes; unsigned char value; int to_device;  /* FILL, PREFETCH */
    gf_kernel *kernel; gf_launch_dims dims; int arg_first, arg_count;          /* LAUNCH */
    gf_callback fn; void *user;                     /* CALLBACK */
    gf_graph *child;                                /* GRAPH: a graph launched inside a capture */
} gf__cmd;

struct gf_graph {
    uint32_t type;
    gf_device *dev;
    gf_capture_mode mode;
    int native;                     /* a driver graph (else a recording) */
    void *native_exec;              /* CUgraphExec / hipGraphExec_t / command buffer */
    void *native_graph;             /* CUgraph / hipGraph_t, kept for update */
    int nodes;
    gf__cmd *cmds; int cmd_count, cmd_cap;          /* recording */
    gf_arg *args; int arg_count, arg_cap;           /* launch arguments of the recording */
    unsigned char *arg_bytes; int arg_bytes_used, arg_bytes_cap;
    gf_buffer **owned; int owned_count, owned_cap;  /* allocated inside the capture */
};

/* ---- the backend vtable ----------------------------------------------------------------- */
/* The primitive operations the core is written over. Every function returns GF_OK or a
   failure whose detail it has set with gf__fail (naming the native call and error). The
   graph entries are NULL where the driver has no native capture: the core then records
   the stream's commands and replays them. buffer_alloc_async / buffer_free_async are NULL
   where the driver has no stream-ordered allocator: the core then keeps a cache. */
struct gf__backend {
    gf_backend kind;
    const char *name;
    gf_result (*load)(void);                                    /* once; thread-safe */
    gf_result (*device_count)(int *count);
    gf_result (*device_open)(gf_device *dev, int index);        /* sets native, info */
    void      (*device_close)(gf_device *dev);
    gf_result (*memory_info)(gf_device *dev, size_t *free_bytes, size_t *total_bytes);

    gf_result (*buffer_alloc)(gf_buffer *buf);                  /* size, managed set */
    void      (*buffer_free)(gf_buffer *buf);
    gf_result (*buffer_alloc_async)(gf_stream *s, gf_buffer *buf);
    gf_result (*buffer_free_async)(gf_stream *s, gf_buffer *buf);
    gf_result (*host_alloc)(gf_device *dev, size_t bytes, void **out);
    void      (*host_free)(gf_device *dev, void *ptr);

    gf_result (*stream_create)(gf_stream *s);                   /* label, priority set */
    void      (*stream_destroy)(gf_stream *s);                  /* after the core drained it */
    gf_result (*stream_synchronize)(gf_stream *s);
    gf_result (*stream_query)(gf_stream *s);                    /* GF_OK or GF_NOT_READY */
    gf_result (*copy)(gf_stream *s, const gf__copy *c);
    gf_result (*fill)(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes);
    gf_result (*prefetch)(gf_stream *s, gf_buffer *buf, int to_device);   /* NULL: unsupported */
    /* fn(user) runs after all prior work on s; later work on s waits for it to return. */
    gf_result (*host_callback)(gf_stream *s, void (*fn)(void *user), void *user);

    gf_result (*event_create)(gf_event *ev);                    /* flags set */
    void      (*event_destroy)(gf_event *ev);
    gf_result (*event_record)(gf_event *ev, gf_stream *s);
    gf_result (*stream_wait_event)(gf_stream *s, gf_event *ev); /* sees the latest record */
    gf_result (*event_synchronize)(gf_event *ev);
    gf_result (*event_query)(gf_event *ev);                     /* GF_OK or GF_NOT_READY */
    gf_result (*event_elapsed_ms)(gf_event *start, gf_event *end, float *ms);

    gf_result (*module_load)(gf_module *mod, const gf_module_desc *desc);
    void      (*module_unload)(gf_module *mod);
    gf_result (*kernel_get)(gf_kernel *k);                      /* name set; sets native */
    gf_result (*launch)(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                        const gf_arg *args, int count);

    gf_result (*capture_begin)(gf_stream *s, gf_capture_mode mode);
    gf_result (*capture_end)(gf_stream *s, gf_graph *g);        /* sets g->native, g->nodes; on
                                                                   failure the capture is over */
    gf_result (*graph_launch)(gf_graph *g, gf_stream *s);
    gf_result (*graph_update)(gf_graph *target, gf_graph *from);/* shape mismatch: INVALID_ARGUMENT */
    void      (*graph_destroy)(gf_graph *g);
};

static const gf__backend *gf__stub_backend(void);
#ifdef GPUFLOW_CUDA
static const gf__backend *gf__cuda_backend(void);     /* gpuflow_cuda.h */
#endif
#ifdef GPUFLOW_HIP
static const gf__backend *gf__hip_backend(void);      /* gpuflow_hip.h */
#endif
#ifdef GPUFLOW_OPENCL
static const gf__backend *gf__opencl_backend(void);   /* gpuflow_opencl.h */
#endif

/*@@CORE@@*/

#endif /* GPUFLOW_IMPLEMENTATION */

