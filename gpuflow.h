/* gpuflow.h -- GPU streams and everything around them, in one header.

    Do this:
        #define GPUFLOW_IMPLEMENTATION
    before you include this file in *one* C or C++ file to create the implementation.
    Every other file includes it plain, for the declarations.

        #define GPUFLOW_IMPLEMENTATION
        #define GPUFLOW_CUDA              // optional: any of GPUFLOW_CUDA / _HIP / _OPENCL
        #include "gpuflow.h"              // pulls in gpuflow_cuda.h from its own directory

        cc -std=c99 app.c -o app -pthread -ldl        (vendor headers on the include path only
                                                       for the backends compiled in)

    No vendor library is linked: a backend loads its driver at run time, so a program built
    with every backend runs on a machine with none of them and falls back to the CPU stub.

    SECTIONS (each a `---- name` banner below, or a boxed header; grep its >>tag to jump there)
    ========
    Declarations:  results | opaque objects | the backend registry (>>registry) | logging |
                   callbacks | descriptions and reports | kernels from one source |
                   results, backends | devices | more than one device | memory |
                   interop: native handles out and in |
                   interop: external memory and semaphores |
                   streams | events and event pools | stream pools | stream sets | barriers |
                   flows | graphs | kernels | profiling | races and hangs | faults on demand |
                   record and replay
    Implementation, the core and what it stands on:
                   >>defaults >>platform >>errors (and the logger) >>utils (host memory,
                   growable arrays, spin locks) >>files (paths, UTF-8 on Windows too) >>objects
                   >>vtable (what a backend fills; "writing a backend" is there) >>kit (all of
                   the core a backend may use) >>forward (every forward declaration)
    The core path: >>names >>validation >>backends >>devices >>syncdebug (hidden waits)
                   >>deadlocks >>captures >>staged >>commands >>streams >>memory >>accounting
                   >>retired (deferred releases) >>events >>eventpools
                   >>streampools >>streamsets >>barriers >>peers (more than one device)
                   >>waiters >>asyncalloc >>flows
                   >>graphs >>graphpools >>dialect (kernels from one source, the disk cache)
                   >>kernels >>interop >>external
    Diagnostics:   >>diagnostics: >>faults (faults on demand) >>record (record and replay: the
                   recorded entry points are thin wrappers there) >>races >>hangs >>profiler
    Backends:      >>stub (the CPU stub, in this file), then >>registry's other half, which
                   pulls in gpuflow_cuda.h, gpuflow_hip.h, gpuflow_opencl.h (each says how
                   gpuflow maps onto its driver, and what it needs)

    OVERVIEW
    ========
    One API over four backends: CUDA (driver API), HIP, OpenCL and a CPU stub. The stub is a
    faithful emulation, not a no-op: every stream is a FIFO run by its own worker thread, so
    "async" calls return at once and run later, in order, exactly as on a GPU. A program
    that forgets a synchronize misbehaves on the stub too.

        public API (gf_*) -> validation -> core objects -> backend vtable -> driver

    The core (stream pools, stream sets, event pools, barriers, flows, recorded graphs, graph
    pools, the profiler, the stream-ordered allocator, async waiters, the race detector, the
    kernel dialect and its cache) is written once over a vtable of primitive operations; a
    backend header only fills that vtable.

    CONFIGURATION (define before including the implementation)
    =============
        GPUFLOW_IMPLEMENTATION   emit the implementation in this translation unit
        GPUFLOW_CUDA / _HIP / _OPENCL   compile in a vendor backend
        GPUFLOW_API              decoration of every public function (default: extern)
        GPUFLOW_STATIC           make every public function static (one-TU use)
        GPUFLOW_MALLOC(n) / GPUFLOW_REALLOC(p, n) / GPUFLOW_FREE(p)   host memory, all three or
                                 none (default: libc); gf_set_allocator does the same at run time
                                 (for all but the recorder's buffer: see gf_set_allocator)
        GPUFLOW_ASSERT(c)        the library's own invariants (default: assert, which brings in
                                 <assert.h>, whose assert replaces a program's own macro of that
                                 name: define this to keep it out)
        GPUFLOW_DEBUG            destroyed objects stay refused shells until their device closes
                                 (defined at all, whatever its value, turns it on)
        GPUFLOW_STUB_INLINE      the stub runs work inline in the calling thread (debugging)
        GPUFLOW_STUB_MEMORY      the stub device's nominal capacity in bytes (default 8 GiB)
        GPUFLOW_STUB_FIBER_STACK the stack of each thread but the first of a stub block that
                                 syncs (default 128 KiB; a page below it faults on POSIX)
        GPUFLOW_NVTX             CUDA: stream names and gf_range_push as NVTX ranges
        GPUFLOW_VALGRIND         1: tell Valgrind which memory is a stub fiber's stack; 0 (or
                                 defined empty): do not (default: 1 where <valgrind/valgrind.h>
                                 is found, else 0; see >>stub)

    Environment: GPUFLOW_BACKEND=cuda|hip|opencl|stub forces the backend GF_BACKEND_AUTO picks;
    GPUFLOW_RACE_CHECK=1 (on, yes, true) turns the race detector on for every device (=abort:
    and the first race found ends the process, for CI that reads exit statuses);
    GPUFLOW_HANG_MS=N logs the device's state when a wait lasts longer than N ms;
    GPUFLOW_CACHE_DIR=dir keeps compiled kernels (GPUFLOW_CACHE_LIMIT=bytes, default 256 MiB:
    past it the least recently used entries go); GPUFLOW_OPENCL_PLATFORM=text narrows the
    OpenCL platforms; GPUFLOW_SYNC_DEBUG=warn|error reports (or refuses) each hidden wait;
    GPUFLOW_LOG=error|warning|info|off: what goes to stderr when no logger is installed;
    GPUFLOW_SYNC=1: every operation waits for itself (the first failure named at its call);
    GPUFLOW_STATS=1: each device's statistics at close; GPUFLOW_TRACE=file.json: the run's
    Perfetto trace written at close (every device's in the one file, each a process); GPUFLOW_STUB_DEVICES=N: the stub is N devices (1 to 16);
    GPUFLOW_STUB_THREADS=N: threads that run one stub launch's blocks (default: the cores);
    GPUFLOW_FAULTS=rules: chosen operations fail on purpose (see "faults on demand");
    GPUFLOW_RECORD=file: every gpuflow call goes to file, for gf_replay and tools/gfreplay
    (GPUFLOW_RECORD_LIMIT=bytes bounds it; see "record and replay"). Any other GPUFLOW_* variable is named in a warning. Values are read strictly: one that is not understood is named in a
    warning and the switch stays off (GPUFLOW_BACKEND naming no backend: gf_device_open with
    GF_BACKEND_AUTO fails with GF_ERROR_INVALID_ARGUMENT). These warnings reach stderr unless a
    logger is installed or GPUFLOW_LOG is error or off. Paths, given or from these variables,
    are UTF-8 (Windows: wide file functions, and no MAX_PATH limit; see >>files).

    CONVENTIONS
    ===========
    - Objects are opaque pointers created by gf_<object>_create(..., &out) and released by
      gf_<object>_destroy (a destroy or close of NULL does nothing, as free(NULL)); a call that
      makes an object leaves NULL in *out when it fails, whatever the reason. A NULL desc pointer, or a zeroed desc field, means "the default"
      (each field's default is written beside it).
    - Every fallible call returns gf_result: GF_OK == 0, failures negative, GF_NOT_READY and
      GF_TIMEOUT positive. gf_last_error() gives this thread's text for the last failure (a
      success leaves it alone); every failure also goes to the logger (gf_set_logger; it may
      call gpuflow, and the failure keeps its text), or with none installed to stderr at the
      level GPUFLOW_LOG names (default: nothing, or warnings while a debugging switch is on;
      a GPUFLOW_* variable gpuflow cannot follow is always named).
    - Bad input (NULL or wrong-type handles, out-of-range sizes, objects of another device,
      misuse during capture, ...) returns a specific code and changes nothing. A size of 0 is
      bad input too (GF_ERROR_INVALID_ARGUMENT: a buffer, a copy, a fill of 0 bytes), where
      CUDA takes a 0-byte copy or memset as a no-op: a program whose sizes may be 0 tests
      for it before the call. Every group of
      declarations below names the codes its calls return beyond GF_ERROR_INVALID_HANDLE
      (a NULL or wrong-type object, a destroyed graph) and GF_ERROR_INVALID_ARGUMENT. Other
      destroyed objects are freed, so their handles are refused only while the memory is not
      reused (a use after free, as with free()); GPUFLOW_DEBUG keeps them as shells, refused
      reliably until their device closes.
    - Every object may be used from several threads. The order of work on one stream is the
      order in which its enqueue calls returned. An object's destroy comes after every call
      that uses the object has returned, as with free(): a destroy racing another thread's
      call on the same object (a synchronize of the stream being destroyed) is the program's
      error, which gpuflow does not detect.
    - No destroy waits for the device. Destroying a buffer, a view, a module, a graph or a graph
      pool returns at once: the handle is gone, and what the object still lends to work queued
      before the destroy (memory, code, callback contexts) goes once that work has passed
      (memory stats count it as GF_MEMORY_PENDING meanwhile). The release itself does not wait
      for other streams: gf_buffer_create's memory goes back stream-ordered on CUDA and HIP with
      memory pools (managed memory, and devices without pools, keep the driver's free, which
      waits), and the driver calls that wait for the whole device (CUDA's cuModuleUnload,
      cuMemFreeHost) are made when gpuflow finds the device's streams idle, at
      gf_device_synchronize, trim and close, or past a bound (README, "Rules worth knowing").
      Destroying a stream (or a stream pool) waits for that stream's own queued work, and only
      that. Every call that can hold the host says so beside it ("blocks until ...");
      GPUFLOW_SYNC_DEBUG=warn names each such wait a program did not ask for by name (a
      synchronize, a wait, a close), =error refuses it.

    CALLBACKS
    =========
    Stream callbacks (gf_stream_add_callback) run on a thread owned by the backend, after the
    stream's earlier work; later work waits for them. On CUDA and HIP a stream callback must not
    call into the driver: it may touch host memory, signal your own threads, or set flags, but
    must not call gpuflow functions that enqueue, synchronize, allocate or free (the stub does
    them, and says once, as a warning, that CUDA and HIP would fail them). Async waiters
    (gf_event_on_complete) and flow tasks' completion callbacks run on the device's waiter
    thread and may call gpuflow freely, except gf_device_close (refused); gf_event_cancel_wait
    of the wait that is running answers GF_ERROR_NOT_FOUND at once (it is past cancelling). An
    allocation from a stream callback, short of memory, takes back only memory whose queued
    work has passed (the rest may be queued behind the callback). The logger may be called
    from any thread, from inside any gpuflow call; it may call gpuflow (a message is told once
    the call holds none of gpuflow's locks, still before it returns). The messages of the
    logger's own gpuflow calls are not logged, which would call the logger inside itself
    (for ever, were each to fail); their results and gf_last_error() still tell them.
    A wait that could never end is refused (GF_ERROR_INVALID_STATE), on every backend: from a
    stream callback, synchronizing or destroying its own stream, synchronizing or trimming the
    device, destroying a buffer or closing the device, or synchronizing an event recorded after
    the callback on its stream; the bounded waits (_timeout) too, which could only time out;
    and a wait for another stream or its event that waits for work queued after the callback
    (through event waits, as far as each stream's latest operations show them).
    After fork(), a device opened in the parent refuses every
    enqueue and wait in the child; a stub device opened there works, and a vendor driver the
    parent had loaded is refused there (GF_ERROR_NOT_SUPPORTED: its threads stayed behind):
    exec a program for the GPU work, or fork before the first device of that driver.
    No callback may throw a C++ exception or longjmp out (they would cross gpuflow's C frames
    and leave its locks and bookkeeping as they were: a stream or waiter callback that throws
    ends the process; a logger that throws leaves its thread's later messages unlogged); mark
    C++ callbacks noexcept and catch inside. An allocator that fails returns NULL.
    A shared library or plugin with gpuflow inside closes its devices before it is unloaded
    (dlclose, FreeLibrary): a device's threads run the library's code until its close.

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
/* One translation unit rarely calls every function: marked unused, the rest are dropped
   without a "defined but not used" warning (which -Werror builds would fail on). */
#    if defined(__GNUC__) || defined(__clang__)
#      define GPUFLOW_API static __attribute__((unused))
#    else
#      define GPUFLOW_API static
#    endif
#  else
#    define GPUFLOW_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One version everywhere (gpuflow.pc, the CMake package, meson.build: checked by make test);
   GPUFLOW_VERSION compares: #if GPUFLOW_VERSION >= 300 (0.3.0). CHANGELOG.md says what each
   release changed and the compatibility rule. */
#define GPUFLOW_VERSION_MAJOR 0
#define GPUFLOW_VERSION_MINOR 3
#define GPUFLOW_VERSION_PATCH 0
#define GPUFLOW_VERSION (GPUFLOW_VERSION_MAJOR * 10000 + GPUFLOW_VERSION_MINOR * 100 + GPUFLOW_VERSION_PATCH)

/* Marks a call that a later minor release removes: each use warns, naming what replaces it
   (define GPUFLOW_NO_DEPRECATION_WARNINGS to silence them). */
#if defined(GPUFLOW_NO_DEPRECATION_WARNINGS)
#  define GPUFLOW_DEPRECATED(why)
#elif defined(__GNUC__) || defined(__clang__)
#  define GPUFLOW_DEPRECATED(why) __attribute__((deprecated(why)))
#elif defined(_MSC_VER)
#  define GPUFLOW_DEPRECATED(why) __declspec(deprecated(why))
#else
#  define GPUFLOW_DEPRECATED(why)
#endif

/* ---- results ------------------------------------------------------------------------ */
typedef enum gf_result {
    GF_OK                         = 0,
    GF_NOT_READY                  = 1,   /* work still pending (query) */
    GF_TIMEOUT                    = 2,   /* a bounded wait ran out */
    GF_ERROR_INVALID_ARGUMENT     = -1,
    GF_ERROR_INVALID_HANDLE       = -2,  /* NULL, of the wrong type, or a destroyed graph */
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
    GF_ERROR_DRIVER               = -14, /* any other driver failure (named in gf_last_error) */
    GF_ERROR_DEVICE_LOST          = -15  /* the device is gone: a kernel's fault ended its context (CUDA,
                                            HIP: an illegal address, a launch failure), or faults on demand */
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
typedef struct gf_graph_pool  gf_graph_pool;
typedef struct gf_semaphore   gf_semaphore;
typedef uint32_t gf_task;

/* >>registry The backends, in the order GF_BACKEND_AUTO tries them; the stub, always compiled
   in, last. X(ID, name): GF_BACKEND_<ID> names it, GPUFLOW_<ID> compiles it in (the
   implementation's "backend headers" block pulls in gpuflow_<name>.h, whose table getter is
   gf__<name>_backend), GPUFLOW_BACKEND=<name> forces it, gf_backend_name gives <name>.
   Adding a backend: a row here, its three lines in "backend headers", its header, the build
   files (Makefile, CMake, meson); nothing else of the core names a backend (tests/core_names.sh). */
#define GF__BACKENDS(X) \
    X(CUDA,   cuda)     \
    X(HIP,    hip)      \
    X(OPENCL, opencl)   \
    X(STUB,   stub)

/* GF_BACKEND_CUDA, GF_BACKEND_HIP, GF_BACKEND_OPENCL, GF_BACKEND_STUB: from the registry. */
#define GF__BACKEND_ENUM_ROW(ID, name) GF_BACKEND_##ID,
typedef enum gf_backend {
    GF_BACKEND_AUTO = 0,          /* the first backend that opens a device, in registry order */
    GF__BACKENDS(GF__BACKEND_ENUM_ROW)
    GF_BACKEND_COUNT              /* one past the last backend */
} gf_backend;
#undef GF__BACKEND_ENUM_ROW

typedef enum gf_priority { GF_PRIORITY_NORMAL = 0, GF_PRIORITY_HIGH, GF_PRIORITY_LOW } gf_priority;

typedef enum gf_workload {
    GF_WORKLOAD_ANY = 0, GF_WORKLOAD_COMPUTE, GF_WORKLOAD_MEMORY,
    GF_WORKLOAD_MIXED, GF_WORKLOAD_COORDINATION
} gf_workload;
#define GF_WORKLOAD_COUNT 5

typedef enum gf_pool_strategy {
    GF_POOL_ROUND_ROBIN = 0,  /* streams in turn */
    GF_POOL_LEAST_PENDING,    /* the stream with the fewest pending operations */
    GF_POOL_PRIORITY,         /* streams at each priority (HIGH, NORMAL, LOW in turn; a pool of one:
                                 NORMAL, which every hint gets; of two: LOW hints get NORMAL's);
                                 the hint's priority picks */
    GF_POOL_WORKLOAD          /* compute, memory and coordination work on separate streams */
} gf_pool_strategy;

typedef enum gf_capture_mode {
    GF_CAPTURE_GLOBAL = 0, GF_CAPTURE_THREAD_LOCAL, GF_CAPTURE_RELAXED
} gf_capture_mode;

/* Kinds of operation, as counted by the profiler. */
typedef enum gf_op_kind {
    GF_OP_COPY = 0, GF_OP_FILL, GF_OP_LAUNCH, GF_OP_CALLBACK, GF_OP_GRAPH, GF_OP_WAIT,
    GF_OP_RANGE,                  /* gf_range_push .. gf_range_pop, and flow tasks: spans, not work */
    GF_OP_SIGNAL,                 /* gf_semaphore_signal_async (its wait counts as GF_OP_WAIT) */
    GF_OP_KIND_COUNT
} gf_op_kind;

/* ---- logging ------------------------------------------------------------------------- */
typedef enum gf_log_level { GF_LOG_ERROR = 0, GF_LOG_WARNING, GF_LOG_INFO } gf_log_level;
/* message: the same text gf_last_error() gives for a failure; code: GF_OK for notices. */
typedef void (*gf_log_fn)(void *user, gf_log_level level, gf_result code, const char *message);

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
    size_t max_kernel_args_bytes; /* a launch's arguments together (CUDA's parameter space,
                                     CL_DEVICE_MAX_PARAMETER_SIZE); larger ones are refused */
    /* Launch limits (0: the backend did not say); gf_launch refuses dims past them with
       GF_ERROR_INVALID_ARGUMENT on every backend, the stub included. */
    unsigned max_threads_per_block; /* block[0] * block[1] * block[2] */
    unsigned max_block[3];        /* block[d] */
    unsigned max_grid[3];         /* grid[d] (blocks, not threads) */
    unsigned max_shared_per_block;/* bytes of shared (local) memory a block may use: shared_bytes */
    char   note[256];             /* for GF_BACKEND_AUTO: why other backends were passed over */
} gf_device_info;

typedef struct gf_stream_desc {
    const char *label;            /* default "stream N" */
    gf_priority priority;         /* default NORMAL; a device without priorities keeps it as a label */
} gf_stream_desc;

typedef struct gf_stream_stats {
    uint64_t ops, copies, bytes_copied, launches, callbacks;
    uint64_t pending;             /* operations not yet known to be complete */
    double   busy_ms;             /* device time of profiled operations (profiler on) */
    uint64_t staged_copies;       /* copies between devices that went through host memory */
    uint64_t bridged_waits;       /* waits for another device's events held in a host callback */
} gf_stream_stats;

#define GF_EVENT_TIMING 1u        /* gf_event_create flag: the event can be timed */

typedef struct gf_event_pool_desc {
    int capacity;                 /* plain events made up front (default 16, at most GF_EVENT_POOL_MAX); the pool grows on demand */
    int timing_capacity;          /* GF_EVENT_TIMING events made up front (default 16, at most GF_EVENT_POOL_MAX) */
} gf_event_pool_desc;
#define GF_EVENT_POOL_MAX 65536   /* events a pool makes up front, per kind (more: it grows as they are taken) */
typedef struct gf_event_pool_stats { int available, in_use, created; } gf_event_pool_stats;

typedef struct gf_stream_pool_desc {
    int count;                    /* streams in the pool (default 4) */
    gf_pool_strategy strategy;    /* default GF_POOL_ROUND_ROBIN */
    const char *label;            /* streams are labelled "<label>/<i>" (default "pool") */
    int measure_completion;       /* time acquire -> completion per workload (one event per release; default off) */
} gf_stream_pool_desc;
typedef struct gf_acquire_hint { gf_priority priority; gf_workload workload; } gf_acquire_hint;

#define GF_POOL_MAX_STREAMS 64
typedef struct gf_stream_pool_stats {
    int      count;
    uint64_t acquisitions[GF_POOL_MAX_STREAMS];     /* per stream, in pool order */
    uint64_t completions[GF_WORKLOAD_COUNT];        /* measured (measure_completion) */
    double   avg_completion_ms[GF_WORKLOAD_COUNT];  /* acquire -> work done, per workload */
} gf_stream_pool_stats;

typedef struct gf_flow_desc {
    const char *label;            /* default "flow" */
    gf_workload workload;         /* the tasks' default workload (default ANY) */
    int graph_after;              /* a flow that becomes a graph by itself: after this many runs with
                                     no change to it, gf_flow_run captures it once (gf_flow_capture
                                     on a stream of the pool) and from then on replays the graph on
                                     one of the pool's streams; any change (a task, an edge)
                                     recaptures after as many runs again (default 0: never) */
} gf_flow_desc;

/* A flow task with every option (gf_flow_add_desc). The stream pool's strategy picks the
   task's stream from its priority and workload; on_complete runs on the device's waiter thread
   once the task's GPU work is done, with its status (gf_flow_run only: a captured flow has no
   per-run events). A run that fails before a task's work is queued (its fn or an earlier task
   failed; gf_flow_run returns that failure) does not call that task's on_complete. */
typedef struct gf_task_desc {
    const char *name;             /* default "task N" */
    gf_task_fn fn;                /* required */
    void *user;
    gf_priority priority;         /* default NORMAL */
    gf_workload workload;         /* default: the flow's */
    gf_callback on_complete;      /* optional */
    void *on_complete_user;
    gf_device *device;            /* where the task runs (default NULL: the flow's device); run
                                     with gf_flow_run_multi, one pool per device */
} gf_task_desc;

typedef struct gf_flow_stats {
    uint64_t runs, tasks_run;
    uint64_t cross_edges;         /* edges between tasks on different streams: each one event wait */
    uint64_t events;              /* events recorded for those edges and for completion callbacks */
    uint64_t timed_runs;          /* runs measured on the device (profiler on) and complete */
    double   avg_run_ms;          /* first task's start to last task's end, over timed_runs */
    uint64_t graph_runs;          /* of runs, those replayed as the flow's graph (graph_after) */
    uint64_t captures;            /* times gf_flow_run captured the flow (graph_after) */
} gf_flow_stats;

typedef struct gf_graph_info {
    int nodes; int native; gf_capture_mode mode;
    int launches;                 /* kernel launches inside the graph (not how often it replayed) */
} gf_graph_info;

/* gf_graph_capture_desc: gf_graph_capture with every option. */
typedef struct gf_capture_desc {
    int warmup_runs;              /* runs of fn before the capture (default 0) */
    gf_capture_mode mode;         /* default GF_CAPTURE_GLOBAL */
    gf_graph_pool *pool;          /* NULL: the graph's allocations are its own */
} gf_capture_desc;

typedef struct gf_budget gf_budget;
typedef struct gf_buffer_desc {
    size_t size;                  /* required */
    int managed;                  /* unified (managed) memory, where the device has it (default off) */
    int exportable;               /* memory gf_buffer_export can hand out (default off; see interop) */
    gf_budget *budget;            /* charged to this budget, of the same device (default none) */
} gf_buffer_desc;

/* A 2D copy (gf_copy_2d_async): height rows of width bytes. Each side is a buffer (with an
   offset) or host memory; its pitch is the distance between rows' starts (>= width). Both
   sides may be one buffer (or views of one) where no source row shares a byte with a
   destination row. */
typedef struct gf_copy_2d {
    gf_buffer *dst; size_t dst_offset; void *dst_host; size_t dst_pitch;
    gf_buffer *src; size_t src_offset; const void *src_host; size_t src_pitch;
    size_t width, height;
} gf_copy_2d;

/* Memory accounting (gf_device_memory_stats): what gpuflow allocated on a device, by kind. */
typedef enum gf_memory_kind {
    GF_MEMORY_DEVICE = 0,         /* gf_buffer_create, and memory graphs allocated in captures */
    GF_MEMORY_PINNED,             /* gf_host_alloc */
    GF_MEMORY_MANAGED,            /* managed buffers */
    GF_MEMORY_ASYNC,              /* live stream-ordered buffers (gf_buffer_create_async) */
    GF_MEMORY_CACHED,             /* freed stream-ordered memory kept for reuse */
    GF_MEMORY_PENDING,            /* destroyed buffers' memory, freed once the work queued
                                     before the destroy has passed (gf_buffer_destroy) */
    GF_MEMORY_IMPORTED,           /* another API's or process's memory (gf_buffer_import) */
    GF_MEMORY_KIND_COUNT
} gf_memory_kind;
typedef struct gf_memory_counter { uint64_t bytes, peak_bytes, count, peak_count; } gf_memory_counter;
/* A memory budget's figures (gf_budget_get_stats; the device's first GF_MEMORY_BUDGETS in
   gf_memory_stats). */
typedef struct gf_budget_stats {
    char label[64];
    uint64_t limit, bytes, peak_bytes, count;   /* count: buffers charged to it now */
    uint64_t refused;             /* allocations it refused */
} gf_budget_stats;
#define GF_MEMORY_BUDGETS 8
typedef struct gf_memory_stats {
    gf_memory_counter kind[GF_MEMORY_KIND_COUNT];
    uint64_t device_bytes;        /* DEVICE + MANAGED + ASYNC + CACHED + PENDING: what the limit is held against */
    uint64_t limit;               /* gf_device_set_memory_limit; 0: none */
    int budget_count;             /* the device's live budgets (the first GF_MEMORY_BUDGETS below) */
    gf_budget_stats budgets[GF_MEMORY_BUDGETS];
} gf_memory_stats;

/* A process-wide host allocator (gf_set_allocator), for programs that account host memory by
   subsystem. All three functions are required; user is passed to each. */
typedef struct gf_allocator {
    void *(*alloc)(void *user, size_t bytes);
    void *(*realloc)(void *user, void *ptr, size_t bytes);
    void  (*free)(void *user, void *ptr);
    void *user;
} gf_allocator;

/* An engine's own device, to open gpuflow on (gf_device_open_native). */
typedef struct gf_native_device {
    void *context;                /* CUDA: a CUcontext; OpenCL: a cl_context */
    void *device;                 /* OpenCL: a cl_device_id of that context */
    int   ordinal;                /* HIP: the device index */
} gf_native_device;

/* Kernels. One module description carries each backend's form of the same kernels. */
/* grid counts blocks (CUDA's gridDim), block counts threads per block; both >= 1 in every
   dimension and within gf_device_info's max_grid / max_block / max_threads_per_block. */
typedef struct gf_launch_dims { unsigned grid[3]; unsigned block[3]; size_t shared_bytes; } gf_launch_dims;
typedef struct gf_arg { const void *value; size_t size; gf_buffer *buffer; } gf_arg;
/* GF_ARG takes v's address, so v must be an lvalue (a variable, not 4 or n + 1); gf_launch
   copies the value before it returns. */
#define GF_ARG(v)        { &(v), sizeof(v), 0 }
#define GF_ARG_BUFFER(b) { 0, 0, (b) }
/* A buffer argument's size says how the kernel uses it: 0 reads and writes (the default),
   GF_ARG_READ_ONLY only reads (what the race detector assumes). */
#define GF_ARG_READ_ONLY 1
#define GF_ARG_BUFFER_READ(b) { 0, GF_ARG_READ_ONLY, (b) }

typedef struct gf_kernel_ctx { unsigned grid[3], block[3], block_idx[3], thread_idx[3]; } gf_kernel_ctx;
/* What a block kernel (GF_BLOCK_KERNEL) sees outside its GF_EACH_THREAD regions: no thread. */
typedef struct gf_kernel_block { unsigned grid[3], block[3], block_idx[3]; } gf_kernel_block;
/* One parameter of a stub kernel, as GF_KERNEL declares it: gf_launch checks each argument
   against it (a buffer for a pointer, a value of `size` bytes otherwise). */
typedef struct gf_stub_param {
    const char *name;             /* "n" */
    const char *type;             /* as written: "GF_GLOBAL float *", "unsigned" */
    size_t size;                  /* sizeof the type; a '*' in type makes it a buffer parameter */
} gf_stub_param;
/* A stub kernel runs once per thread; args[i] points at the argument's value, and for a
   buffer at a pointer to the buffer's host memory (as CUDA's kernelParams do). */
typedef struct gf_stub_kernel {
    const char *name;
    void (*fn)(const gf_kernel_ctx *ctx, void *const *args);
    int param_count;              /* arguments a launch must pass; 0: not checked (unless params) */
    const gf_stub_param *params;  /* param_count entries checked at launch (GF_STUB_KERNEL sets
                                     them; NULL: only the count); must outlive the module */
    int line;                     /* the line of its GF_KERNEL in the kernel file (0: unknown):
                                     build errors from the device's compiler are reported there */
    /* Optional (GF_STUB_KERNEL sets it): count threads of one block row, from
       ctx->thread_idx[0] on, advancing it, as one loop with the arguments read once, so the
       compiler can optimize across threads. The stub uses it for blocks with no barrier;
       NULL: fn per thread. */
    void (*threads)(gf_kernel_ctx *ctx, void *const *args, unsigned count);
    /* 1: a block kernel (GF_BLOCK_KERNEL sets it): fn and threads run a whole block, once per
       block, from thread (0, 0, 0); its threads run in its GF_EACH_THREAD loops. */
    int per_block;
} gf_stub_kernel;
typedef struct gf_module_desc {
    const char *ptx; const void *cubin; size_t cubin_size;
    const void *hip_code; size_t hip_code_size;
    const char *opencl_source; const void *spirv; size_t spirv_size;
    const char *build_options;    /* OpenCL, NVRTC and hiprtc options (default none) */
    const gf_stub_kernel *stub_kernels; int stub_kernel_count;   /* read while the module lives (reloads,
                                     launch checks): a static table, as GF_STUB_KERNEL makes */
    /* Kernels from one source (see KERNELS FROM ONE SOURCE): the dialect text, compiled at run
       time for the device (NVRTC, hiprtc, clBuildProgram); the stub runs stub_kernels, made
       from the same file by GF_KERNELS_AS_C. */
    const char *source;
    const char *source_name;      /* names it in build logs (default "kernels") */
    const char *cache_dir;        /* compiled binaries kept here; NULL: GPUFLOW_CACHE_DIR, unset: none
                                     (GPUFLOW_CACHE_LIMIT bounds it: the least recently used go) */
    const void *opencl_binary; size_t opencl_binary_size;   /* a program binary for this device */
    const char *source_path;      /* the dialect text read from this file (when source is NULL);
                                     gf_module_reload and gf_module_poll read it again */
} gf_module_desc;
/* gf_module_desc's forms of code, for what handles a desc whole (record and replay): T(text
   field), B(bytes field, its size field). */
#define GF__MODULE_DESC_FORMS(T, B) T(ptx) B(cubin, cubin_size) B(hip_code, hip_code_size) T(opencl_source) \
    B(spirv, spirv_size) T(build_options) T(source_name) B(opencl_binary, opencl_binary_size)

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

/* Race detector (gf_race_check_enable): the first reports, each distinct race once. */
#define GF_RACE_CHECK_ON 1u
#define GF_RACE_REPORTS 8
typedef struct gf_race_info {
    uint64_t count;               /* distinct races found so far */
    int reports;                  /* filled entries of report[] */
    char report[GF_RACE_REPORTS][512];
} gf_race_info;

/* ---- kernels from one source ------------------------------------------------------------- */
/* A kernel is written once, in a small dialect that is CUDA C, HIP C and OpenCL C once
   gpuflow's prelude defines its words, and C for the stub. A kernel file:

       GF_KERNELS(
       GF_KERNEL(saxpy, GF_PARAM(GF_GLOBAL float *, y), GF_PARAM(GF_GLOBAL const float *, x),
                        GF_PARAM(float, a), GF_PARAM(unsigned, n))
       {
           unsigned i = gf_global_id(0);
           if (i < n) y[i] = a * x[i] + y[i];
       }
       )

   A program includes it twice: as text, which gf_module_load compiles for the device (NVRTC,
   hiprtc, clBuildProgram), and as C, which the stub runs:

       static const char saxpy_source[] =
       #define GF_KERNELS GF_KERNELS_AS_TEXT
       #include "saxpy.gfk"
       ;
       #undef GF_KERNELS
       #define GF_KERNELS GF_KERNELS_AS_C
       #include "gpuflow.h"      (again, for a kernel that calls rsqrtf: the C side's rsqrtf)
       #include "saxpy.gfk"
       static const gf_stub_kernel saxpy_stub[] = { GF_STUB_KERNEL(saxpy) };   (one per kernel)

       desc.source = saxpy_source; desc.stub_kernels = saxpy_stub; desc.stub_kernel_count = 1;

   The words: GF_KERNEL(name, GF_PARAM(type, name)...) and GF_KERNEL0(name) (no parameters);
   GF_GLOBAL (a pointer into a buffer); GF_SHARED (an array a block shares, declared in the
   kernel); GF_DEVICE (a helper function); gf_global_id / gf_local_id / gf_group_id /
   gf_local_size / gf_num_groups / gf_global_size (d), dimension d of 0..2; gf_block_sync()
   (the block waits for all its threads); 32-bit integer atomics on buffers and shared arrays
   (unsigned or int: min and max compare as p's type does, as CUDA's and OpenCL's overloads; a
   float, 64-bit or narrower p does not compile, on any backend): gf_atomic_add / _min / _max /
   _xchg (p, v), returning the old value, gf_atomic_cas(p, expected, desired); and the float math functions sqrtf, rsqrtf, expf, logf, powf, sinf,
   cosf, tanhf, fabsf, fminf, fmaxf, floorf, ceilf, which take floats (an int or double argument
   is converted, as in C, on every backend; the C side needs <math.h> and -lm).
   The text is one line once stringified and holds no preprocessor directives of its own;
   gpuflow puts a #line before each GF_KERNEL, from GF_STUB_KERNEL's line, so a device
   compiler's errors name the kernel's line in your file (with gcc, define the C form
   function-like, #define GF_KERNELS(...) GF_KERNELS_AS_C(__VA_ARGS__), for each kernel's own
   line; else the kernel is named);
   C's rules for parameters apply (up to 16); names that are words in one of the languages
   (local, global, private, constant, kernel, __shared__, ...) are not names in the dialect. On the stub a launch's blocks run on every core;
   a block's thread 0 runs first, and at its first gf_block_sync the block's other threads become
   fibers on the same worker, so barriers and shared arrays work as on a GPU.

   Block kernels, for kernels whose threads meet: GF_BLOCK_KERNEL (GF_BLOCK_KERNEL0) declares
   a kernel whose body is written for the whole block, and each GF_EACH_THREAD { ... } in it is
   a region every thread runs, after which the block meets (as at gf_block_sync):

       GF_BLOCK_KERNEL(block_sum, GF_PARAM(GF_GLOBAL const float *, x), GF_PARAM(GF_GLOBAL float *, sums))
       {
           GF_SHARED float part[256];
           unsigned step;
           GF_EACH_THREAD { part[gf_local_id(0)] = x[gf_global_id(0)]; }
           for (step = gf_local_size(0) / 2; step > 0; step /= 2)
               GF_EACH_THREAD { unsigned t = gf_local_id(0); if (t < step) part[t] += part[t + step]; }
           GF_EACH_THREAD { if (gf_local_id(0) == 0) sums[gf_group_id(0)] = part[0]; }
       }

   On a GPU each thread runs the body, each region then a barrier; on the stub the body runs
   once per block and each region is a loop over the block's threads (x fastest), with no
   fiber: as fast as a loop the compiler optimizes. So the code between regions is what the
   whole block does alike: loop counters, branches on parameters and on gf_group_id /
   gf_local_size (thread ids do not compile there on the stub), and memory is written in
   regions: a variable declared outside them is the block's, so write it only there (on the
   stub a region's threads would share it). What a thread keeps from one region to the next
   lives in a GF_SHARED array indexed by its gf_local_id (or is declared in the region). A
   region's end is the barrier, not its start: shared memory read between regions must not be
   written by the region that follows. In a region, `continue` ends the thread's part; `break`,
   `return` and gf_block_sync fail the launch on the stub (on a GPU they skip or split the
   barrier); gf_block_sync between regions is allowed (and needless). A region in a region,
   or in a GF_KERNEL, does not compile on the stub. */
#define GF_KERNELS_AS_TEXT(...) #__VA_ARGS__
#if defined(__GNUC__) && defined(__cplusplus)   /* and the dialect's casts are C's, in C++ too */
#  if defined(__clang__)
#    define GF__KERNELS_QUIET_CXX _Pragma("GCC diagnostic ignored \"-Wold-style-cast\"")
#  else
#    define GF__KERNELS_QUIET_CXX _Pragma("GCC diagnostic ignored \"-Wold-style-cast\"") _Pragma("GCC diagnostic ignored \"-Wuseless-cast\"")
#  endif
#else
#  define GF__KERNELS_QUIET_CXX
#endif
#if defined(__GNUC__)   /* a region's gf__ctx is the thread, in the block's: on purpose, so -Wshadow is quiet there */
#  define GF_KERNELS_AS_C(...)  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wshadow\"") GF__KERNELS_QUIET_CXX \
                                __VA_ARGS__ _Pragma("GCC diagnostic pop")
#elif defined(_MSC_VER)
#  define GF_KERNELS_AS_C(...)  __pragma(warning(push)) __pragma(warning(disable: 4456 4457)) __VA_ARGS__ __pragma(warning(pop))
#else
#  define GF_KERNELS_AS_C(...)  __VA_ARGS__
#endif
#define GF_STUB_KERNEL(name)    { #name, name##__gf_entry, name##__gf_params, name##__gf_param_info, name##__gf_line, name##__gf_threads, name##__gf_per_block }   /* a gf_stub_kernel initializer */

/* The dialect as C (the GPU backends get their own definitions in gpuflow's prelude). */
#if defined(__cplusplus)
#  define GF__TLS thread_local
#elif defined(_MSC_VER)
#  define GF__TLS __declspec(thread)
#else
#  define GF__TLS __thread
#endif
#if defined(__GNUC__)
#  define GF__UNUSED_DECL __attribute__((unused))
#else
#  define GF__UNUSED_DECL
#endif
#define GF__COUNT(...) GF__COUNT_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GF__COUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, n, ...) n
#define GF__CAT(a, b) GF__CAT_(a, b)
#define GF__CAT_(a, b) a##b
#define GF__EACH(m, ...) GF__CAT(GF__EACH_, GF__COUNT(__VA_ARGS__))(m, __VA_ARGS__)
#define GF__EACH_1(m, p0) m(0, p0)
#define GF__EACH_2(m, p0, p1) m(0, p0) m(1, p1)
#define GF__EACH_3(m, p0, p1, p2) m(0, p0) m(1, p1) m(2, p2)
#define GF__EACH_4(m, p0, p1, p2, p3) m(0, p0) m(1, p1) m(2, p2) m(3, p3)
#define GF__EACH_5(m, p0, p1, p2, p3, p4) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4)
#define GF__EACH_6(m, p0, p1, p2, p3, p4, p5) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5)
#define GF__EACH_7(m, p0, p1, p2, p3, p4, p5, p6) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6)
#define GF__EACH_8(m, p0, p1, p2, p3, p4, p5, p6, p7) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7)
#define GF__EACH_9(m, p0, p1, p2, p3, p4, p5, p6, p7, p8) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8)
#define GF__EACH_10(m, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8) m(9, p9)
#define GF__EACH_11(m, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8) m(9, p9) m(10, p10)
#define GF__EACH_12(m, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8) m(9, p9) m(10, p10) m(11, p11)
#define GF__EACH_13(m, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8) m(9, p9) m(10, p10) m(11, p11) m(12, p12)
#define GF__EACH_14(m, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8) m(9, p9) m(10, p10) m(11, p11) m(12, p12) m(13, p13)
#define GF__EACH_15(m, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8) m(9, p9) m(10, p10) m(11, p11) m(12, p12) m(13, p13) m(14, p14)
#define GF__EACH_16(m, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15) m(0, p0) m(1, p1) m(2, p2) m(3, p3) m(4, p4) m(5, p5) m(6, p6) m(7, p7) m(8, p8) m(9, p9) m(10, p10) m(11, p11) m(12, p12) m(13, p13) m(14, p14) m(15, p15)
#define GF__PARAM_DECL(i, p) GF__PARAM_DECL_ p
#define GF__PARAM_DECL_(type, name) , type name
#define GF__PARAM_ARG(i, p) , *(GF__PARAM_TYPE_ p *)gf__args[i]
#define GF__PARAM_TYPE_(type, name) type
#define GF__PARAM_LOCAL(i, p) GF__PARAM_TYPE_ p GF__CAT(gf__p, i) = *(GF__PARAM_TYPE_ p *)gf__args[i];
#define GF__PARAM_LOCAL_ARG(i, p) , GF__CAT(gf__p, i)
#define GF__PARAM_INFO(i, p) GF__PARAM_INFO_ p
#define GF__PARAM_INFO_(type, name) { #name, #type, sizeof(type) },
#define GF_PARAM(type, name) (type, name)
#define GF_GLOBAL
#define GF_DEVICE static
#define GF_SHARED static GF__TLS
/* Each kernel becomes its body (inline, so that the thread loop can take it in), an entry for
   one thread, a loop over a block row's threads (gf_stub_kernel.threads), its parameters as
   gf_launch checks them, and the line it stands on. */
#define GF_KERNEL(name, ...) \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_ctx *gf__ctx GF__EACH(GF__PARAM_DECL, __VA_ARGS__)); \
    static void name##__gf_entry(const gf_kernel_ctx *gf__ctx, void *const *gf__args) { \
        name##__gf_body(gf__ctx GF__EACH(GF__PARAM_ARG, __VA_ARGS__)); } \
    static void name##__gf_threads(gf_kernel_ctx *gf__ctx, void *const *gf__args, unsigned gf__count) { \
        GF__EACH(GF__PARAM_LOCAL, __VA_ARGS__) \
        gf_kernel_ctx gf__t = *gf__ctx;   /* a local: the kernel's stores cannot alias it */ \
        for (; gf__count; gf__count--, gf__t.thread_idx[0]++) { \
            gf__ctx->thread_idx[0] = gf__t.thread_idx[0];   /* who runs, for a barrier's count (never read here) */ \
            name##__gf_body(&gf__t GF__EACH(GF__PARAM_LOCAL_ARG, __VA_ARGS__)); } \
        gf__ctx->thread_idx[0] = gf__t.thread_idx[0]; } \
    enum { name##__gf_params = GF__COUNT(__VA_ARGS__), name##__gf_line = __LINE__, name##__gf_per_block = 0 }; \
    static const gf_stub_param name##__gf_param_info[] GF__UNUSED_DECL = { GF__EACH(GF__PARAM_INFO, __VA_ARGS__) }; \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_ctx *gf__ctx GF__EACH(GF__PARAM_DECL, __VA_ARGS__))
#define GF_KERNEL0(name) \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_ctx *gf__ctx); \
    static void name##__gf_entry(const gf_kernel_ctx *gf__ctx, void *const *gf__args) { (void)gf__args; name##__gf_body(gf__ctx); } \
    static void name##__gf_threads(gf_kernel_ctx *gf__ctx, void *const *gf__args, unsigned gf__count) { \
        gf_kernel_ctx gf__t = *gf__ctx; \
        (void)gf__args; \
        for (; gf__count; gf__count--, gf__t.thread_idx[0]++) { gf__ctx->thread_idx[0] = gf__t.thread_idx[0]; name##__gf_body(&gf__t); } \
        gf__ctx->thread_idx[0] = gf__t.thread_idx[0]; } \
    enum { name##__gf_params = 0, name##__gf_line = __LINE__, name##__gf_per_block = 0 }; \
    static const gf_stub_param name##__gf_param_info[1] GF__UNUSED_DECL = { { 0, 0, 0 } }; \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_ctx *gf__ctx)
/* A block kernel's body runs once per block, its GF_EACH_THREAD regions as loops over the
   block's threads: the stub runs it with no fiber and no switch. Outside the regions gf__ctx
   is a gf_kernel_block, so a thread's id there does not compile; in a region it is the thread
   (a region inside a region does not compile either). */
#define GF_BLOCK_KERNEL(name, ...) \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_block *gf__ctx GF__EACH(GF__PARAM_DECL, __VA_ARGS__)); \
    static void name##__gf_entry(const gf_kernel_ctx *gf__ctx, void *const *gf__args) { \
        gf_kernel_block gf__b = gf__block_of(gf__ctx); name##__gf_body(&gf__b GF__EACH(GF__PARAM_ARG, __VA_ARGS__)); } \
    static void name##__gf_threads(gf_kernel_ctx *gf__ctx, void *const *gf__args, unsigned gf__count) { \
        (void)gf__count; name##__gf_entry(gf__ctx, gf__args); } \
    enum { name##__gf_params = GF__COUNT(__VA_ARGS__), name##__gf_line = __LINE__, name##__gf_per_block = 1 }; \
    static const gf_stub_param name##__gf_param_info[] GF__UNUSED_DECL = { GF__EACH(GF__PARAM_INFO, __VA_ARGS__) }; \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_block *gf__ctx GF__EACH(GF__PARAM_DECL, __VA_ARGS__))
#define GF_BLOCK_KERNEL0(name) \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_block *gf__ctx); \
    static void name##__gf_entry(const gf_kernel_ctx *gf__ctx, void *const *gf__args) { \
        gf_kernel_block gf__b = gf__block_of(gf__ctx); (void)gf__args; name##__gf_body(&gf__b); } \
    static void name##__gf_threads(gf_kernel_ctx *gf__ctx, void *const *gf__args, unsigned gf__count) { \
        (void)gf__count; name##__gf_entry(gf__ctx, gf__args); } \
    enum { name##__gf_params = 0, name##__gf_line = __LINE__, name##__gf_per_block = 1 }; \
    static const gf_stub_param name##__gf_param_info[1] GF__UNUSED_DECL = { { 0, 0, 0 } }; \
    static inline void name##__gf_body(GF__UNUSED_DECL const gf_kernel_block *gf__ctx)
/* Each thread of the block, x fastest, then the block meets: a loop per dimension, and an
   innermost one that makes gf__ctx the thread (continue: on to the next thread). The stub
   is told where a region starts and ends (gf_stub_region), and a thread that leaves its
   part with break (inside is still set where the next thread starts) is misuse: on a GPU
   it would skip the barrier. gf__region_first takes the block by value, so a region in a
   region, or in a GF_KERNEL, does not compile. */
#define GF_EACH_THREAD \
    for (gf__region gf__r = gf__region_first(*gf__ctx); gf__region_more(&gf__r); gf__r.t.thread_idx[1] = 0, gf__r.t.thread_idx[2]++) \
        for (; gf__r.t.thread_idx[1] < gf__r.t.block[1]; gf__r.t.thread_idx[0] = 0, gf__r.t.thread_idx[1]++) \
            for (; gf__r.t.thread_idx[0] < gf__r.t.block[0]; gf__r.t.thread_idx[0]++, gf__r.inside ? gf_stub_region(GF_STUB_REGION_BREAK) : (void)0) \
                for (const gf_kernel_ctx *gf__ctx = (gf__r.inside = 1, &gf__r.t); gf__ctx; gf__ctx = GF__NULL, gf__r.inside = 0)
#if defined(__cplusplus)
#  define GF__NULL nullptr
#else
#  define GF__NULL ((void *)0)
#endif
typedef enum gf_stub_region_event { GF_STUB_REGION_ENTER, GF_STUB_REGION_LEAVE, GF_STUB_REGION_BREAK } gf_stub_region_event;
GPUFLOW_API void gf_stub_region(gf_stub_region_event what);   /* the stub's: GF_EACH_THREAD tells it */
typedef struct gf__region { gf_kernel_ctx t; int inside; } gf__region;
/* (GF__UNUSED_DECL: clang warns of an unused static inline in the main file, which gpuflow.h is
   when compiled on its own: cc -x c -DGPUFLOW_IMPLEMENTATION -c gpuflow.h) */
GF__UNUSED_DECL static inline gf_kernel_block gf__block_of(const gf_kernel_ctx *c) {
    gf_kernel_block b = { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } };   /* clang's -Wconditional-uninitialized does not follow the loop */
    int d;
    for (d = 0; d < 3; d++) { b.grid[d] = c->grid[d]; b.block[d] = c->block[d]; b.block_idx[d] = c->block_idx[d]; }
    return b;
}
GF__UNUSED_DECL static inline gf__region gf__region_first(gf_kernel_block b) {
    gf__region r;
    int d;
    for (d = 0; d < 3; d++) { r.t.grid[d] = b.grid[d]; r.t.block[d] = b.block[d]; r.t.block_idx[d] = b.block_idx[d]; r.t.thread_idx[d] = 0; }
    r.inside = 0;
    gf_stub_region(GF_STUB_REGION_ENTER);
    return r;
}
GF__UNUSED_DECL static inline int gf__region_more(const gf__region *r) {
    if (r->t.thread_idx[2] < r->t.block[2]) return 1;
    gf_stub_region(GF_STUB_REGION_LEAVE);
    return 0;
}
#define gf_global_id(d)   ((unsigned)(gf__ctx->block_idx[d] * gf__ctx->block[d] + gf__ctx->thread_idx[d]))
#define gf_local_id(d)    (gf__ctx->thread_idx[d])
#define gf_group_id(d)    (gf__ctx->block_idx[d])
#define gf_local_size(d)  (gf__ctx->block[d])
#define gf_num_groups(d)  (gf__ctx->grid[d])
#define gf_global_size(d) (gf__ctx->grid[d] * gf__ctx->block[d])
/* Each gf_block_sync in the source is one barrier: the threads of a block must all wait at the
   same one (__COUNTER__ numbers them, even inside GF_KERNELS; 0: not told apart). */
#ifdef __COUNTER__
#  define gf_block_sync() gf_stub_barrier_at(__COUNTER__ + 1)
#else
#  define gf_block_sync() gf_stub_barrier_at(0)
#endif
typedef enum gf_stub_atomic_op { GF_STUB_ATOMIC_ADD, GF_STUB_ATOMIC_MIN, GF_STUB_ATOMIC_MAX, GF_STUB_ATOMIC_XCHG, GF_STUB_ATOMIC_CAS,
                                 GF_STUB_ATOMIC_MIN_INT, GF_STUB_ATOMIC_MAX_INT } gf_stub_atomic_op;
/* p must point to a 32-bit integer: anything else stops the compile, as on every backend (the
   same words are in the device preludes); min and max of an int compare signed. The operand
   (0 ? *(p) : 0) has p's type, promoted, and is never evaluated. */
#define GF_ATOMIC_INT32_ONLY(p) ((void)sizeof(char[sizeof(*(p)) == 4 ? 1 : -1]), (void)sizeof((0 ? *(p) : 0) % 1))
#define GF_STUB_ATOMIC_SIGNED(p) ((0 ? *(p) : 0) - 1 < 1)
#define GF_STUB_ATOMIC(op, p, v, d) (GF_ATOMIC_INT32_ONLY(p), gf_stub_atomic((op), (unsigned *)(void *)(p), (unsigned)(v), (unsigned)(d)))
#define gf_atomic_add(p, v)     GF_STUB_ATOMIC(GF_STUB_ATOMIC_ADD, p, v, 0)
#define gf_atomic_min(p, v)     GF_STUB_ATOMIC(GF_STUB_ATOMIC_SIGNED(p) ? GF_STUB_ATOMIC_MIN_INT : GF_STUB_ATOMIC_MIN, p, v, 0)
#define gf_atomic_max(p, v)     GF_STUB_ATOMIC(GF_STUB_ATOMIC_SIGNED(p) ? GF_STUB_ATOMIC_MAX_INT : GF_STUB_ATOMIC_MAX, p, v, 0)
#define gf_atomic_xchg(p, v)    GF_STUB_ATOMIC(GF_STUB_ATOMIC_XCHG, p, v, 0)
#define gf_atomic_cas(p, e, d)  GF_STUB_ATOMIC(GF_STUB_ATOMIC_CAS, p, e, d)

/* ---- results, backends --------------------------------------------------------------- */
GPUFLOW_API const char *gf_result_name(gf_result r);
GPUFLOW_API const char *gf_last_error(void);
GPUFLOW_API void        gf_set_logger(gf_log_fn fn, void *user);   /* process-wide; NULL: stderr as GPUFLOW_LOG says.
                                       Returns once the old logger's calls on other threads have returned:
                                       the logger must not wait for the caller (a lock it holds) */
GPUFLOW_API const char *gf_backend_name(gf_backend b);
GPUFLOW_API int         gf_backend_available(gf_backend b);   /* 0: gf_last_error says why (not logged); AUTO: 1 */

/* ---- devices ------------------------------------------------------------------------- */
/* Codes: GF_ERROR_BACKEND_UNAVAILABLE (not compiled in, driver missing), GF_ERROR_NO_DEVICE,
   GF_ERROR_DRIVER. gf_device_close waits for the device, stops its waiter thread and frees what
   the device owns (pools, sets and flows it made internally, its graphs and caches); objects
   you created must be destroyed before it. Not from a callback or waiter. gf_device_count of a
   backend that is not there is 0 (gf_last_error says why; not logged). */
GPUFLOW_API int        gf_device_count(gf_backend b);
GPUFLOW_API gf_result  gf_device_open(gf_backend b, int index, gf_device **out);
GPUFLOW_API void       gf_device_close(gf_device *dev);
GPUFLOW_API gf_backend gf_device_backend(const gf_device *dev);
GPUFLOW_API const char *gf_device_name(const gf_device *dev);
GPUFLOW_API gf_result  gf_device_get_info(gf_device *dev, gf_device_info *out);
GPUFLOW_API gf_result  gf_device_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes);
GPUFLOW_API gf_result  gf_device_synchronize(gf_device *dev);

/* ---- more than one device ---------------------------------------------------------------- */
/* Devices of one backend or of several work together: a copy between buffers of two devices
   (gf_copy_buffer_async on a stream of either), a stream waiting for another device's event
   (gf_stream_wait_event, gf_stream_wait_stream), barriers and gf_synchronize_all over streams
   of several devices, flows whose tasks name their device (gf_task_desc.device). How each
   runs: CUDA and HIP copy with the driver's peer copy and wait natively across devices; the
   stub copies and waits on the host; anything else (OpenCL's devices, each in its own
   context, and two backends) is bridged by gpuflow: a copy goes through host memory in 8 MiB
   chunks, two in flight (gf_stream_stats.staged_copies counts them), and a wait holds the
   waiting stream in a host callback until the event completes (that backend's callback
   thread is held meanwhile). gf_device_can_access_peer: 1 where a's kernels and copies reach
   b's memory directly over the link once gf_device_enable_peer(a, b) has run (CUDA/HIP:
   cuCtxEnablePeerAccess / hipDeviceEnablePeerAccess, and access to b's stream-ordered pool;
   exportable and imported buffers stay mapped for their own device only; the stub: always;
   a device and itself, and two gf_devices opened on one GPU: always). A kernel takes a
   peer's memory by address (gf_buffer_native as a value argument of a kernel without
   declared parameters): gf_launch's buffer arguments are the stream's device's own. Copies between devices never need it: a
   CUDA/HIP copy without peer access goes through the driver's own staging, slower. Two
   gf_devices opened on one ordinal are distinct devices to gpuflow's rules (memory
   accounting, events, streams) and share the driver's context. Not captured: a copy or wait
   across devices inside a capture is GF_ERROR_CAPTURE. The race detector checks each
   device's own side. A buffer destroyed while another device's queued copy uses it is freed
   once that copy has run (the copy's stream, and what it queued before, are waited for by the
   release, not by the buffer device's synchronize, unless the copy is staged through host
   memory: then the buffer device's own streams take part in it). Closing a device waits for other devices'
   streams still bridged to its events, holding its staging memory or copying its memory.
   GPUFLOW_STUB_DEVICES=N (1 to 16; default 1) makes the stub N devices, each with its own
   memory capacity and accounting. Codes: GF_ERROR_WRONG_DEVICE (a stream of neither
   device), GF_ERROR_NOT_SUPPORTED (gf_device_enable_peer where there is no link: the message
   says why), GF_ERROR_CAPTURE, GF_ERROR_DRIVER. Thread-safe. */
GPUFLOW_API int       gf_device_can_access_peer(gf_device *a, gf_device *b);   /* 0 for bad handles */
GPUFLOW_API gf_result gf_device_enable_peer(gf_device *a, gf_device *b);       /* a reaches b; again: GF_OK */

/* ---- memory -------------------------------------------------------------------------- */
/* Codes: GF_ERROR_OUT_OF_MEMORY (device memory, the memory limit, host memory), GF_ERROR_OUT_OF_RANGE
   (a range past a buffer's end), GF_ERROR_INVALID_ARGUMENT (overlapping copy ranges, also
   through views; a memory limit below the bytes in use once cached and passed memory went
   back), GF_ERROR_INVALID_STATE (gf_buffer_destroy_async of a buffer whose views live), GF_ERROR_WRONG_DEVICE, GF_ERROR_CAPTURE (a synchronous copy
   into or from an allocation a capture in progress uses: through the same buffer, its parent or
   any view of it, whichever bytes; the buffer's destroy, which keeps it: destroy it after the
   capture ends),
   GF_ERROR_NOT_SUPPORTED (managed memory, prefetch, wide fills
   where the backend has none), GF_ERROR_DRIVER. Async calls return at once; host memory given
   to them must stay valid until the stream reaches them. gf_buffer_destroy never waits: the
   memory is freed once the work queued (on any stream) before the destroy has passed, checked
   at the next allocation or synchronize; gf_buffer_destroy_async frees in one stream's order
   a buffer gf_buffer_create_async made (another is GF_ERROR_INVALID_ARGUMENT).
   gf_host_free does not wait: where the driver's free waits for the device (CUDA, HIP) the
   memory goes at once if gpuflow's streams of the device are idle, else when a synchronize or
   allocation finds them so, at gf_device_synchronize, trim or close, or once 64 MiB wait so
   (GF_MEMORY_PINNED counts it until then; gf_host_alloc short of memory waits for it). The
   program makes sure no queued work uses it.
   A view keeps its parent's memory alive; its destroy only lets go of that. Views of views are
   refused. Blocks until the copy is done: gf_copy_to_device, gf_copy_to_host. Blocks until all
   queued work has run: gf_device_trim (on the stub it also frees the fiber stacks kept for
   kernels that sync, up to 4096 of GPUFLOW_STUB_FIBER_STACK bytes). An allocation that finds the memory short first waits
   for destroyed buffers' pending frees (from a stream callback: takes back only those whose
   work has passed). Synchronous calls: not from a CUDA/HIP stream callback. */
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
GPUFLOW_API gf_result gf_buffer_view(gf_buffer *buf, size_t offset, size_t bytes, gf_buffer **out);
GPUFLOW_API gf_result gf_fill16_async(gf_stream *s, gf_buffer *buf, size_t offset, uint16_t value, size_t count);
GPUFLOW_API gf_result gf_fill32_async(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, size_t count);
GPUFLOW_API gf_result gf_copy_2d_async(gf_stream *s, const gf_copy_2d *copy);
GPUFLOW_API gf_result gf_buffer_record_stream(gf_buffer *buf, gf_stream *s);
GPUFLOW_API gf_result gf_device_memory_stats(gf_device *dev, gf_memory_stats *out);
GPUFLOW_API gf_result gf_device_reset_peak(gf_device *dev);
GPUFLOW_API gf_result gf_device_set_memory_limit(gf_device *dev, size_t bytes);   /* 0: no limit */
GPUFLOW_API gf_result gf_device_trim(gf_device *dev, size_t keep_bytes);
/* gf_set_allocator is process-wide and not synchronized with other calls: set it before the
   first device opens. Memory goes back to the allocator that gave it, so a swap while gpuflow
   holds memory from another heap is the program's error, like free() of another heap's memory.
   One exception: the recorder (gf_record_start, GPUFLOW_RECORD) takes its buffer from the
   GPUFLOW_MALLOC macros, since a recording may be written until exit, after the program's
   allocator is gone. */
GPUFLOW_API void      gf_set_allocator(const gf_allocator *allocator);             /* NULL: back to the macros */

/* Memory budgets: a label and a byte limit that buffers created with gf_buffer_desc.budget
   are charged to, from their create to their destroy. A buffer that would take the budget
   past its limit is refused (GF_ERROR_OUT_OF_MEMORY, naming the budget); the callback hears
   of it, and of each crossing of warn_at (a fraction of the limit) upward. The callback runs
   on the allocating thread as gf_buffer_create_desc returns (the allocation decided, its
   error text kept), with no gpuflow lock held (it may destroy buffers and the budget;
   gf_device_close of its device is refused there, GF_ERROR_INVALID_STATE).
   Per-budget figures: gf_budget_get_stats, the device's gf_memory_stats, and (with the
   profiler on) a counter per budget in the trace. A budget
   destroyed while buffers are charged to it stays until they go (its stats no longer read).
   Codes: GF_ERROR_INVALID_ARGUMENT (no label, limit 0, warn_at outside 0..1), GF_ERROR_WRONG_DEVICE
   (a budget of another device in a buffer desc). */
typedef enum gf_budget_event { GF_BUDGET_CROSSED = 1, GF_BUDGET_REFUSED = 2 } gf_budget_event;
typedef void (*gf_budget_fn)(void *user, gf_budget *budget, gf_budget_event event, uint64_t bytes_used, uint64_t bytes_asked);
typedef struct gf_budget_desc {
    const char *label;            /* required: names it in messages, stats and the trace */
    uint64_t limit;               /* required, bytes */
    float warn_at;                /* fraction of limit (default 0: 0.9) */
    gf_budget_fn fn; void *user;  /* optional */
} gf_budget_desc;
GPUFLOW_API gf_result gf_budget_create(gf_device *dev, const gf_budget_desc *desc, gf_budget **out);
GPUFLOW_API gf_result gf_budget_get_stats(gf_budget *budget, gf_budget_stats *out);
GPUFLOW_API void      gf_budget_destroy(gf_budget *budget);

/* ---- interop: native handles out and in -------------------------------------------------- */
/* Out: CUDA CUcontext / CUstream / CUdeviceptr / CUevent / CUfunction; HIP device index /
   hipStream_t / device pointer / hipEvent_t / hipFunction_t; OpenCL cl_context (and
   cl_device_id through gf_device_get_native) / cl_command_queue / cl_mem / cl_event of the
   latest record / cl_kernel; the stub: host pointers for buffers, NULL elsewhere. In: gpuflow
   uses what it is given and never destroys or resets it; a wrapped stream's destroy drains
   what gpuflow enqueued, so the native stream must outlive its wrapper; a wrapped buffer's
   destroy does not touch the memory, which may go first (no work may still use it). Out:
   gpuflow fences only its own streams' work before a release, so work the program queues
   itself on a native handle (another stream, a library) must be ordered before the destroy.
   Codes: GF_ERROR_NOT_SUPPORTED (the stub has no native streams or devices),
   GF_ERROR_WRONG_DEVICE (a handle of another context). */
GPUFLOW_API void     *gf_device_native(gf_device *dev);
GPUFLOW_API gf_result gf_device_get_native(gf_device *dev, gf_native_device *out);   /* all of it: what gf_device_open_native takes */
GPUFLOW_API void     *gf_stream_native(gf_stream *s);
GPUFLOW_API uint64_t  gf_buffer_native(gf_buffer *buf);
GPUFLOW_API void     *gf_event_native(gf_event *ev);
GPUFLOW_API void     *gf_kernel_native(gf_kernel *k);
GPUFLOW_API gf_result gf_device_open_native(gf_backend b, const gf_native_device *native, gf_device **out);
GPUFLOW_API gf_result gf_stream_wrap(gf_device *dev, void *native_stream, const gf_stream_desc *desc, gf_stream **out);
GPUFLOW_API gf_result gf_buffer_wrap(gf_device *dev, uint64_t native_buffer, size_t bytes, gf_buffer **out);

/* ---- interop: external memory and semaphores (Vulkan, D3D12, other processes) ------------ */
/* Memory or a semaphore another API (Vulkan, D3D12, OpenCL) or process exported comes in as a
   gf_buffer or gf_semaphore that works like gpuflow's own; gpuflow's go out as handles.
   Ownership, one rule on every backend: a handle you pass in stays yours, whether the call
   succeeds or fails (gpuflow hands the driver a duplicate where the driver would take it:
   CUDA and HIP own an fd they import); a handle gpuflow gives out is yours to close. An
   exported fd is close-on-exec: to hand it to a program you start, clear FD_CLOEXEC in the
   child before exec (or send it over a Unix socket, SCM_RIGHTS).
   An imported buffer covers [offset, size) of the exported allocation, counts as
   GF_MEMORY_IMPORTED, and is freed like any buffer (never waiting); the exporter's memory
   must outlive it. Semaphores: binary (a signal's value is ignored; a wait consumes the
   signal) or timeline (a wait passes once the value is >= its value; signals must increase:
   gpuflow refuses a signal not above the last one queued on the same stream, for each of the
   last 8 streams that signalled it; the order of signals from other streams, other handles or
   other APIs is the program's to keep).
   Signal and wait are stream-ordered; a wait for a value nobody signals holds its stream
   (bounded waits time out; the hang report names the semaphore). The race detector orders a
   wait after the signals queued before it, as an event wait after the record it sees, and a
   graph's launch by the waits and signals it captured (all its work after its waits, its
   signals after all its work: a race may go unseen there, none is made up). A
   destroy never waits: the semaphore goes once the work queued before it has passed. Inside a
   capture a signal or wait becomes part of the graph (CUDA: external-semaphore nodes;
   elsewhere recorded): every replay waits for and signals the values captured (new values:
   capture again and gf_graph_update), and the graph holds the semaphore until it goes. Which
   backend takes which type: README "Interop". Threads: as any enqueue (any thread; not from a
   CUDA/HIP host callback). A trap: a synchronous call (gf_copy_to_host, a synchronize) queued
   behind a wait for a value that this same thread has yet to ask the other API to signal
   never returns; signal first, or keep that call asynchronous. gpuflow warns once at such a
   host wait, naming the semaphore and the value (the hang report names them too).
   Codes: GF_ERROR_NOT_SUPPORTED (a type the backend does not take: the message names the ones
   it does), GF_ERROR_INVALID_ARGUMENT (a bad desc: no fd, size 0, offset past size, a memory
   type for a semaphore or the reverse; an fd that is not open), GF_ERROR_OUT_OF_RANGE (size
   past what the handle holds, where that can be read), GF_ERROR_DRIVER. */
typedef enum gf_external_type {
    GF_EXTERNAL_NONE = 0,
    GF_EXTERNAL_OPAQUE_FD,        /* a driver's opaque POSIX fd (Vulkan, OpenCL): memory, semaphores */
    GF_EXTERNAL_OPAQUE_WIN32,     /* an NT handle (or win32_name): memory, semaphores */
    GF_EXTERNAL_OPAQUE_WIN32_KMT, /* a global share handle: memory, semaphores */
    GF_EXTERNAL_D3D12_HEAP,       /* memory */
    GF_EXTERNAL_D3D12_RESOURCE,   /* memory (a committed resource: GF_EXTERNAL_DEDICATED) */
    GF_EXTERNAL_D3D11_RESOURCE,   /* memory */
    GF_EXTERNAL_D3D12_FENCE,      /* a semaphore (a timeline) */
    GF_EXTERNAL_SHAREABLE_FD,     /* a CUDA/HIP virtual-memory allocation's POSIX fd: memory */
    GF_EXTERNAL_HOST_FD,          /* an fd the host maps (memfd, POSIX shm, dma-buf): memory,
                                     semaphores (the stub's: a 64-bit counter at its start) */
    GF_EXTERNAL_TYPE_COUNT
} gf_external_type;
#define GF_EXTERNAL_DEDICATED 1u  /* gf_external_memory_desc.flags: a dedicated allocation */
typedef struct gf_external_memory_desc {
    gf_external_type type;        /* required */
    int fd;                       /* the fd types */
    void *win32_handle;           /* the Windows types: a handle, or */
    const void *win32_name;       /* a name (wide string) of a named NT handle */
    uint64_t size;                /* required: bytes of the whole exported allocation */
    uint64_t offset;              /* where the buffer starts in it (default 0) */
    unsigned flags;               /* GF_EXTERNAL_DEDICATED */
} gf_external_memory_desc;
typedef struct gf_external_handle {
    gf_external_type type;
    int fd;                       /* -1 unless an fd type */
    void *win32_handle;
    uint64_t size;                /* memory: bytes of the exported allocation (what an importer gives as size) */
} gf_external_handle;
typedef struct gf_semaphore_desc {
    gf_external_type type;        /* GF_EXTERNAL_NONE: a semaphore of gpuflow's own (exportable) */
    int fd;
    void *win32_handle;
    const void *win32_name;
    int timeline;                 /* a timeline semaphore (else binary) */
} gf_semaphore_desc;
GPUFLOW_API gf_result gf_buffer_import(gf_device *dev, const gf_external_memory_desc *desc, gf_buffer **out);
GPUFLOW_API gf_result gf_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out);   /* an exportable buffer */
GPUFLOW_API gf_result gf_semaphore_import(gf_device *dev, const gf_semaphore_desc *desc, gf_semaphore **out);
GPUFLOW_API gf_result gf_semaphore_create(gf_device *dev, int timeline, gf_semaphore **out);   /* timeline nonzero: a timeline, else binary */
GPUFLOW_API gf_result gf_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out);
GPUFLOW_API gf_result gf_semaphore_signal_async(gf_stream *s, gf_semaphore *sem, uint64_t value);
GPUFLOW_API gf_result gf_semaphore_wait_async(gf_stream *s, gf_semaphore *sem, uint64_t value);
GPUFLOW_API void      gf_semaphore_destroy(gf_semaphore *sem);
GPUFLOW_API const char *gf_external_type_name(gf_external_type type);

/* ---- streams ------------------------------------------------------------------------- */
/* Codes: GF_NOT_READY (query), GF_TIMEOUT (bounded waits), GF_ERROR_CAPTURE (a wait or query
   of a capturing stream ends the capture), GF_ERROR_DRIVER, or the stream's sticky error.
   gf_stream_add_callback's fn gets the stream's error status (GF_OK normally). */
GPUFLOW_API gf_result   gf_stream_create(gf_device *dev, const gf_stream_desc *desc, gf_stream **out);
GPUFLOW_API void        gf_stream_destroy(gf_stream *s);   /* blocks until this stream's queued work has run */
GPUFLOW_API gf_result   gf_stream_synchronize(gf_stream *s);
GPUFLOW_API gf_result   gf_stream_synchronize_timeout(gf_stream *s, unsigned timeout_ms);   /* GF_TIMEOUT */
GPUFLOW_API gf_result   gf_stream_query(gf_stream *s);     /* GF_OK or GF_NOT_READY */
GPUFLOW_API gf_result   gf_stream_wait_event(gf_stream *s, gf_event *ev);
GPUFLOW_API gf_result   gf_stream_wait_stream(gf_stream *waiter, gf_stream *other);
GPUFLOW_API gf_result   gf_stream_add_callback(gf_stream *s, gf_callback fn, void *user);
GPUFLOW_API gf_result   gf_stream_get_stats(gf_stream *s, gf_stream_stats *out);
GPUFLOW_API const char *gf_stream_label(const gf_stream *s);
GPUFLOW_API uint64_t    gf_stream_id(const gf_stream *s);
GPUFLOW_API gf_device  *gf_stream_device(const gf_stream *s);

/* ---- events and event pools ------------------------------------------------------------ */
/* Codes: GF_NOT_READY, GF_TIMEOUT, GF_ERROR_INVALID_STATE (never recorded, or last recorded
   inside a capture, for elapsed time; released or destroyed twice, any use of a pooled event after its release until it is
   acquired again, but in its own gf_event_on_complete callbacks), GF_ERROR_CAPTURE (waiting on an event recorded inside a capture
   in progress), GF_ERROR_NOT_FOUND (a wait id that is not pending), or the failure of the work
   before the event on its stream (its query, synchronize, elapsed time and on_complete status
   give it; on the stub a stream of the event's device that waits for it fails with it too; a
   GPU's driver reports a fault its own way: CUDA's and HIP's in every later call of the
   context). A never-recorded event
   counts as complete, as in CUDA; so does one last recorded inside a capture that has ended
   (the record marked a place in the graph, for its forks and joins; replays do not record the
   event, and it has no time: record events outside the capture, around its launch, to time it). An event (or an event pool) destroyed, or an event released,
   while gf_event_on_complete waits on it are pending goes through at once: the waits still run,
   and the event is freed (back in its pool; the pool freed) when the last has run or been
   cancelled, never handed out before. gf_event_on_complete's callback runs on the device's
   waiter thread soon after the event completes: a synchronize that returned does not mean it
   has run yet (have the callback signal what waits for it). An event pool
   is shared by threads without contention: each thread takes events from a shelf of its own and
   an event goes back to the shelf it came from; gf_event_pool_stats is a snapshot when other
   threads use the pool meanwhile. */
GPUFLOW_API gf_result gf_event_create(gf_device *dev, unsigned flags, gf_event **out);
GPUFLOW_API void      gf_event_destroy(gf_event *ev);
GPUFLOW_API gf_result gf_event_record(gf_event *ev, gf_stream *s);
GPUFLOW_API gf_result gf_event_synchronize(gf_event *ev);
GPUFLOW_API gf_result gf_event_synchronize_timeout(gf_event *ev, unsigned timeout_ms);     /* GF_TIMEOUT */
GPUFLOW_API gf_result gf_event_query(gf_event *ev);       /* GF_OK, GF_NOT_READY, or the work's failure */
GPUFLOW_API gf_result gf_event_elapsed_ms(gf_event *start, gf_event *end, float *ms);
GPUFLOW_API gf_result gf_event_on_complete(gf_event *ev, gf_callback fn, void *user, uint64_t *wait_id);
GPUFLOW_API gf_result gf_event_cancel_wait(gf_device *dev, uint64_t wait_id);
GPUFLOW_API gf_result gf_event_pool_create(gf_device *dev, const gf_event_pool_desc *desc, gf_event_pool **out);
GPUFLOW_API gf_result gf_event_pool_acquire(gf_event_pool *pool, unsigned flags, gf_event **out);
GPUFLOW_API gf_result gf_event_pool_release(gf_event_pool *pool, gf_event *ev);
GPUFLOW_API gf_result gf_event_pool_get_stats(gf_event_pool *pool, gf_event_pool_stats *out);
GPUFLOW_API void      gf_event_pool_destroy(gf_event_pool *pool);

/* ---- stream pools -------------------------------------------------------------------- */
/* Shared and thread-safe: a stream may be held by several acquirers at once (acquire_ready
   finds one nobody holds and nothing runs on). Codes: GF_TIMEOUT (acquire_ready),
   GF_ERROR_INVALID_STATE (a release without an acquire), and a stream's failure: a pool's
   stream keeps it as any stream does (gf_stream_pool_synchronize returns it, and every later
   one; a stream shared with other holders cannot be swapped), so a program that goes on after
   a failure destroys the pool and makes another. */
GPUFLOW_API gf_result gf_stream_pool_create(gf_device *dev, const gf_stream_pool_desc *desc, gf_stream_pool **out);
GPUFLOW_API gf_result gf_stream_pool_acquire(gf_stream_pool *pool, const gf_acquire_hint *hint, gf_stream **out);
GPUFLOW_API gf_result gf_stream_pool_release(gf_stream_pool *pool, gf_stream *s);
GPUFLOW_API gf_result gf_stream_pool_acquire_ready(gf_stream_pool *pool, unsigned timeout_ms, gf_stream **out);
GPUFLOW_API gf_result gf_stream_pool_synchronize(gf_stream_pool *pool);
GPUFLOW_API gf_result gf_stream_pool_get_stats(gf_stream_pool *pool, gf_stream_pool_stats *out);
GPUFLOW_API void      gf_stream_pool_destroy(gf_stream_pool *pool);   /* blocks until its streams' work has run */

/* ---- stream sets: a fixed-depth ring for pipelines ------------------------------------- */
GPUFLOW_API gf_result  gf_stream_set_create(gf_device *dev, int depth, const char *label, gf_stream_set **out);
GPUFLOW_API gf_stream *gf_stream_set_get(gf_stream_set *set, size_t i);
GPUFLOW_API gf_result  gf_stream_set_next(gf_stream_set *set, size_t i, gf_stream **out);   /* blocks until slot i's last round has run */
GPUFLOW_API gf_result  gf_stream_set_synchronize(gf_stream_set *set);
GPUFLOW_API void       gf_stream_set_destroy(gf_stream_set *set);   /* blocks until its streams' work has run */
/* Frames: each gf_stream_set_next begins a frame (a round of the set) on its slot; it ends at
   gf_stream_set_end_frame or at the next gf_stream_set_next. gf_stream_set_frames says, without
   waiting, how many frames began, how many the device has completed, how many are in flight
   (begun and not known complete, the open one included) and the last completed frame's time
   on the device (by events, from its first operation, before which its start is recorded, to
   its end: the host's time between gf_stream_set_next and that operation is not counted, nor
   are waits queued before it). gf_stream_set_wait_frames
   paces the host as engines do: it returns once at most max_in_flight frames are in flight,
   or GF_TIMEOUT after timeout_ms; a frame still open cannot complete, so a wait that would
   need it is GF_ERROR_INVALID_STATE (end it first). Thread-safe (the set's lock, let go while
   a call waits, so one thread's wait never holds another's query); not from a callback of the
   set's streams. */
typedef struct gf_frame_info {
    uint64_t frames;              /* begun */
    uint64_t completed;           /* known complete on the device */
    uint64_t in_flight;           /* frames - completed */
    int open;                     /* the latest frame has not ended */
    uint64_t last_frame;          /* the latest completed frame's number (from 0) */
    float last_gpu_ms;            /* its time on the device, from its first operation to its end (a flow
                                     run: its lanes' first operation to its last lane's end); 0:
                                     none completed yet */
} gf_frame_info;
GPUFLOW_API gf_result  gf_stream_set_end_frame(gf_stream_set *set);
GPUFLOW_API gf_result  gf_stream_set_frames(gf_stream_set *set, gf_frame_info *out);
GPUFLOW_API gf_result  gf_stream_set_wait_frames(gf_stream_set *set, int max_in_flight, unsigned timeout_ms);

/* ---- barriers ------------------------------------------------------------------------ */
/* The streams may belong to several devices (waits across devices, see "more than one
   device"). gf_barrier: each stream waits, on the device, for what the others had queued;
   gf_synchronize_all: the host waits for them all. Codes: GF_ERROR_INVALID_ARGUMENT (count
   outside 1..GF_POOL_MAX_STREAMS for gf_barrier), GF_ERROR_CAPTURE, GF_ERROR_DRIVER. A barrier
   is waits: on the stub, a stream that failed before it fails the others with it, for good (a
   flow's dependencies and its pool's streams the same); a program that goes on after a kernel
   fails makes its streams anew (on a GPU a kernel's fault usually ends the whole context). */
GPUFLOW_API gf_result gf_barrier(gf_stream *const *streams, int count);
GPUFLOW_API gf_result gf_synchronize_all(gf_stream *const *streams, int count, double *elapsed_ms);

/* ---- flows: a DAG of GPU tasks ----------------------------------------------------------- */
/* Codes: GF_ERROR_CYCLE (an edge that would close a cycle, with the cycle named), a task's own
   failure (with its message), GF_ERROR_CAPTURE, GF_ERROR_INVALID_STATE (a call on the flow from
   inside one of its own tasks). A failing task stops the run; the flow stays runnable. Tasks
   run on the calling thread; they only enqueue. A flow created with
   gf_flow_desc.graph_after becomes a graph by itself: its tasks' functions then run only when
   it is captured (a change to the flow captures it anew), so it suits flows whose tasks enqueue
   the same work every run. gf_flow_get_stats and gf_flow_frames never wait for a run: while
   another thread's run holds the flow they answer with the counts as the last run left them,
   so a callback may call them even while a task waits for that callback. A gf_task names its
   flow: another live flow's task is refused (GF_ERROR_INVALID_ARGUMENT); a flow holds at most
   65535 tasks, and at most 65535 flows live at once in a process (GF_ERROR_OUT_OF_MEMORY past
   either). */
GPUFLOW_API gf_result gf_flow_create(gf_device *dev, const gf_flow_desc *desc, gf_flow **out);
GPUFLOW_API gf_result gf_flow_add(gf_flow *flow, const char *name, gf_task_fn fn, void *user, gf_task *out);
GPUFLOW_API gf_result gf_flow_depend(gf_flow *flow, gf_task before, gf_task after);
GPUFLOW_API gf_result gf_flow_run(gf_flow *flow, gf_stream_pool *pool);
GPUFLOW_API gf_result gf_flow_capture(gf_flow *flow, gf_stream *s, gf_graph **out);
GPUFLOW_API void      gf_flow_destroy(gf_flow *flow);
GPUFLOW_API gf_result gf_flow_add_desc(gf_flow *flow, const gf_task_desc *desc, gf_task *out);
GPUFLOW_API gf_result gf_flow_get_stats(gf_flow *flow, gf_flow_stats *out);
GPUFLOW_API gf_result gf_flow_write_dot(gf_flow *flow, const char *path);   /* tasks, edges, lanes, events */
/* Frames: each run of a flow (gf_flow_run, _run_multi, a graph_after replay) is a frame, complete
   when its work on every lane is. gf_flow_frames says, without waiting, how many runs began, how
   many the devices completed, how many are in flight, and the latest completed run's time on the
   device (from its lanes' first operation, before which each lane's start is recorded, to its
   last lane's end; 0 for a run over several devices);
   gf_frame_info.open is always 0 (a run is queued whole). gf_flow_wait_frames paces the host:
   it returns once at most max_in_flight runs are in flight, or GF_TIMEOUT after timeout_ms
   (max_in_flight negative: GF_ERROR_INVALID_ARGUMENT). A wait lets the flow's lock go while it
   waits, so runs and queries from other threads go on meanwhile. Runs are not ordered with each
   other (each takes its lanes from the pool anew, so two may run side by side): a run that must
   come after the last one's work waits for it first (max_in_flight 0). A run whose end could not
   be marked (out of host memory, its events' records failed; the failure is logged, the run
   returns GF_OK since its work is queued) is counted complete at once, untimed: no frame wait
   waits for it (gf_stream_pool_synchronize does). */
GPUFLOW_API gf_result gf_flow_frames(gf_flow *flow, gf_frame_info *out);
GPUFLOW_API gf_result gf_flow_wait_frames(gf_flow *flow, int max_in_flight, unsigned timeout_ms);
/* Condition tasks: flows that loop and branch. When a run reaches a condition task, the 32-bit
   int at byte offset of cond, written by the work before it, picks what runs next: value k picks
   the k-th task it was made the predecessor of (gf_flow_depend order; a task made its successor
   twice has two indices; itself it cannot pick: GF_ERROR_CYCLE), any other value none. A
   condition's edges are picks, not waits, and only they may go back to an earlier task (a loop;
   any other cycle is GF_ERROR_CYCLE). A task runs once each task it waits for by a plain edge has
   run since it last ran, or when a condition picks it, after the tasks readied by their edges
   (so a loop's round ends before the next begins); the first tasks are those with no edge into
   them; the run ends when no task is ready (Taskflow's rules, ordered). gf_flow_run reads the
   int back once the work before the condition has passed: the host waits for it (4 bytes;
   GPUFLOW_SYNC_DEBUG reports it); a task also waits for its own run before. gf_flow_capture
   makes loops and branches of the graph (see gf_stream_begin_while) on the one stream it
   captures on: a pick that goes back to a task before its condition makes a loop of what that
   task reaches (by plain edges and the forward picks of other conditions, up to the condition),
   run again while the int picks it; each other pick heads a branch of what it reaches so, run
   when the int picks it. They nest: a loop in a loop, a break out of a loop from a branch in it,
   a loop in a branch, up to GF_COND_DEPTH; what follows a loop sits in the IF of its exit, so
   loops one after another count toward that depth too. Other shapes (a task picked by two
   conditions or twice by one, a condition with two ways back, a loop entered in its middle, a
   branch's first task that also waits by a plain edge, a task inside a loop or branch waiting
   for one outside it or the other way round) are GF_ERROR_CAPTURE, naming the tasks, before any
   task's function runs; gf_flow_run runs any.
   Such a graph holds a few bytes of its own and is not updated by gf_graph_update. The condition
   is a task of cond's device (another device's buffer: run it with gf_flow_run_multi and that
   device's pool; a flow over several devices is not captured). Codes: offset not a multiple of
   4 GF_ERROR_INVALID_ARGUMENT, past the buffer GF_ERROR_OUT_OF_RANGE. A loop whose int never
   changes runs for ever, as a while loop would. */
GPUFLOW_API gf_result gf_flow_add_condition(gf_flow *flow, const char *name, gf_buffer *cond, size_t offset, gf_task *out);
/* A flow whose tasks name devices (gf_task_desc.device): each task takes a stream of the pool
   of its device, and an edge between devices is a wait across devices (see "more than one
   device"). pools: one per device the tasks use, in any order (GF_ERROR_WRONG_DEVICE names a
   device without one; GF_ERROR_INVALID_ARGUMENT: two pools of one device). Such a flow is not
   captured (GF_ERROR_CAPTURE) and its runs are not timed on the device. */
GPUFLOW_API gf_result gf_flow_run_multi(gf_flow *flow, gf_stream_pool *const *pools, int count);

/* ---- graphs -------------------------------------------------------------------------- */
/* Native driver graphs on CUDA and HIP, recorded replay elsewhere (gf_graph_info says which).
   A graph holds the buffers and modules its commands use: one destroyed while the graph lives
   is refused from then on, and its memory or code goes with the graph. Codes: GF_ERROR_CAPTURE (capture misuse: nesting, an unjoined fork, sync inside a capture),
   GF_ERROR_NOT_SUPPORTED (updating graphs that own memory), GF_ERROR_OUT_OF_RANGE (a launch
   index past the graph's launches), GF_ERROR_INVALID_STATE (a graph pool with live graphs).
   A capture begun in GF_CAPTURE_GLOBAL or _THREAD_LOCAL mode is ended (or discarded, by a sync
   or destroy of one of its streams) only on the thread that began it, as CUDA and HIP require:
   on another thread that call is refused (GF_ERROR_CAPTURE) and the capture goes on. */
GPUFLOW_API gf_result gf_stream_begin_capture(gf_stream *s, gf_capture_mode mode);
GPUFLOW_API gf_result gf_stream_end_capture(gf_stream *s, gf_graph **out);
GPUFLOW_API gf_result gf_graph_launch(gf_graph *g, gf_stream *s);
GPUFLOW_API gf_result gf_graph_update(gf_graph *target, gf_graph *from);
GPUFLOW_API gf_result gf_graph_capture(gf_stream *s, int warmup_runs, gf_capture_fn fn, void *user, gf_graph **out);
GPUFLOW_API gf_result gf_graph_get_info(gf_graph *g, gf_graph_info *out);
GPUFLOW_API gf_result gf_graph_capture_desc(gf_stream *s, const gf_capture_desc *desc, gf_capture_fn fn, void *user, gf_graph **out);
GPUFLOW_API gf_result gf_graph_set_kernel_args(gf_graph *g, int launch_index, const gf_arg *args, int count);
/* Graphs that decide: inside a capture, the work captured between begin and end is a body run
   while (WHILE) or if (IF) the 32-bit int at cond + offset in device memory is nonzero, read
   each time the stream reaches the begin (a while's before every iteration, the first
   included); the body's own work changes it. Bodies nest (up to GF_COND_DEPTH) and may fork
   and join other streams; begin and end are called on the same stream. While a body is open,
   enqueue only on its stream and on streams forked from it inside the body: work on another
   stream of the capture lands in the body on recording backends and outside it on CUDA. Codes: outside a
   capture GF_ERROR_CAPTURE (capture first); offset not a multiple of 4
   GF_ERROR_INVALID_ARGUMENT, past the buffer GF_ERROR_OUT_OF_RANGE; an end without its begin,
   an end of the other kind or on another stream, a begin past GF_COND_DEPTH, or a begin left
   open at gf_stream_end_capture: GF_ERROR_CAPTURE, and the capture is discarded. Recorded
   graphs (the stub, OpenCL) evaluate the int at replay: gf_graph_launch then waits for the
   stream at each evaluation (a 4-byte read back; GPUFLOW_SYNC_DEBUG reports it), so such a
   launch is not asynchronous: from a host callback of its stream it is refused
   (GF_ERROR_INVALID_STATE), and while it waits it holds the stream, so a host callback on that
   stream must not enqueue on it then (the two would wait for each other). CUDA (12.3+ drivers) makes the driver's WHILE and IF nodes, the
   handle set from the int by a kernel of gpuflow's own: its replays stay asynchronous; a body
   there holds what conditional bodies may (kernels, copies, fills, child graphs: a host
   callback is refused by the driver). A backend that captures natively without them (HIP, and
   CUDA with a driver older than 12.3) emulates them: at the first begin the driver's capture
   ends into a native graph of its own, replayed as the first step of a recording that goes on
   from there (gf_graph_info: not native), so its replays read the conditions back as the stub's
   do. That needs the begin on the stream that began the capture, every forked stream joined back
   and no memory allocated in the capture (else GF_ERROR_NOT_SUPPORTED and the capture goes on
   natively); such a graph is not launched inside another capture nor changed by gf_graph_update
   or gf_graph_set_kernel_args (GF_ERROR_NOT_SUPPORTED). */
#define GF_COND_DEPTH 8
GPUFLOW_API gf_result gf_stream_begin_while(gf_stream *s, gf_buffer *cond, size_t offset);
GPUFLOW_API gf_result gf_stream_end_while(gf_stream *s);
GPUFLOW_API gf_result gf_stream_begin_if(gf_stream *s, gf_buffer *cond, size_t offset);
GPUFLOW_API gf_result gf_stream_end_if(gf_stream *s);
GPUFLOW_API gf_result gf_graph_write_dot(gf_graph *g, const char *path);
/* Shared graph memory: captures begun with one pool take their stream-ordered allocations from
   the pool's blocks, so graphs of a pool share memory (the pool's peak is the largest graph's,
   not the sum). Graphs of one pool never run at the same time: each launch of one waits, on
   the device, for the pool's previous launch to finish. A pool outlives its graphs: destroying
   it while one is alive is refused. */
GPUFLOW_API gf_result gf_graph_pool_create(gf_device *dev, gf_graph_pool **out);
GPUFLOW_API void      gf_graph_pool_destroy(gf_graph_pool *pool);   /* never waits: its memory goes after queued replays */
GPUFLOW_API gf_result gf_stream_begin_capture_pool(gf_stream *s, gf_capture_mode mode, gf_graph_pool *pool);
GPUFLOW_API void      gf_graph_destroy(gf_graph *g);   /* never waits: what queued replays use goes after them */

/* ---- kernels ------------------------------------------------------------------------- */
/* Codes: GF_ERROR_BUILD (with the compiler's log), GF_ERROR_NOT_FOUND (no such kernel),
   GF_ERROR_NOT_SUPPORTED (no form of the module for this backend, no run-time compiler: the
   message names what to install), GF_ERROR_INVALID_ARGUMENT (a launch's argument count or
   sizes the kernel or device cannot take). */
GPUFLOW_API gf_result gf_module_load(gf_device *dev, const gf_module_desc *desc, gf_module **out);
GPUFLOW_API gf_result gf_kernel_get(gf_module *mod, const char *name, gf_kernel **out);
GPUFLOW_API void      gf_module_destroy(gf_module *mod);   /* never waits: the code goes after queued launches */
/* Hot reload. gf_module_reload builds the module's code again, from desc (new source, binaries
   or stub_kernels) or, desc NULL, from its source_path read again with the options it was
   loaded with; gf_module_poll does it when source_path changed since the last load or poll
   (its modification time, size, status-change time or identity; a file not found is warned
   about once, and the old code runs on), at a frame boundary the program chooses (*reloaded
   says whether it reloaded). The gf_kernel handles the program holds launch the new code from
   then on; launches queued before keep the old code, which goes once they have passed.
   Graphs: a recorded graph
   runs the new code at its next replay; a native graph (CUDA, HIP) has each launch of a
   reloaded kernel pointed at the new code in place; one the driver refuses to update (or whose
   kernel's parameters changed) is stale: gf_graph_launch returns GF_ERROR_INVALID_STATE until
   it is captured again or updated (the old code it runs is kept while it lives, and goes with
   the last such graph; out of host memory, with the module). A failure leaves the old
   code running: GF_ERROR_BUILD with the compiler's log, GF_ERROR_NOT_FOUND for a kernel the
   program holds that the new code lacks, GF_ERROR_INVALID_STATE for a module not loaded from
   a file (poll, or reload with desc NULL). The stub runs the C form compiled into the program,
   so its reload needs desc->stub_kernels (say, from a library the program reloaded); from the
   file alone it is GF_ERROR_NOT_SUPPORTED. A reload that changes a kernel's parameters is the
   program's to follow: recorded graphs refuse to replay such a launch (re-capture them); on
   GPU backends gpuflow does not know a compiled kernel's parameters, so a native graph gets
   the new code with its captured arguments. A graph that launched other graphs inside its
   capture is marked stale by any reload of the device's modules. Not while another thread
   gets or launches this module's kernels, or captures or destroys graphs of the device. */
GPUFLOW_API gf_result gf_module_reload(gf_module *mod, const gf_module_desc *desc);
GPUFLOW_API gf_result gf_module_poll(gf_module *mod, int *reloaded);
GPUFLOW_API gf_result gf_launch(gf_stream *s, gf_kernel *k, gf_launch_dims dims, const gf_arg *args, int count);
/* What the dialect's C side calls (only from a stub kernel's thread): */
GPUFLOW_API void      gf_stub_barrier(void);              /* gf_stub_barrier_at(0) */
GPUFLOW_API void      gf_stub_barrier_at(int site);       /* site: which gf_block_sync; 0: unknown */
                                                          /* (and gf_stub_region, declared with GF_EACH_THREAD) */
GPUFLOW_API unsigned  gf_stub_atomic(gf_stub_atomic_op op, unsigned *p, unsigned v, unsigned desired);

/* ---- profiling ----------------------------------------------------------------------- */
/* Codes: GF_ERROR_INVALID_STATE (never enabled; a report or trace from a host callback of the
   device, whose wait could never end), GF_ERROR_DRIVER (profiled work that could not be timed:
   dropped and counted in dropped_ops). Reports and traces wait for profiled work. The history
   (what reports, traces and gf_stream_stats' busy time cover) runs from the switch on: switched
   off and on again, it starts anew (what was read is dropped, so profiling a window at a time
   holds one window's records); left on, it keeps every record until the device closes (at most
   2^20, later operations dropped and counted; a record with its two timing events took about
   1 KiB on the stub, so up to about 1 GiB; the events go back to the device's pool, which
   keeps them for reuse). */
GPUFLOW_API gf_result gf_profiler_enable(gf_device *dev, unsigned flags);
GPUFLOW_API gf_result gf_profiler_report(gf_device *dev, gf_profile_report *out);
GPUFLOW_API gf_result gf_profiler_write_trace(gf_device *dev, const char *path);
/* Named spans on a stream: NVTX ranges on CUDA built with GPUFLOW_NVTX (Nsight Systems shows
   them), nested spans on the stream's track in gpuflow's own trace (profiler on), and nothing
   otherwise. Pops match pushes per stream; an unmatched pop is ignored. */
GPUFLOW_API void      gf_range_push(gf_stream *s, const char *name);
GPUFLOW_API void      gf_range_pop(gf_stream *s);

/* ---- races and hangs -------------------------------------------------------------------- */
/* The race detector sees every operation gpuflow enqueues, with the buffer bytes it reads and
   writes, and every ordering gpuflow knows (stream order, events, waits, barriers, sets, flows,
   host synchronizes, waiters, graph replays), and reports two accesses to overlapping bytes,
   one a write, that nothing orders, as a warning through the logger and in gf_race_report.
   GF_RACE_CHECK_ON turns it on, 0 off; GPUFLOW_RACE_CHECK=1 in the environment turns it on for
   every device at open. Off, it costs one branch per operation. Graphs replay the accesses
   seen while they were captured (capture with the detector on), as one operation of the
   launching stream: races between a graph's own branches are not seen. A host wait teaches
   the host what had been queued when it began. Not seen either: orderings through another
   device's streams (a chain across devices is reported), and one memory under two handles
   (an export and its import); README "Finding races and hangs" lists the limits. Out of host
   memory it may lose an ordering (never an access): from then on (until turned off and on)
   each report says it may not be a race. */
GPUFLOW_API gf_result gf_race_check_enable(gf_device *dev, unsigned flags);
GPUFLOW_API gf_result gf_race_report(gf_device *dev, gf_race_info *out);
/* Hang diagnostics: each stream's operations not known to be done, what it waits on, running
   callbacks, captures and async waiters, as text. GPUFLOW_HANG_MS=N in the environment makes
   any blocking wait that lasts longer than N ms log this once (then it keeps waiting): the
   synchronizes (their _timeout forms too, when the bound is longer), the destroys that wait,
   gf_device_close. Not the frame waits and gf_stream_pool_acquire_ready, which wait in short
   slices and give control back. */
GPUFLOW_API gf_result gf_device_write_state(gf_device *dev, char *text, size_t size);

/* ---- faults on demand ----------------------------------------------------------------- */
/* Chosen operations fail on purpose, so that a program's recovery paths run on any machine,
   the stub included (GPUFLOW_FAULTS=spec does the same from the environment, read once at the
   first device open). spec: rules separated by commas, each WHAT:N (the Nth such operation
   fails), WHAT:N+ (the Nth and every one after it) or WHAT:N/K (the Nth, then every Kth
   after it); counting starts when the rules are set. WHAT:
       launch, copy, fill   that kind of stream operation (GF_ERROR_DRIVER); captured work and
                            graph replays are not counted
       op                   any stream operation (launch, copy, fill, callback, event record,
                            wait, signal) (GF_ERROR_DRIVER); not the events stream sets and
                            flows record to count their frames
       buffer               device memory: gf_buffer_create* (GF_ERROR_OUT_OF_MEMORY)
       sync                 host waits: gf_stream_synchronize and gf_event_synchronize, with
                            or without a timeout, and gf_device_synchronize (GF_ERROR_DRIVER)
       alloc                the library's own host allocations, as if GPUFLOW_MALLOC returned
                            NULL (the calls report GF_ERROR_OUT_OF_MEMORY); counted over all
                            threads, the library's own included
       lost                 the device of the Nth operation (launch, copy, fill, op, buffer and
                            sync counted together) is lost from then on: that operation and
                            every later one on the device return GF_ERROR_DEVICE_LOST until
                            gf_device_close, and so do its queries, elapsed times, stream,
                            event and capture creation, trim and the status of its event
                            callbacks, as on a real lost device (work already queued still
                            runs; destroys work)
       any other name       a driver entry point (cuLaunchKernel, clEnqueueNDRangeKernel,
                            hipMemcpyAsync, nvrtcCompileProgram, ...) or a kernel-cache file
                            operation (open, read, write, rename, remove, mkdir): it fails as
                            that call would. Not in builds with GPUFLOW_FAULT_INJECTION (the
                            test hook owns the seam there)
   An injected failure's message says "GPUFLOW_FAULTS:" and names the rule and the count it kept,
   after the call's or the operation's name ("gf_buffer_create: GPUFLOW_FAULTS: this buffer is
   number 2, which rule 'buffer:2+' fails", "copy: GPUFLOW_FAULTS: this copy is op number 3,
   which rule 'op:3' fails") or a driver entry's own failure message. NULL or "" clears
   the rules (a lost device stays lost). Codes: GF_ERROR_INVALID_ARGUMENT naming the first
   rule not understood (the rules are then unchanged). Thread-safe; counts are process-wide.
   With no rule set each check is one relaxed load. */
GPUFLOW_API gf_result gf_faults_set(const char *spec);
GPUFLOW_API uint64_t  gf_faults_injected(void);   /* failures injected since the process began */

/* ---- record and replay ---------------------------------------------------------------- */
/* Recording writes the process's gpuflow calls to a file in the order they returned (a destroy
   or close as it starts; the calls gpuflow makes inside a call are not written): each call's
   arguments with objects by id, its result, the calling thread (numbered from 1) and the time
   since recording began; the bytes of every copy from host memory; modules whole (dialect
   source, a source_path file's text, binaries, the stub's kernel names). Device-to-host bytes
   are left out unless asked. Written: devices, buffers and views, copies and fills, streams,
   events and event pools, stream pools and sets, barriers, modules (reloads with the code they
   reloaded), kernels and launches, captures, graphs (loops and branches included) and graph
   pools, memory limits and budgets (their callbacks are the program's: a replay has none; the
   calls a budget's callback makes are written after the call that ran it, and a stream
   callback's from its thread as they happen), peer access, trims and peak resets, profiler
   ranges, and the race detector, profiler and fault switches. Flows and gf_graph_capture are written as
   the calls they make, with the events and streams gpuflow made for them (a flow's lane
   edges, a captured flow's fork streams): the first call that names one is preceded by an
   event_create or stream_create, so the replay records, waits and forks alike.
   A captured flow's condition tasks are written as the graph's loops and branches (their
   begins test the int against the pick's index), with the copies of each int to the graph's
   slots and the slots' buffer; a decided run (gf_flow_run) is written as the tasks it ran. A
   stream callback is replayed as a no-op in its place (its code is the program's). Interop is written
   without its handles, which mean nothing in another process, and a replay stands in for what
   they named: a native device by a device of its backend and index, a wrapped stream or
   buffer and imported memory by a stream or buffer of gpuflow's own (of the size; its
   contents, the other API's, are not in the file), a semaphore by events on every backend (a
   signal records one; a wait waits for the first of the replay's signals that would satisfy
   it, or, when the other API signalled it, for the newest signal of each of the device's
   semaphores (the other API may have waited for them), so no replay waits for ever; a wait on
   one of gpuflow's own, never exported, queued before its signal waits for nothing (said
   once); a signal or wait captured in a graph is made by each launch of that graph; a second
   handle of one semaphore, an import of its export, is a second stand-in, and so is a wrap of
   gpuflow's own memory: what one writes the other does not see). Stand-ins are made outside
   fault rules and the memory limit, as the handles were (an alloc rule does not count what the
   original made). Such a call that failed when recorded, a signal or wait the backend refused
   (GF_ERROR_NOT_SUPPORTED, GF_ERROR_DRIVER) and every gf_semaphore_export are skipped (and
   counted); a gf_buffer_export is made, its handle closed, and not compared, as
   gf_device_enable_peer is not (the answer is the machine's). GPUFLOW_RECORD=file starts
   recording at the first device open and ends it at exit (%p in the name: the process id, so
   that programs started with the variable write files of their own rather than replace it;
   GPUFLOW_RECORD_LIMIT=bytes, default 1 GiB). The file
   is flushed at each synchronize, destroy and close, so a crash leaves all that came before
   it. An async copy's host bytes (gf_copy_to_device_async, gf_copy_2d_async) are taken as its
   stream reaches the copy, by a host callback queued just before it, so memory that earlier
   work on the stream fills (a copy to the host, a callback) is recorded as the copy read it;
   the stream waits for that callback (recording slows such copies). They are taken at the call
   inside a capture, and for memory the backend stages at the call (pageable memory on CUDA
   and HIP, which the copy reads there). A snapshot still queued when recording stops is taken
   as its stream reaches it: the file stays open after its END until then (or the next
   gf_record_start, or its device's close, after which the copy replays zeros). Thread-safe;
   with recording off each recorded call costs one load.
   The file is written alone: another recorder writing it (another process given the same
   GPUFLOW_RECORD without %p, another copy of gpuflow in this process) makes gf_record_start
   refuse rather than cut it (locked while recording; the same process's second copy is seen on
   Linux and Windows; only a regular file is locked). A fork's child does not record unless it
   starts a recording of its own, and writes nothing into the parent's file; the file is closed
   on exec; a FIFO with no reader is refused, not waited for, and a pipe's reader that leaves
   ends the recording (EPIPE), not the process (SIGPIPE).
   Codes: gf_record_start GF_ERROR_INVALID_STATE while recording or while another recorder
   writes the file, GF_ERROR_INVALID_ARGUMENT for a path that cannot be written (the system's
   reason in the message), GF_ERROR_OUT_OF_MEMORY out of memory or file descriptors;
   gf_record_stop GF_ERROR_INVALID_STATE when not recording (once after a recording that a
   failed write, its limit or its object numbers (2^31 - 1 in one recording; each object made
   and each event pool acquire takes one) ended early, with the reason). */
typedef struct gf_record_desc {
    const char *path;             /* required: the file (replaced) */
    uint64_t max_bytes;           /* size limit (default 1 GiB; at least 128): the call that would
                                     pass it ends the recording, and the file says it was cut; a
                                     snapshot still queued at the stop that would pass it is left
                                     out (that copy replays zeros) */
    int device_to_host;           /* also gf_copy_to_host's bytes, which a replay compares
                                     (default: sizes only) */
} gf_record_desc;
GPUFLOW_API gf_result gf_record_start(const gf_record_desc *desc);
GPUFLOW_API gf_result gf_record_stop(void);

/* A replay makes the recorded calls again, on the calling thread, in the file's order, on the
   backend each device was recorded on or the one desc names, and compares each result with
   the recorded one (queries and bounded waits, whose results depend on timing, are made but not
   compared). A module recorded with stub kernels runs on the stub with the C kernels of
   stub_kernels (found by name) or, for those missing, of compile_stub (tools/gfreplay
   compiles the recorded source with the system's C compiler); a module whose C kernels are
   not found fails its load on the stub, which is skipped (a warning names it), with the calls
   on its kernels. A recorded callback runs as a no-op. Reading a cut, corrupt or hostile file is safe: what is well formed is replayed, and a
   call naming an object the replay does not have is skipped and counted. A refused launch's
   arguments are not in the file (it may not have read them): replayed with zeroed ones, it is
   skipped when it is then refused otherwise (a bad handle among them).
   Returns GF_OK when every compared result matched; GF_ERROR_INVALID_STATE when one did not
   (the first is in out->first_mismatch and gf_last_error, each is logged as a warning);
   GF_ERROR_INVALID_ARGUMENT for data that is not a recording or is malformed (replayed up to
   there), unknown flags, or a stub_kernel_count that is negative or has no table;
   GF_ERROR_NOT_FOUND when path cannot be read. Fault rules the file sets are cleared
   at its end; an alloc rule counts the calls' allocations, not the replay's own bookkeeping,
   so the call that failed when recorded fails again (on the backend it was recorded on).
   Devices the file leaves open are closed at the end, and what it leaves on a device is
   destroyed before its close. Not while another thread records; a recording this thread runs
   goes on, without the replay's own calls. */
#define GF_REPLAY_RACE_CHECK 1u   /* the race detector on for every device the replay opens */
#define GF_REPLAY_PROFILE    2u   /* the profiler on; trace_path gets the first device's trace */
typedef struct gf_replay_call {
    uint64_t index;               /* from 1, in the file's order */
    int thread; double at_ms;     /* who made it, when (ms since recording began) */
    const char *name;             /* "gf_launch" */
    gf_result recorded, replayed; /* replayed: meaningless when skipped */
    int skipped;                  /* not made (an object the replay does not have), or refused otherwise for lack of args */
    int compared;                 /* its result counts (queries and bounded waits do not) */
} gf_replay_call;
typedef struct gf_replay_desc {
    const char *path;             /* the recording; NULL: data and size, one in memory */
    const void *data; size_t size;
    gf_backend backend;           /* GF_BACKEND_AUTO: each device on the backend it was recorded on */
    unsigned flags;               /* GF_REPLAY_* */
    const char *trace_path;       /* with GF_REPLAY_PROFILE: the first device's Perfetto trace, at its close */
    const gf_stub_kernel *stub_kernels; int stub_kernel_count;   /* the program's C kernels, by name */
    /* For a module with stub kernels that stub_kernels lacks, before its load on dev: out gets
       count kernels, named as names, made from source, the recorded dialect text (NULL if it had
       none), returning GF_OK; any other result leaves them out (the load then fails as it
       would). Only the stub runs them: return GF_ERROR_NOT_SUPPORTED for other backends. */
    gf_result (*compile_stub)(void *user, gf_device *dev, const char *source, const char *const *names, int count, const gf_stub_kernel **out);
    void *user;
    size_t memory_limit;          /* each device's memory limit, at most (default: as recorded) */
    void (*on_call)(void *user, const gf_replay_call *call);   /* after each call (gfreplay --list prints them) */
    int untrusted;                /* the file may be hostile (a fuzzer's): what could run for ever or
                                     grow without end is bounded: launches past 2^20 threads, loops
                                     in graphs and devices past 2 open are skipped, timeouts cut to
                                     1 s, pools and sets kept small (host memory for copies is
                                     bounded always) */
} gf_replay_desc;
typedef struct gf_replay_report {
    uint64_t calls;               /* recorded calls read */
    uint64_t replayed;            /* made again */
    uint64_t skipped;             /* calls not made, or refused otherwise for lack of args */
    uint64_t mismatches;          /* results (or device-to-host bytes) that differ */
    uint64_t races;               /* found by the race detector (GF_REPLAY_RACE_CHECK) */
    int threads;                  /* threads that made the recorded calls (the highest number) */
    int cut;                      /* the recording ended early: its size limit, or the program
                                     stopped without ending it */
    char first_mismatch[512];     /* "call N (thread T, at M ms): gf_...: recorded X, replayed Y: why" */
} gf_replay_report;
GPUFLOW_API gf_result gf_replay(const gf_replay_desc *desc, gf_replay_report *out);

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

/* The dialect's one C word outside gpuflow's names: rsqrtf, which C lacks. Only a kernel file
   compiled as C sees it: gpuflow.h included (again) with GF_KERNELS defined, or with
   GPUFLOW_DIALECT_C; any other includer may have its own rsqrtf. */
#if (defined(GF_KERNELS) || defined(GPUFLOW_DIALECT_C)) && !defined(rsqrtf)
#  define rsqrtf(x) (1.0f / sqrtf(x))
#endif

/* ======================================================================================= */
/*                                  IMPLEMENTATION                                         */
/* ======================================================================================= */
#if defined(GPUFLOW_IMPLEMENTATION) && !defined(GPUFLOW_IMPLEMENTATION_DONE)
#define GPUFLOW_IMPLEMENTATION_DONE

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if (defined(GPUFLOW_MALLOC) || defined(GPUFLOW_REALLOC) || defined(GPUFLOW_FREE)) && \
    !(defined(GPUFLOW_MALLOC) && defined(GPUFLOW_REALLOC) && defined(GPUFLOW_FREE))
#  error "gpuflow: define all three of GPUFLOW_MALLOC, GPUFLOW_REALLOC and GPUFLOW_FREE, or none of them"
#endif
#ifndef GPUFLOW_MALLOC
#  define GPUFLOW_MALLOC(n)     malloc(n)
#  define GPUFLOW_REALLOC(p, n) realloc((p), (n))
#  define GPUFLOW_FREE(p)       free(p)
#endif
/* Host memory: the run-time allocator (gf_set_allocator) when one is set, else the
   GPUFLOW_MALLOC / REALLOC / FREE macros. Backends allocate through these too, so memory is
   always freed by the allocator that gave it. */
static gf_allocator gf__allocator;   /* alloc NULL: the macros */
static int gf__faults_armed;         /* faults on demand (>>faults), atomic: some rule is set */
static int gf__fault_alloc(void);    /* 1: this allocation fails on purpose */
static GF__TLS int gf__alloc_own;    /* > 0: what fault rules do not count (a replay's bookkeeping, a recording's
                                        snapshots, OpenCL callback threads started on the driver's thread) */
static void *gf__malloc(size_t n) {
    if (gf__fault_alloc()) return NULL;
    return gf__allocator.alloc ? gf__allocator.alloc(gf__allocator.user, n) : GPUFLOW_MALLOC(n);
}
static void *gf__realloc(void *p, size_t n) {
    if (gf__fault_alloc()) return NULL;
    return gf__allocator.realloc ? gf__allocator.realloc(gf__allocator.user, p, n) : GPUFLOW_REALLOC(p, n);
}
static void gf__free(void *p) {
    if (!p) return;
    if (gf__allocator.free) gf__allocator.free(gf__allocator.user, p); else GPUFLOW_FREE(p);
}
#ifndef GPUFLOW_ASSERT
#  include <assert.h>
#  define GPUFLOW_ASSERT(c) assert(c)
#endif
#ifdef GPUFLOW_STATIC
#  define GPUFLOW_IMPL GPUFLOW_API
#else
#  define GPUFLOW_IMPL
#endif

/* ---- defaults: every default the library applies, in one place -------------------- >>defaults */
#define GF__DEFAULT_POOL_STREAMS 4           /* gf_stream_pool_desc.count */
#define GF__DEFAULT_RECORD_LIMIT ((uint64_t)1 << 30)   /* gf_record_desc.max_bytes */
#define GF__DEFAULT_CACHE_LIMIT ((uint64_t)256 << 20)  /* GPUFLOW_CACHE_LIMIT: a kernel cache directory's entries, in bytes */
#define GF__CACHE_TMP_STALE_S 3600                  /* a kernel cache's temporary file this old was left by a writer that died */
#define GF__DEFAULT_EVENT_POOL 16            /* gf_event_pool_desc capacities: events made up front, per kind */
#define GF__DEFAULT_KERNEL_ARGS_BYTES 4096   /* CUDA's classic parameter space; backends may say more */
#define GF__DEFAULT_CACHE_KEEP ((size_t)64 << 20)   /* freed stream-ordered memory kept for reuse */
#define GF__DEFAULT_POOL_KEEP(total) ((total) / 4)  /* a driver's stream-ordered pool keeps this much freed memory */
#define GF__RANGE_DEPTH 16                          /* nested gf_range_push spans timed per stream */
#define GF__RECENT_OPS 8                            /* per stream, for gf_device_write_state */
#define GF__ADMIT_WAITS 4                           /* an allocation past the memory limit waits for pending frees at most this often */
#define GF__WAIT_CHAIN 4                            /* streams followed from a callback's wait (gf__waits_behind_callback) */
#define GF__RACE_ACCESSES 4096                      /* per buffer, not yet known done: the oldest go beyond (a warning) */
#define GF__STAGE_IDLE_KEEP ((size_t)64 << 20)      /* idle pinned staging memory kept for reuse */
#define GF__IDLE_RELEASE_KEEP ((size_t)64 << 20)    /* host memory let go of kept for an idle device */
#define GF__IDLE_RELEASE_MAX 64                     /* releases (module unloads) kept for an idle device */
#ifdef GPUFLOW_STUB_FIBER_STACK
#  define GF__FIBER_STACK ((size_t)(GPUFLOW_STUB_FIBER_STACK))
#else
#  define GF__FIBER_STACK ((size_t)128 << 10)       /* a stub block thread's stack, when its kernel syncs */
#endif
#define GF__FIBER_STACKS_KEPT (sizeof(void *) >= 8 ? 4096 : 256)   /* a stub device's fiber stacks kept for its next launches,
                                                                 to its close (the rest freed): 16 cores' 256-thread blocks */
#define GF__PACE_SLICE_MS 2u                        /* a pacing wait looks again this often (another thread may count what it waits for) */
#define GF__WAIT_NAP_MIN_US 20                      /* polling waits back off from this... */
#define GF__WAIT_NAP_MAX_US 1000                    /* ...to this */
#define GF__WAIT_LOOK_BATCH 64                      /* the waiter looks at this many waits, then lets go of its lock */
#define GF__WAIT_NAP_PER_ROUND 8                    /* after a round that fired nothing it naps 8x the round's time at least... */
#define GF__WAIT_NAP_ROUND_MAX_US 100000            /* ...up to this */

/* ---- platform: threads, locks, atomics, clocks, dynamic libraries ----------------- >>platform */
#if defined(_WIN32)
#  ifndef WIN32_LEAN_AND_MEAN
#    define WIN32_LEAN_AND_MEAN
#  endif
#  include <windows.h>
typedef CRITICAL_SECTION   gf__os_mutex;
typedef CONDITION_VARIABLE gf__cond;
typedef HANDLE             gf__thread;
#else
#  if defined(__GLIBC__) && !defined(__USE_XOPEN2K8)
     /* A system header came before the implementation under strict C (-std=c99), so glibc
        chose its features without POSIX 2008 (or with the 1995 level that -pthread's
        _REENTRANT implies). <features.h> clears and makes that choice again when read again;
        the POSIX headers read next then declare what the implementation needs. One the program
        read already stays as it was (the #errors below say so). */
#    if !defined(_GNU_SOURCE) && (!defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L)
#      undef _POSIX_C_SOURCE
#      define _POSIX_C_SOURCE 200809L
#    endif
#    undef _FEATURES_H
#    include <features.h>
#  endif
#  include <pthread.h>
#  include <sched.h>
#  include <time.h>
#  include <errno.h>
#  include <dlfcn.h>
#  include <unistd.h>
#  include <ucontext.h>   /* the stub runs a syncing block's threads as fibers */
#  include <fcntl.h>      /* the stub's shared memory (interop) */
#  include <signal.h>     /* the recorder's writes to a pipe hold SIGPIPE off */
#  include <sys/mman.h>
#  include <sys/stat.h>
/* Valgrind takes the switch to a stub fiber's stack, a heap block, for a stack overflow unless
   told which blocks are stacks (memcheck then reports every access the fiber makes: millions
   of errors burying the program's own). Its requests are a few instructions that do nothing
   outside Valgrind, so they are in wherever its header is. */
#  ifndef GPUFLOW_VALGRIND
#    if defined(__has_include)
#      if __has_include(<valgrind/valgrind.h>)
#        define GPUFLOW_VALGRIND 1
#      endif
#    endif
#  endif
#  if defined(GPUFLOW_VALGRIND) && (GPUFLOW_VALGRIND + 0)
#    include <valgrind/valgrind.h>
#    include <valgrind/drd.h>
#    define GF__VALGRIND_STACKS 1
#  endif
#  if defined(__GLIBC__) && !defined(PTHREAD_BARRIER_SERIAL_THREAD)   /* defined with POSIX 2001's threads */
#    error "gpuflow: the implementation needs POSIX 2008 threads (pthread_condattr_setclock), which <pthread.h>, read before it under strict C, hid: in the file that defines GPUFLOW_IMPLEMENTATION include gpuflow.h before it, or compile with -D_POSIX_C_SOURCE=200809L"
#  endif
#  if !defined(CLOCK_MONOTONIC)
#    error "gpuflow: the implementation needs POSIX 2008 (clock_gettime, CLOCK_MONOTONIC), which <time.h> (or a header that reads it, as <pthread.h> does), read before it under strict C, hid: in the file that defines GPUFLOW_IMPLEMENTATION include gpuflow.h before it, or compile with -D_POSIX_C_SOURCE=200809L"
#  endif
typedef pthread_mutex_t gf__os_mutex;
typedef pthread_cond_t  gf__cond;
typedef pthread_t       gf__thread;
#endif
/* thread-local storage: GF__TLS, defined with the dialect (its shared arrays use it) */

/* Under GPUFLOW_DEBUG a mutex knows the thread that holds it, so that a function's "lock held"
   is an assert (GF__HELD) instead of a comment. A thread is named by the address of a
   thread-local byte. Without it a gf__mutex is the system's, and the checks cost nothing. */
#ifdef GPUFLOW_DEBUG
typedef struct gf__mutex { gf__os_mutex os; void *owner; } gf__mutex;
static GF__TLS char gf__thread_mark;
#  if defined(__GNUC__) || defined(__clang__)
#    define GF__OWNER_SET(m, who) __atomic_store_n(&(m)->owner, (void *)(who), __ATOMIC_RELAXED)
#    define GF__OWNER(m) __atomic_load_n(&(m)->owner, __ATOMIC_RELAXED)
#  else
#    define GF__OWNER_SET(m, who) ((m)->owner = (void *)(who))
#    define GF__OWNER(m) ((m)->owner)
#  endif
#  define GF__OS_MUTEX(m) (&(m)->os)
#  define GF__HELD(m) GPUFLOW_ASSERT(GF__OWNER(m) == (void *)&gf__thread_mark && "the caller holds this lock")
#else
typedef gf__os_mutex gf__mutex;
#  define GF__OWNER_SET(m, who) ((void)0)
#  define GF__OS_MUTEX(m) (m)
#  define GF__HELD(m) ((void)0)
#endif
#define GF__OWNED(m) GF__OWNER_SET((m), &gf__thread_mark)
#define GF__DISOWNED(m) GF__OWNER_SET((m), NULL)

#if defined(_MSC_VER) && !defined(__clang__)
#  include <intrin.h>
#  if defined(_M_X64)   /* an aligned volatile load is atomic here, and an acquire (/volatile:ms) */
#    define gf__atomic_load(p)        (*(volatile long long *)(p))
#    define gf__atomic_load_int(p)    (*(volatile long *)(p))
#    define gf__atomic_load_u32(p)    (*(volatile unsigned *)(p))
#    define gf__counter_add(p, v)     (*(volatile uint64_t *)(p) += (v))
#  else   /* 32-bit x86 loads 64 bits in two halves; ARM64's volatile is a plain load (/volatile:iso) */
#    define gf__atomic_load(p)        ((uint64_t)InterlockedCompareExchange64((volatile long long *)(p), 0, 0))
#    define gf__atomic_load_int(p)    InterlockedCompareExchange((volatile long *)(p), 0, 0)
#    define gf__atomic_load_u32(p)    ((unsigned)InterlockedCompareExchange((volatile long *)(p), 0, 0))
#    define gf__counter_add(p, v)     InterlockedExchangeAdd64((volatile long long *)(p), (long long)(v))
#  endif
#  define gf__atomic_store(p, v)    InterlockedExchange64((volatile long long *)(p), (long long)(v))
#  define gf__atomic_add(p, v)      ((uint64_t)InterlockedExchangeAdd64((volatile long long *)(p), (long long)(v)))
#  define gf__atomic_store_int(p,v) InterlockedExchange((volatile long *)(p), (long)(v))
#  define gf__atomic_add_int(p, v)  ((int)InterlockedExchangeAdd((volatile long *)(p), (long)(v)))
#  define gf__atomic_xchg_int(p, v) ((int)InterlockedExchange((volatile long *)(p), (long)(v)))
#  define gf__atomic_cas(p, expected, desired) \
    (InterlockedCompareExchange64((volatile long long *)(p), (long long)(desired), (long long)(expected)) == (long long)(expected))
static int gf__atomic_cas_u32(unsigned *p, unsigned *expected, unsigned desired) {   /* 1: done; else *expected is the value seen */
    unsigned seen = (unsigned)InterlockedCompareExchange((volatile long *)p, (long)desired, (long)*expected);
    if (seen == *expected) return 1;
    *expected = seen;
    return 0;
}
#else
#  define gf__atomic_load(p)        __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define gf__atomic_store(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#  define gf__atomic_add(p, v)      __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#  define gf__atomic_load_int(p)    __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define gf__atomic_store_int(p,v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#  define gf__atomic_add_int(p, v)  __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#  define gf__atomic_xchg_int(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#  define gf__atomic_cas(p, expected, desired) gf__cas_u64((p), (expected), (desired))
#  define gf__atomic_load_u32(p)    __atomic_load_n((p), __ATOMIC_ACQUIRE)
/* A counter with one writer at a time (the writer holds a lock) and lock-free readers: a plain
   load and a release store, no locked read-modify-write on the hot path. */
#  define gf__counter_add(p, v)     __atomic_store_n((p), __atomic_load_n((p), __ATOMIC_RELAXED) + (v), __ATOMIC_RELEASE)
#  define gf__atomic_cas_u32(p, expected, desired) \
    __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
static int gf__cas_u64(uint64_t *p, uint64_t expected, uint64_t desired) {   /* 1: *p was expected, now desired */
    return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
#endif

/* A 64-bit field that the atomics above update: 8-aligned even where the ABI puts a uint64_t
   on 4 bytes inside a struct (i386 System V), since a locked access that straddles two cache
   lines is a split lock: very slow everywhere, a fault where the kernel refuses them. */
#if defined(__GNUC__) || defined(__clang__)
typedef uint64_t gf__atomic64 __attribute__((aligned(8)));
#else
typedef uint64_t gf__atomic64;   /* MSVC aligns a uint64_t to 8 inside structs */
#endif

/* The library's mutexes this thread holds: what is logged meanwhile waits until it holds none
   (gf__log_text), since a logger may call gpuflow and take one of them. */
static GF__TLS int gf__locks_held, gf__log_held_count;
static void gf__log_release_held(void);
#define GF__LOCKED()   (gf__locks_held++)
#define GF__UNLOCKED() do { if (--gf__locks_held == 0 && gf__log_held_count) gf__log_release_held(); } while (0)
#if defined(_WIN32)
static void gf__mutex_init(gf__mutex *m)    { InitializeCriticalSection(GF__OS_MUTEX(m)); GF__DISOWNED(m); }
static void gf__mutex_destroy(gf__mutex *m) { DeleteCriticalSection(GF__OS_MUTEX(m)); }
static void gf__lock(gf__mutex *m)          { EnterCriticalSection(GF__OS_MUTEX(m)); GF__OWNED(m); GF__LOCKED(); }
static void gf__unlock(gf__mutex *m)        { GF__DISOWNED(m); LeaveCriticalSection(GF__OS_MUTEX(m)); GF__UNLOCKED(); }
static int gf__trylock(gf__mutex *m) {      /* 1: taken; a section this thread holds already counts as busy */
    if (!TryEnterCriticalSection(GF__OS_MUTEX(m))) return 0;
    if (GF__OS_MUTEX(m)->RecursionCount > 1) { LeaveCriticalSection(GF__OS_MUTEX(m)); return 0; }
    GF__OWNED(m); GF__LOCKED();
    return 1;
}
static void gf__cond_init(gf__cond *c)      { InitializeConditionVariable(c); }
static void gf__cond_destroy(gf__cond *c)   { (void)c; }
static void gf__cond_wait(gf__cond *c, gf__mutex *m) {
    GF__DISOWNED(m); SleepConditionVariableCS(c, GF__OS_MUTEX(m), INFINITE); GF__OWNED(m);
}
static void gf__cond_timedwait_us(gf__cond *c, gf__mutex *m, uint64_t us) {
    GF__DISOWNED(m); SleepConditionVariableCS(c, GF__OS_MUTEX(m), (DWORD)((us + 999) / 1000)); GF__OWNED(m);
}
static void gf__cond_broadcast(gf__cond *c) { WakeAllConditionVariable(c); }
typedef struct { void (*fn)(void *); void *arg; } gf__thread_start;
static DWORD WINAPI gf__thread_main(LPVOID p) {
    gf__thread_start st = *(gf__thread_start *)p;
    gf__free(p);
    st.fn(st.arg);
    return 0;
}
static int gf__thread_create(gf__thread *t, void (*fn)(void *), void *arg) {
    gf__thread_start *st = (gf__thread_start *)gf__malloc(sizeof *st);
    if (!st) return 0;
    st->fn = fn; st->arg = arg;
    *t = CreateThread(NULL, 0, gf__thread_main, st, 0, NULL);
    if (!*t) { gf__free(st); return 0; }
    return 1;
}
static void gf__thread_join(gf__thread t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
static uint64_t gf__now_ns(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f); QueryPerformanceCounter(&c);
    return (uint64_t)((double)c.QuadPart * 1e9 / (double)f.QuadPart);
}
/* Sleep() rounds up to the system timer's tick (15.6 ms unless a process asked for finer), so a
   poll's 20 us nap became 15 ms: a high-resolution waitable timer where Windows has one (10,
   1803 and later), Sleep where it has not. */
#ifndef CREATE_WAITABLE_TIMER_HIGH_RESOLUTION
#  define CREATE_WAITABLE_TIMER_HIGH_RESOLUTION 0x00000002
#endif
static void gf__sleep_us(unsigned us) {
    HANDLE timer = CreateWaitableTimerExW(NULL, NULL, CREATE_WAITABLE_TIMER_HIGH_RESOLUTION, TIMER_ALL_ACCESS);
    LARGE_INTEGER due;
    due.QuadPart = -(LONGLONG)us * 10;   /* relative, in 100 ns */
    if (timer && SetWaitableTimer(timer, &due, 0, NULL, NULL, FALSE)) WaitForSingleObject(timer, INFINITE);
    else Sleep((us + 999) / 1000);
    if (timer) CloseHandle(timer);
}
static void gf__yield(void) { SwitchToThread(); }
#else
static void gf__mutex_init(gf__mutex *m)    { pthread_mutex_init(GF__OS_MUTEX(m), NULL); GF__DISOWNED(m); }
static void gf__mutex_destroy(gf__mutex *m) { pthread_mutex_destroy(GF__OS_MUTEX(m)); }
static void gf__lock(gf__mutex *m)          { pthread_mutex_lock(GF__OS_MUTEX(m)); GF__OWNED(m); GF__LOCKED(); }
static void gf__unlock(gf__mutex *m)        { GF__DISOWNED(m); pthread_mutex_unlock(GF__OS_MUTEX(m)); GF__UNLOCKED(); }
static int gf__trylock(gf__mutex *m) {      /* 1: taken */
    if (pthread_mutex_trylock(GF__OS_MUTEX(m)) != 0) return 0;
    GF__OWNED(m); GF__LOCKED();
    return 1;
}
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
static void gf__cond_wait(gf__cond *c, gf__mutex *m) { GF__DISOWNED(m); pthread_cond_wait(c, GF__OS_MUTEX(m)); GF__OWNED(m); }
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
    GF__DISOWNED(m);
    pthread_cond_timedwait(c, GF__OS_MUTEX(m), &ts);
    GF__OWNED(m);
}
static void gf__cond_broadcast(gf__cond *c) { pthread_cond_broadcast(c); }
typedef struct { void (*fn)(void *); void *arg; } gf__thread_start;
static void *gf__thread_main(void *p) {
    gf__thread_start st = *(gf__thread_start *)p;
    gf__free(p);
    st.fn(st.arg);
    return NULL;
}
static int gf__thread_create(gf__thread *t, void (*fn)(void *), void *arg) {
    gf__thread_start *st = (gf__thread_start *)gf__malloc(sizeof *st);
    if (!st) return 0;
    st->fn = fn; st->arg = arg;
    if (pthread_create(t, NULL, gf__thread_main, st) != 0) { gf__free(st); return 0; }
    return 1;
}
static void gf__thread_join(gf__thread t) { pthread_join(t, NULL); }
static uint64_t gf__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static void gf__yield(void) { sched_yield(); }
static void gf__sleep_us(unsigned us) {
    struct timespec ts;
    ts.tv_sec = (time_t)(us / 1000000u);
    ts.tv_nsec = (long)(us % 1000000u) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}
#endif

/* Process-wide locks that need no initialization call: driver loading and backend tables
   (gf__driver_lock), the logger (gf__log_lock). */
#if defined(_WIN32)
static SRWLOCK gf__driver_lock = SRWLOCK_INIT, gf__log_lock = SRWLOCK_INIT;
static void gf__driver_lock_acquire(void) { AcquireSRWLockExclusive(&gf__driver_lock); }
static void gf__driver_lock_release(void) { ReleaseSRWLockExclusive(&gf__driver_lock); }
static void gf__log_lock_acquire(void)    { AcquireSRWLockExclusive(&gf__log_lock); }
static void gf__log_lock_release(void)    { ReleaseSRWLockExclusive(&gf__log_lock); }
#else
static pthread_mutex_t gf__driver_lock = PTHREAD_MUTEX_INITIALIZER, gf__log_lock = PTHREAD_MUTEX_INITIALIZER;
static void gf__driver_lock_acquire(void) { pthread_mutex_lock(&gf__driver_lock); }
static void gf__driver_lock_release(void) { pthread_mutex_unlock(&gf__driver_lock); }
static void gf__log_lock_acquire(void)    { pthread_mutex_lock(&gf__log_lock); }
static void gf__log_lock_release(void)    { pthread_mutex_unlock(&gf__log_lock); }
#endif

/* ---- errors and the logger ---------------------------------------------------------- >>errors */
/* Every failure sets this thread's detail text and goes to the process-wide logger. Success
   never touches the text, so gf_last_error() keeps describing the last failure. */
static GF__TLS char gf__error_text[1024];
static GF__TLS unsigned gf__error_serial;   /* bumped by every failure on this thread */
static GF__TLS int gf__quiet;                /* > 0: a failure the caller may still recover from is not logged */
static gf_log_fn gf__log_fn;
static void *gf__log_user;
static unsigned gf__log_generation;           /* bumped by each waiting gf_set_logger (under the log lock) */
static int gf__log_calls[2];                  /* atomic: calls into a logger in progress, by generation's parity */
static int gf__log_swapping;                  /* atomic: a gf_set_logger waits for the replaced logger's calls */
static GF__TLS int gf__in_logger;             /* this thread runs the logger */
#if !defined(_WIN32)
static void gf__fork_hooks(void);             /* >>deadlocks: the log's state is made right in a fork's child */
#endif

/* Returns once the calls of the logger replaced have returned on other threads, so that the
   program may free what its user pointer points to. One such swap at a time, so that the slot
   it waits on counts the replaced logger's calls alone (never a later logger's). From a
   logger's own call it cannot wait (the swap it would wait for may be waiting for this call):
   it replaces the logger in the current generation. */
GPUFLOW_IMPL void gf_set_logger(gf_log_fn fn, void *user) {
    unsigned old;
    int wait = !gf__in_logger;
#if !defined(_WIN32)
    gf__fork_hooks();
#endif
    if (wait) while (gf__atomic_xchg_int(&gf__log_swapping, 1)) gf__yield();
    gf__log_lock_acquire();
    old = wait ? gf__log_generation++ : gf__log_generation;
    gf__log_fn = fn;
    gf__log_user = user;
    gf__log_lock_release();
    if (!wait) return;
    while (gf__atomic_load_int(&gf__log_calls[old & 1])) gf__yield();
    gf__atomic_store_int(&gf__log_swapping, 0);
}

/* With no logger installed, messages up to GPUFLOW_LOG's level go to stderr, one line each,
   "gpuflow: <text>". GPUFLOW_LOG=error|warning|info|off; unset, it is off, or warning while a
   debugging switch is on (GPUFLOW_RACE_CHECK, _HANG_MS, _SYNC_DEBUG, _SYNC, _FAULTS, _RECORD), info with
   GPUFLOW_STATS or GPUFLOW_TRACE (what they print is info): a vendored library says nothing
   unless asked, and a switch the user turned on is heard (a variable it cannot follow always is:
   gf__env_warn). Read once. */
static int gf__stderr_level = -2;   /* atomic; -2: not read yet, -1: off, else the last level printed */
/* The environment's variables that gpuflow reads; any other GPUFLOW_* is named in a warning
   (a misspelt switch would otherwise stay silently off). */
static const char *const gf__env_known[] = {
    "GPUFLOW_BACKEND", "GPUFLOW_CACHE_DIR", "GPUFLOW_CACHE_LIMIT", "GPUFLOW_FAULTS", "GPUFLOW_HANG_MS", "GPUFLOW_LOG", "GPUFLOW_OPENCL_PLATFORM",
    "GPUFLOW_RACE_CHECK", "GPUFLOW_RECORD", "GPUFLOW_RECORD_LIMIT", "GPUFLOW_STATS", "GPUFLOW_STUB_DEVICES", "GPUFLOW_STUB_THREADS", "GPUFLOW_SYNC", "GPUFLOW_SYNC_DEBUG", "GPUFLOW_TRACE", NULL
};
#if defined(_WIN32)
#  define gf__environ _environ   /* the C runtime's (MSVCRT and UCRT declare it in <stdlib.h>) */
#else
#  if !defined(__USE_GNU)   /* glibc's <unistd.h> declares it under _GNU_SOURCE */
extern char **environ;
#  endif
#  define gf__environ environ
#endif
/* The next GPUFLOW_* variable of the environment gpuflow does not read, from *at on: its name
   (*n characters), or NULL. */
static const char *gf__env_next_unknown(int *at, size_t *n) {
    for (; gf__environ && gf__environ[*at]; (*at)++) {
        const char *e = gf__environ[*at], *eq = strchr(e, '=');
        int i, known = 0;
        if (strncmp(e, "GPUFLOW_", 8)) continue;
        *n = eq ? (size_t)(eq - e) : strlen(e);
        for (i = 0; gf__env_known[i] && !known; i++) known = strlen(gf__env_known[i]) == *n && !strncmp(e, gf__env_known[i], *n);
        if (!known) { (*at)++; return e; }
    }
    return NULL;
}
static int gf__switch_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") && strcmp(v, "off") && strcmp(v, "no") && strcmp(v, "false");
}
static int gf__stderr_level_now(void) {
    static const char *const names[] = { "error", "warning", "info" };
    const char *v;
    int level = gf__atomic_load_int(&gf__stderr_level), i;
    if (level != -2) return level;
    v = getenv("GPUFLOW_LOG");
    level = gf__switch_on("GPUFLOW_STATS") || gf__switch_on("GPUFLOW_TRACE") ? (int)GF_LOG_INFO   /* what they print is info */
          : gf__switch_on("GPUFLOW_RACE_CHECK") || gf__switch_on("GPUFLOW_HANG_MS") || gf__switch_on("GPUFLOW_SYNC_DEBUG") ||
            gf__switch_on("GPUFLOW_SYNC") || gf__switch_on("GPUFLOW_FAULTS") || gf__switch_on("GPUFLOW_RECORD") ? (int)GF_LOG_WARNING : -1;
    if (v && *v) {
        for (i = 0; i < 3 && strcmp(v, names[i]); i++) {}
        if (i < 3) level = i;
        else if (!strcmp(v, "off")) level = -1;
        else fprintf(stderr, "gpuflow: GPUFLOW_LOG=%s: expected error, warning, info or off; it is ignored\n", v);
    }
    gf__atomic_store_int(&gf__stderr_level, level);
    return level;
}

/* Messages logged while this thread held a mutex of the library's, told once it holds none
   (the last GF__LOG_HELD of them; older ones are counted and said). */
#define GF__LOG_HELD 4
typedef struct gf__held_message { gf_log_level level; gf_result code; char text[sizeof gf__error_text]; } gf__held_message;
static GF__TLS gf__held_message gf__log_held[GF__LOG_HELD];
static GF__TLS int gf__log_held_dropped;   /* gf__log_held_count: beside gf__locks_held */
static void gf__log_text(gf_log_level level, gf_result code, const char *text) {
    gf_log_fn fn;
    void *user;
    int *calls = NULL;
    gf__log_lock_acquire();
    fn = gf__log_fn;
    user = gf__log_user;
    if (fn && !gf__in_logger && gf__locks_held <= 0) {   /* a call, counted before gf_set_logger can replace fn */
        calls = &gf__log_calls[gf__log_generation & 1];
        gf__atomic_add_int(calls, 1);
    }
    gf__log_lock_release();
    if (fn && gf__in_logger) return;   /* the logger's own calls: told to it, it could call itself for ever */
    if (fn && gf__locks_held > 0) {   /* the logger may take the very lock this thread holds */
        gf__held_message *m;
        if (gf__log_held_count == GF__LOG_HELD) {
            memmove(gf__log_held, gf__log_held + 1, (GF__LOG_HELD - 1) * sizeof *gf__log_held);
            gf__log_held_count--;
            gf__log_held_dropped++;
        }
        m = &gf__log_held[gf__log_held_count++];
        m->level = level; m->code = code;
        snprintf(m->text, sizeof m->text, "%s", text);
        return;
    }
    if (calls) {   /* outside the lock: a logger may call gpuflow, and the failure it hears of keeps its text */
        char saved[sizeof gf__error_text];
        memcpy(saved, gf__error_text, sizeof saved);
        gf__in_logger++;
        fn(user, level, code, text);
        gf__in_logger--;
        gf__atomic_add_int(calls, -1);
        memcpy(gf__error_text, saved, sizeof saved);
    } else if ((int)level <= gf__stderr_level_now()) fprintf(stderr, "%s%s\n", strncmp(text, "gpuflow:", 8) ? "gpuflow: " : "", text);
}

/* Each held message is told with gf_last_error() giving its text meanwhile (as when it was
   logged), the call's own text back afterwards. */
static void gf__log_release_held(void) {
    int i, n = gf__log_held_count, dropped = gf__log_held_dropped;
    gf__held_message held[GF__LOG_HELD];
    char current[sizeof gf__error_text];
    if (!n) return;
    memcpy(held, gf__log_held, (size_t)n * sizeof *held);   /* the logger's own calls may hold more */
    gf__log_held_count = gf__log_held_dropped = 0;
    memcpy(current, gf__error_text, sizeof current);
    if (dropped) {
        char text[96];
        snprintf(text, sizeof text, "gpuflow: %d earlier message%s of this call left out", dropped, dropped == 1 ? "" : "s");
        gf__log_text(GF_LOG_WARNING, GF_OK, text);
    }
    for (i = 0; i < n; i++) {   /* the text passed is the copy: the logger's own failures change gf__error_text */
        memcpy(gf__error_text, held[i].text, sizeof gf__error_text);
        gf__log_text(held[i].level, held[i].code, held[i].text);
    }
    memcpy(gf__error_text, current, sizeof current);
}

static gf_log_level gf__level_of(gf_result code) {
    return code < 0 ? GF_LOG_ERROR : code == GF_TIMEOUT ? GF_LOG_WARNING : GF_LOG_INFO;
}

#if defined(__GNUC__)
#  define GF__PRINTF(f, a) __attribute__((format(printf, f, a)))
#  define GF__NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#  define GF__PRINTF(f, a)
#  define GF__NOINLINE __declspec(noinline)
#else
#  define GF__PRINTF(f, a)
#  define GF__NOINLINE
#endif

/* Sets this thread's detail message and logs it. Failures read `return gf__fail(code, ...)`:
   the macro's value is code itself, so every reader (and the static analyzer, which does not
   follow variadic calls) sees that a failure path returns its failure. */
static void gf__set_error(gf_result code, const char *fmt, ...) GF__PRINTF(2, 3);
/* A driver entry GPUFLOW_FAULTS failed on this thread (its name, then why): the failure that
   follows says so if its message begins with the entry's name (the backend's words); the next
   failure, whatever it is, ends the note. */
static GF__TLS char gf__fault_told[2][160];
static void gf__set_error(gf_result code, const char *fmt, ...) {
    char text[sizeof gf__error_text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);   /* the arguments may read gf__error_text itself */
    va_end(ap);
    if (gf__fault_told[0][0]) {
        size_t n = strlen(gf__fault_told[0]);
        if (!strncmp(text, gf__fault_told[0], n) && (text[n] == ':' || text[n] == '(' || text[n] == ' ')) {
            n = strlen(text);
            snprintf(text + n, sizeof text - n, ": %s", gf__fault_told[1]);
        }
        gf__fault_told[0][0] = 0;
    }
    memcpy(gf__error_text, text, sizeof text);
    gf__error_serial++;
    if (!gf__quiet) gf__log_text(gf__level_of(code), code, text);
}
#define gf__fail(code, ...) (gf__set_error((code), __VA_ARGS__), (code))

/* A user function (flow task, capture function) returned r: fail with what (a context
   prefix) and the function's own message, or say that it gave none. serial: gf__error_serial
   before the call. */
static gf_result gf__fail_user(gf_result r, unsigned serial, const char *what) {
    if (r >= 0) r = GF_ERROR_INVALID_STATE;   /* only failures reach here; a positive code is no answer */
    if (gf__error_serial == serial)
        return gf__fail(r, "%s returned %s without a message", what, gf_result_name(r));
    return gf__fail(r, "%s failed: %s", what, gf__error_text);
}

/* Around a step whose failure the caller recovers from and tells in its own words (AUTO trying
   each backend, a flow tried as a graph, an environment variable's setting): its failure is not
   logged, and this thread's last error is what it was before (a success leaves it alone). */
typedef struct gf__error_keep { char text[sizeof gf__error_text]; unsigned serial; } gf__error_keep;
static void gf__error_keep_begin(gf__error_keep *k) {
    memcpy(k->text, gf__error_text, sizeof k->text);
    k->serial = gf__error_serial;
    gf__quiet++;
}
static void gf__error_keep_end(const gf__error_keep *k, char *why) {   /* why: the step's failure text, or NULL */
    gf__quiet--;
    if (why) memcpy(why, gf__error_text, sizeof gf__error_text);
    memcpy(gf__error_text, k->text, sizeof k->text);
    gf__error_serial = k->serial;
}

/* A notice: logged, never stored as an error (AUTO passing a backend over, a priority the
   hardware ignores, ...). */
static void gf__notice(gf_log_level level, const char *fmt, ...) GF__PRINTF(2, 3);
static void gf__notice(gf_log_level level, const char *fmt, ...) {
    char text[sizeof gf__error_text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    gf__log_text(level, GF_OK, text);
}
/* A GPUFLOW_* variable gpuflow cannot follow (a misspelt name, a value not understood): a
   warning heard even when GPUFLOW_LOG is unset and no debugging switch is on, since the
   user asked for something that is not happening. GPUFLOW_LOG=error or off keeps it quiet. */
static void gf__env_warn(const char *fmt, ...) GF__PRINTF(1, 2);
static void gf__env_warn(const char *fmt, ...) {
    char text[sizeof gf__error_text];
    const char *log = getenv("GPUFLOW_LOG");
    int logger;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    gf__log_lock_acquire();
    logger = gf__log_fn != NULL;
    gf__log_lock_release();
    if (!logger && !(log && (!strcmp(log, "error") || !strcmp(log, "off"))) && gf__stderr_level_now() < (int)GF_LOG_WARNING)
        fprintf(stderr, "%s\n", text);   /* also under a GPUFLOW_LOG value not understood (named, and ignored) */
    else gf__log_text(GF_LOG_WARNING, GF_OK, text);
}

/* Test builds only (GPUFLOW_FAULT_INJECTION): the program defines gpuflow_fault_hit, and a
   backend asks it before each native entry point (GF__FAULT("cuMemAlloc")): nonzero makes that
   call fail as the driver would, so every failure path can be driven from a test. */
#ifdef GPUFLOW_FAULT_INJECTION
int gpuflow_fault_hit(const char *entry);
#  define GF__FAULT(entry) gpuflow_fault_hit(entry)
#else   /* faults on demand (>>faults): a rule naming the entry */
static int gf__fault_entry(const char *entry);
#  define GF__FAULT(entry) (gf__atomic_load_int(&gf__faults_armed) && gf__fault_entry(entry))
#endif

/* ---- host memory, strings, growable arrays, spin locks ---------------------------- >>utils */
/* Process-wide, like the macros: set it before the first gpuflow call (or while no gpuflow
   object is alive), since memory must go back to the allocator that gave it. */
GPUFLOW_IMPL void gf_set_allocator(const gf_allocator *allocator) {
    if (allocator && (!allocator->alloc || !allocator->realloc || !allocator->free)) {
        gf__set_error(GF_ERROR_INVALID_ARGUMENT, "gf_set_allocator: alloc, realloc and free are all required; the allocator is unchanged");
        return;
    }
    if (allocator) gf__allocator = *allocator;
    else memset(&gf__allocator, 0, sizeof gf__allocator);
}

static void *gf__calloc(size_t bytes) {   /* zeroed, as calloc */
    void *p = gf__malloc(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}
static char *gf__strdup(const char *t) {   /* a copy the caller frees; NULL for NULL or out of memory */
    size_t n;
    char *copy;
    if (!t) return NULL;
    n = strlen(t) + 1;
    if ((copy = (char *)gf__malloc(n)) != NULL) memcpy(copy, t, n);
    return copy;
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
    if (need > INT_MAX / 2 || (size_t)need > SIZE_MAX / 2 / elem) return 0;   /* doubling past INT_MAX wrapped, for ever */
    n = *cap ? *cap * 2 : 8;
    while (n < need) n *= 2;
    p = gf__realloc(*items, (size_t)n * elem);
    if (!p) return 0;
    *items = p; *cap = n;
    return 1;
}

/* Open addressing with linear probing (the recorder's map of objects, the waiter's index): when
   a slot empties, the entry at `at`, whose hash puts it at `home`, moves back into the hole if
   the hole lies on its way from home (else a lookup would stop at the hole and miss it). */
static int gf__probe_moves_back(size_t hole, size_t at, size_t home, size_t mask) { return ((at - home) & mask) >= ((at - hole) & mask); }

/* Fields that different threads write go this far apart, so that no cache line holds two. */
#define GF__CACHE_LINE 64

/* A lock around a few instructions (an event pool's shelves and lists): one atomic exchange to take,
   one store to give, where a mutex costs two atomic operations and two calls. */
typedef int gf__spin;
static void gf__spin_lock(gf__spin *l) {
    while (gf__atomic_xchg_int(l, 1)) while (gf__atomic_load_int(l)) gf__yield();
}
static void gf__spin_unlock(gf__spin *l) { gf__atomic_store_int(l, 0); }

/* ---- paths and files: every file gpuflow opens goes through here ----------------- >>files */
/* Paths are UTF-8 on every platform. Windows: through the wide file functions, so that any
   name works (the narrow ones read the ANSI code page, where most of Unicode is '?'), and a
   path whose absolute form nears MAX_PATH takes the \\?\ prefix, which lifts that limit.
   Bytes that are not UTF-8 are read in the ANSI code page, as the narrow functions did. */
#if defined(_WIN32)
#  include <io.h>
#  include <direct.h>
#  include <share.h>   /* the recorder's _wsopen_s */
#  include <fcntl.h>
#  include <sys/stat.h>
#  include <sys/utime.h>
#  include <wchar.h>
typedef struct _stat64 gf__stat_t;
typedef void (*gf__dir_fn)(void *user, const char *name, uint64_t bytes, int64_t age);
#  ifndef S_ISDIR
#    define S_ISDIR(m) (((m) & _S_IFMT) == _S_IFDIR)
#  endif
#  ifndef S_ISREG
#    define S_ISREG(m) (((m) & _S_IFMT) == _S_IFREG)
#  endif
#  define GF__O_CACHE_READ  (_O_RDONLY | _O_BINARY)
#  define GF__O_CACHE_NEW   (_O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY)
#  define gf__fstat(fd, st) _fstat64((fd), (st))
#  define gf__fd_read(fd, b, n) _read((fd), (b), (unsigned)(n))
#  define gf__fd_write(fd, b, n) _write((fd), (b), (unsigned)(n))
#  define gf__fd_close(fd) _close(fd)
#  define gf__getpid() ((unsigned long)GetCurrentProcessId())
#  define GF__WSEP(c) ((c) == L'\\' || (c) == L'/')
/* path as the wide string the file functions take (the caller frees it); NULL with errno set:
   ENOMEM, or EINVAL for bytes no code page reads. */
static wchar_t *gf__path_wide(const char *path) {
    UINT page = CP_UTF8;
    DWORD flags = MB_ERR_INVALID_CHARS, need, got = 0;
    int n = MultiByteToWideChar(page, flags, path, -1, NULL, 0), tries;
    wchar_t *w, *full = NULL, *out;
    if (n <= 0) { page = CP_ACP; flags = 0; n = MultiByteToWideChar(page, flags, path, -1, NULL, 0); }
    if (n <= 0) { errno = EINVAL; return NULL; }
    if (!(w = (wchar_t *)gf__malloc((size_t)n * sizeof *w))) { errno = ENOMEM; return NULL; }
    MultiByteToWideChar(page, flags, path, -1, w, n);
    /* \\?\ and \\.\ (either slash): the program's own verbatim or device form, as it is */
    if (GF__WSEP(w[0]) && GF__WSEP(w[1]) && (w[2] == L'?' || w[2] == L'.') && GF__WSEP(w[3])) return w;
    /* The absolute form decides (a short relative path under a long current directory is long):
       248 characters and more (MAX_PATH less an 8.3 name, CreateDirectory's limit) take the
       prefix. The size is asked for again if another thread's chdir made the path longer. */
    for (tries = 0; tries < 3; tries++) {
        if ((need = GetFullPathNameW(w, 0, NULL, NULL)) == 0) break;
        gf__free(full);
        if (!(full = (wchar_t *)gf__malloc(need * sizeof *full))) { gf__free(w); errno = ENOMEM; return NULL; }
        if ((got = GetFullPathNameW(w, need, full, NULL)) != 0 && got < need) break;
    }
    if (!full || got == 0 || got >= need || got < MAX_PATH - 12) { gf__free(full); return w; }
    gf__free(w);
    if (!(out = (wchar_t *)gf__malloc((got + 8) * sizeof *out))) { gf__free(full); errno = ENOMEM; return NULL; }
    if (full[0] == L'\\' && full[1] == L'\\') {   /* \\server\share\... is \\?\UNC\server\share\... */
        wcscpy(out, L"\\\\?\\UNC");
        wcscat(out, full + 1);
    } else {
        wcscpy(out, L"\\\\?\\");
        wcscat(out, full);
    }
    gf__free(full);
    return out;
}
/* The end of a path's root: what no mkdir makes (X:\, \\server\share\, \\?\X:\, \\?\UNC\server\share\, \). */
static size_t gf__wpath_root(const wchar_t *w) {
    size_t i = 0;
    int parts = 0;
    if (GF__WSEP(w[0]) && GF__WSEP(w[1])) {   /* \\?\..., \\.\..., \\server\share */
        i = 2;
        if ((w[2] == L'?' || w[2] == L'.') && GF__WSEP(w[3])) {
            i = 4;
            if (!wcsncmp(w + 4, L"UNC", 3) && GF__WSEP(w[7])) i = 8;   /* then server and share */
            else { if (w[i] && w[i + 1] == L':') i += 2; return GF__WSEP(w[i]) ? i + 1 : i; }
        }
        for (; w[i] && parts < 2; i++) if (GF__WSEP(w[i])) parts++;   /* past server\ and share\ */
        return i;
    }
    if (w[0] && w[1] == L':') return GF__WSEP(w[2]) ? 3 : 2;
    return GF__WSEP(w[0]) ? 1 : 0;
}
static int gf__stat(const char *path, gf__stat_t *st) {
    wchar_t *w = gf__path_wide(path);
    size_t n = w ? wcslen(w) : 0, root = w ? gf__wpath_root(w) : 0;
    int r;
    while (n > root && n > 1 && GF__WSEP(w[n - 1])) w[--n] = 0;   /* msvcrt's stat refuses "dir\" */
    r = w ? _wstat64(w, st) : -1;
    gf__free(w);
    return r;
}
/* Each missing level of dir made, as mkdir -p (the path widened once: its levels read alike). */
static int gf__mkdir_parents(const char *dir) {
    wchar_t *w = gf__path_wide(dir);
    struct _stat64 st;
    size_t i, root;
    int made = w != NULL;
    if (!w) return 0;
    root = gf__wpath_root(w);
    for (i = root + 1; made && i <= wcslen(w); i++)
        if (!w[i] || GF__WSEP(w[i])) {
            wchar_t c = w[i];
            w[i] = 0;
            if (_wstat64(w, &st) != 0 && (GF__FAULT("mkdir") || (_wmkdir(w) != 0 && errno != EEXIST))) made = 0;
            w[i] = c;
        }
    gf__free(w);
    return made;
}
static FILE *gf__fopen(const char *path, const char *mode) {   /* mode: a few ASCII letters */
    wchar_t *w = gf__path_wide(path), wmode[8];
    FILE *f = NULL;
    int i;
    for (i = 0; mode[i] && i < 7; i++) wmode[i] = (wchar_t)mode[i];
    wmode[i] = 0;
    if (w) f = _wfopen(w, wmode);
    gf__free(w);
    return f;
}
static int gf__fd_open(const char *path, int flags, int mode) {
    wchar_t *w = gf__path_wide(path);
    int fd = w ? _wopen(w, flags, mode) : -1;
    gf__free(w);
    return fd;
}
static int gf__remove(const char *path) {
    wchar_t *w = gf__path_wide(path);
    int r = w ? _wremove(w) : -1;
    gf__free(w);
    return r;
}
/* A path from the environment, as UTF-8 the caller frees; NULL when unset (or out of memory).
   Windows: read wide (getenv's ANSI copy has '?' for what the code page lacks). */
static char *gf__env_path(const char *name) {
    wchar_t wname[64], *w;
    char *path = NULL;
    DWORD n;
    int i, bytes;
    for (i = 0; name[i] && i < 63; i++) wname[i] = (wchar_t)name[i];
    wname[i] = 0;
    if ((n = GetEnvironmentVariableW(wname, NULL, 0)) == 0 || !(w = (wchar_t *)gf__malloc(n * sizeof *w))) return NULL;
    if (GetEnvironmentVariableW(wname, w, n) < n && (bytes = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL)) > 0 &&
        (path = (char *)gf__malloc((size_t)bytes)) != NULL)
        WideCharToMultiByte(CP_UTF8, 0, w, -1, path, bytes, NULL, NULL);
    gf__free(w);
    return path;
}
/* rename(), over an entry already there (Windows' rename refuses an existing name) */
static int gf__rename_over(const char *from, const char *to) {
    wchar_t *wf = gf__path_wide(from), *wt = wf ? gf__path_wide(to) : NULL;
    int r = wt && MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING) ? 0 : -1;
    gf__free(wf); gf__free(wt);
    return r;
}
static int gf__fd_touch(int fd, const char *path) {   /* by name: _futime wants a file open for writing */
    wchar_t *w = gf__path_wide(path);
    int r = w ? _wutime64(w, NULL) : -1;
    (void)fd;
    gf__free(w);
    return r;
}
static int gf__dir_each(const char *dir, const char *prefix, gf__dir_fn fn, void *user) {
    size_t n = strlen(dir) + strlen(prefix) + 3;
    char *pattern = (char *)gf__malloc(n), name[MAX_PATH * 3];   /* a UTF-8 character for each UTF-16 unit: 3 bytes at most */
    wchar_t *w = NULL;
    WIN32_FIND_DATAW found;
    HANDLE h = INVALID_HANDLE_VALUE;
    FILETIME now;
    uint64_t now_s;
    if (pattern) { snprintf(pattern, n, "%s/%s*", dir, prefix); w = gf__path_wide(pattern); }
    if (w) h = FindFirstFileW(w, &found);
    gf__free(pattern); gf__free(w);
    if (h == INVALID_HANDLE_VALUE) return w && GetLastError() == ERROR_FILE_NOT_FOUND;
    GetSystemTimeAsFileTime(&now);
    now_s = (((uint64_t)now.dwHighDateTime << 32) | now.dwLowDateTime) / 10000000u;
    do {
        uint64_t written = (((uint64_t)found.ftLastWriteTime.dwHighDateTime << 32) | found.ftLastWriteTime.dwLowDateTime) / 10000000u;
        if (found.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT)) continue;
        if (WideCharToMultiByte(CP_UTF8, 0, found.cFileName, -1, name, (int)sizeof name, NULL, NULL) > 0)
            fn(user, name, ((uint64_t)found.nFileSizeHigh << 32) | found.nFileSizeLow, (int64_t)now_s - (int64_t)written);
    } while (FindNextFileW(h, &found));
    FindClose(h);
    return 1;
}
#else
#  include <fcntl.h>
#  include <sys/stat.h>
#  include <unistd.h>
#  include <dirent.h>
#  ifndef O_NOFOLLOW
#    error "gpuflow: the kernel cache needs POSIX 2008 (O_NOFOLLOW), which <fcntl.h>, read before it under strict C, hid: in the file that defines GPUFLOW_IMPLEMENTATION include gpuflow.h before <fcntl.h>, or compile with -D_POSIX_C_SOURCE=200809L"
#  endif
#  ifndef O_CLOEXEC
#    define O_CLOEXEC 0
#  endif
typedef struct stat gf__stat_t;
/* O_NONBLOCK: opening a FIFO planted under an entry's name must not wait for a writer */
#  define GF__O_CACHE_READ  (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
#  define GF__O_CACHE_NEW   (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
#  define gf__stat(p, st) stat((p), (st))
#  define gf__fstat(fd, st) fstat((fd), (st))
/* Every descriptor gpuflow keeps is above 2: with stderr closed, open() gives 2, and the
   stderr logger would write into the file (found by review: log lines inside a recording). */
static int gf__fd_high(int fd) {
    int high, e;
    if (fd < 0 || fd > 2) return fd;
    high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    e = errno;
    close(fd);
    errno = e;
    return high;
}
static int gf__fd_dup(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 3); }
#  define gf__fd_open(p, f, m) gf__fd_high(open((p), (f), (m)))
#  if !defined(__cplusplus)   /* POSIX's, which a <stdio.h> read before the implementation under strict C did not declare */
extern FILE *fdopen(int fd, const char *mode);
#  endif
static FILE *gf__fopen(const char *path, const char *mode) {   /* the modes used: r, rb, r+b, w, wb */
    int flags = mode[0] != 'r' ? O_WRONLY | O_CREAT | O_TRUNC : strchr(mode, '+') ? O_RDWR : O_RDONLY;
    int fd = gf__fd_open(path, flags | O_CLOEXEC, 0666), e;
    FILE *f = fd < 0 ? NULL : fdopen(fd, mode);
    if (fd >= 0 && !f) { e = errno; close(fd); errno = e; }
    return f;
}
#  define gf__fd_read(fd, b, n) read((fd), (b), (n))
#  define gf__fd_write(fd, b, n) write((fd), (b), (n))
#  define gf__fd_close(fd) close(fd)
#  define gf__remove(p) remove(p)
#  define gf__rename_over(from, to) rename((from), (to))
#  define gf__env_path(name) gf__strdup(getenv(name))
#  define gf__getpid() ((unsigned long)getpid())
#  define gf__fd_touch(fd, path) ((void)(path), futimens((fd), NULL))
typedef void (*gf__dir_fn)(void *user, const char *name, uint64_t bytes, int64_t age);
static int gf__dir_each(const char *dir, const char *prefix, gf__dir_fn fn, void *user) {
    DIR *d = opendir(dir);
    struct dirent *e;
    struct stat st;
    time_t now = time(NULL);
    size_t k = strlen(prefix);
    int failed;
    if (!d) return 0;
    for (;;) {   /* readdir ends with NULL either way: errno tells a failure (a 32-bit build's offsets, say) from the end */
        errno = 0;
        if (!(e = readdir(d))) break;
        if (!strncmp(e->d_name, prefix, k) && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            fn(user, e->d_name, (uint64_t)st.st_size, (int64_t)(now - st.st_mtime));
    }
    failed = errno != 0;
    closedir(d);
    return !failed;
}
/* Each missing level of dir made, as mkdir -p; one that another process makes meanwhile is made. */
static int gf__mkdir_parents(const char *dir) {
    size_t n = strlen(dir), i;
    char *p = (char *)gf__malloc(n + 1);
    struct stat st;
    int made = p != NULL;
    if (!p) return 0;
    memcpy(p, dir, n + 1);
    for (i = 1; made && i <= n; i++)
        if (p[i] == '/' || p[i] == 0) {
            char c = p[i];
            p[i] = 0;
            if (stat(p, &st) != 0 && (GF__FAULT("mkdir") || (mkdir(p, 0700) != 0 && errno != EEXIST))) made = 0;
            p[i] = c;
        }
    gf__free(p);
    return made;
}
#endif
/* gf__dir_each(dir, prefix, fn, user): fn for each regular file of dir whose name starts with
   prefix (UTF-8), with its size and age (seconds since it was written); 0: dir cannot be read.
   gf__fd_touch(fd, path): the open file's time set to now (path: the same file).
   gf__mkdir_parents(dir): each missing level made, as mkdir -p; 0 if one cannot be. */

/* ---- objects ----------------------------------------------------------------------- >>objects */
/* Every object starts with a type tag, so a handle of the wrong type is refused instead of
   misused. A destroyed object's tag is cleared before it is freed, which catches some stale
   handles, but reading freed memory is no check: only graphs, whose memory the device keeps
   and recycles, are refused reliably once destroyed (until a new graph reuses the shell). */
typedef enum gf__type {
    GF__T_DEAD = 0, GF__T_PENDING = 1 /* a graph still being captured */, GF__T_DEVICE = 0x67660001, GF__T_BUFFER, GF__T_STREAM, GF__T_EVENT,
    GF__T_EVENT_POOL, GF__T_STREAM_POOL, GF__T_STREAM_SET, GF__T_FLOW, GF__T_GRAPH,
    GF__T_MODULE, GF__T_KERNEL, GF__T_GRAPH_POOL, GF__T_SEMAPHORE, GF__T_BUDGET
} gf__type;

typedef struct gf__backend gf__backend;
struct gf__text;
/* What a run-time compile produced: the gf_module_desc field it goes in. */
typedef struct gf__pinned { void *ptr; size_t bytes; } gf__pinned;   /* a gf_host_alloc allocation */
typedef struct gf__capture gf__capture;
typedef struct gf__profiler gf__profiler;
typedef struct gf__waiter gf__waiter;
typedef struct gf__completion gf__completion;
typedef struct gf__block { size_t capacity; gf_buffer *buf; gf_event *freed; uint64_t stream_id; } gf__block;
#define GF__CACHE_BINS 256          /* by capacity: four bins for each power of two */
typedef struct gf__cache_bin { gf__block *blocks; int count, cap; } gf__cache_bin;
typedef struct gf__alloc_cache {
    gf__mutex lock;
    gf__cache_bin bins[GF__CACHE_BINS];   /* every block of a bin is smaller than every block of the next */
    int count;                      /* blocks in all bins */
    size_t bytes;                   /* cached: the blocks' capacities */
    size_t keep;                    /* release threshold */
} gf__alloc_cache;

struct gf_device {
    uint32_t type;
    const gf__backend *be;
    int index;                      /* -1: opened on the program's own device (gf_device_open_native) */
    gf_device_info info;
    int open_number;                /* which open of this backend and index (2 and up: in the tag) */
    char tag[sizeof ((gf_device_info *)0)->name + 56];   /* names it in messages: 'name' (backend index),
                                                        so two GPUs of one model, or two opens of one, differ */
    void *native;                   /* the backend's device state */
    gf__mutex lock;                 /* streams[], graphs[], captures */
    gf__cond released;              /* a stream's sync_refs fell to 0 */
    gf_stream **streams; int stream_count, stream_cap;
    gf_graph **graphs; int graph_count, graph_cap;   /* live graphs, to refuse destroyed ones */
    gf_stream *sync_stream;         /* carries the synchronous copies */
    gf_stream *peer_stream;         /* made at first need: this device's side of copies and waits
                                       bridged to other devices (gpuflow's own: "gpuflow/peer") */
    gf_stream *outside_stream;      /* made at first need: waits for other devices' peer copies of
                                       its memory, so its releases' fences see them ("gpuflow/outside") */
    int bridges;                    /* atomic: other devices' callbacks that hold its marks or stages */
    gf_event_pool *events;          /* the device's own events: barriers, flows, profiler */
    gf__atomic64 next_id;
    gf__atomic64 next_label;        /* "stream N" counts the streams the program made */
    unsigned fork_count;            /* gf__fork_count when opened: a child of fork() differs */
    int live[GF__T_BUDGET - GF__T_DEVICE + 1];   /* atomic: objects the program made, by type */
    gf__capture *captures;          /* in progress */
    gf__profiler *profiler;         /* made by the first gf_profiler_enable, kept until close */
    int profiling;                  /* atomic: operations are being timed */
    gf__waiter *waiter;
    gf__alloc_cache cache;          /* stream-ordered allocator where the driver has none */
    gf__mutex retired_lock;         /* retired[]: what destroys let go of, waiting for queued work */
    struct gf__retired *retired; int retired_count, retired_cap;
    int retired_pending;            /* atomic: retired_count, read without the lock */
    int retired_busy;               /* atomic: collections holding items they took off the list */
    gf__mutex idle_lock;            /* idle[]: releases due whose driver call waits for the device */
    struct gf__idle_release *idle; int idle_count, idle_cap;
    int idle_pending;               /* atomic: idle_count, read without the lock */
    size_t idle_bytes;              /* host memory among them */
    gf__mutex stage_lock;           /* stage_idle, stage_idle_bytes: host callbacks take it too */
    struct gf__stage *stage_idle; size_t stage_idle_bytes;
    struct gf__stage *stage_lost;   /* stages the device may still write: freed only at close */
    gf__spin shell_lock;            /* GPUFLOW_DEBUG: destroyed objects kept until close */
    void **shells; int shell_count, shell_cap;
    gf__spin mem_lock;              /* mem, limit, pinned */
    gf_memory_counter mem[GF_MEMORY_KIND_COUNT];
    uint64_t mem_limit;             /* 0: none */
    uint64_t mem_admitted;          /* bytes gf__mem_admit let through that are not counted yet */
    gf__pinned *pinned; int pinned_count, pinned_cap;
    struct gf_budget **budgets; int budget_count, budget_cap;   /* live budgets, under mem_lock */
    int race_on;                    /* atomic: the race detector checks operations */
    struct gf__race *race;          /* its state, made by the first enable, kept until close */
    unsigned hang_ms;               /* GPUFLOW_HANG_MS: a wait longer than this logs the device state */
    char *trace_path;               /* GPUFLOW_TRACE: the Perfetto trace written at close */
    int sync_each;                  /* GPUFLOW_SYNC: every operation waits for itself */
    int priority_noted;             /* atomic: "no stream priorities" was said (once per device) */
    int lost;                       /* atomic: faults on demand made the device lost */
    uint64_t lost_at;               /* at which counted operation */
    int stats_at_close;             /* GPUFLOW_STATS: the device's statistics logged at close */
};

struct gf_buffer {
    uint32_t type;
    gf_device *dev;
    size_t size;
    size_t capacity;                /* bytes allocated (stream-ordered reuse may hand out less) */
    int managed;
    /* The memory's handle, one rule for every backend: what the driver calls it, as an integer
       (CUdeviceptr, a HIP device pointer, a cl_mem; the stub's host address). It is what
       gf_buffer_native returns, and a buffer kernel argument passes its address as the
       argument's value (pointer-sized on the 64-bit hosts CUDA and HIP run on). A view's is
       its own (parent's plus offset where the handle is an address; a sub-buffer on OpenCL). */
    uint64_t native;
    void *host;                     /* where the host reaches the bytes directly, or NULL: stub
                                       memory, OpenCL's fine-grained SVM */
    int capture_uses;               /* captures in progress that use it (sync copies refused) */
    int async_state;                /* 0 plain, 1 live stream-ordered, 2 freed stream-ordered */
    gf_graph *graph_owner;          /* allocated inside a capture: the graph owns it */
    int borrowed;                   /* wrapped (or a view): the memory is not this handle's to free */
    int exportable;                 /* gf_buffer_desc.exportable: allocated so gf_buffer_export can hand it out */
    void *external;                 /* the backend's state of an import or an exportable allocation */
    struct gf_budget *budget;       /* charged to it (held) from create to destroy */
    gf_buffer *parent; size_t view_offset;   /* a view: a window on parent's memory */
    int parent_dropped;             /* a retired view whose hold on parent already went */
    int refs;                       /* atomic: the live handle, each view and each graph that holds it; the memory goes at 0 */
    int views;                      /* atomic: its views whose handles live */
    int kind;                       /* gf_memory_kind it is counted under; GF_MEMORY_KIND_COUNT: none */
    gf__spin use_lock;              /* uses */
    gf_event **uses; int use_count, use_cap;   /* gf_buffer_record_stream: work to finish before reuse */
    struct gf__race_buffer *race;   /* race detector: accesses to its bytes (a root buffer's) */
};

typedef enum gf__copy_kind { GF__COPY_H2D, GF__COPY_D2H, GF__COPY_D2D } gf__copy_kind;
typedef struct gf__copy {
    gf__copy_kind kind;
    gf_buffer *dst; size_t dst_offset;
    gf_buffer *src; size_t src_offset;
    void *host;                     /* H2D source or D2H destination */
    size_t bytes;
} gf__copy;

/* One of a stream's latest operations (gf_device_write_state); a wait names the stream that
   recorded its event by id (that stream may be gone by the time anyone reads this). */
/* The name is a copy: the kernel (its module) may be destroyed before anyone reads the note. */
typedef struct gf__op_note {
    uint64_t seq; gf_op_kind kind; char name[128]; uint64_t waits_on;
    uint64_t waits_on_seq;          /* a wait on this device: the place in waits_on's order it waits for (0: unknown) */
    int has_value; uint64_t value;  /* a semaphore's signal or wait: the value (name: its label) */
    int across;                     /* a wait on another device's stream: name is that stream and its device */
} gf__op_note;

struct gf_stream {
    uint32_t type;
    gf_device *dev;
    uint64_t id;
    char label[64];
    gf_priority priority;
    void *native;                   /* CUstream, cl_command_queue, stub queue, ... */
    void *cond_native;              /* the backend's bodies of loops and branches open on it (native captures) */
    gf__mutex lock;                 /* enqueue order, capture state, profiler records */
    int status;                     /* gf_result: sticky asynchronous error, given to callbacks */
    int sync_failed;                /* atomic: GPUFLOW_SYNC named a failure on it (later ones are that one) */
    gf__atomic64 ops, copies, bytes_copied, launches, callbacks;   /* atomics */
    gf__atomic64 staged_copies, bridged_waits;                    /* atomics: across devices */
    gf__atomic64 submitted, retired;    /* pending = submitted - retired, refreshed by query */
    gf__capture *capture;           /* capture this stream takes part in, or NULL */
    int capture_ops, capture_joined;/* ops since joining; ops covered by a join back */
    int sync_refs;                  /* device-wide synchronizes holding it (dev->lock); destroy waits */
    int fence_only;                 /* dev->outside_stream: fenced by releases; neither a device's
                                       synchronize nor its idle check waits for it */
    gf_stream_pool *pool; int pool_index;
    uint64_t lease_t0; gf_workload lease_workload;  /* pool completion timing */
    int internal;                   /* owned by the core (pool, set, flow, sync stream) */
    int borrowed;                   /* wrapped: destroy leaves the native stream alive */
    uint64_t last_trace_id;         /* profiler: the last op, a flow arrow's source */
    int ranges[GF__RANGE_DEPTH];    /* open gf_range_push spans: profiler records (-1: untimed) */
    int race_slot;                  /* race detector: its index in vector clocks; -1 until first used */
    uint64_t *race_vc; int race_n;  /* its vector clock */
    uint64_t race_host_seen;        /* version of the host clock folded in */
    gf__op_note recent[GF__RECENT_OPS];
    uint64_t foreign_wait_seq;      /* the latest wait for an imported semaphore (its place in order); lock */
    uint64_t foreign_warned;        /* the one gf__warn_foreign_wait last named */
    char foreign_wait[48];          /* "semaphore N: value" */
    int callback_running;           /* atomic: a host callback of this stream is running now */
    gf_event *start_due;            /* a frame's start (a stream set's, a flow run's lane), recorded just
                                       before the stream's next operation (lock): its time leaves out
                                       the host's preparing */
    uint64_t range_depth;           /* may exceed GF__RANGE_DEPTH: deeper ranges are not timed (64 bits: unmatched pushes never wrap it) */
};

struct gf_event {
    uint32_t type;
    gf_device *dev;
    unsigned flags;
    void *native;
    int recorded;                   /* atomic */
    gf__spin lock;                  /* a record (driver call and the fields below) against readers */
    gf_stream *stream;              /* where it was last recorded (captures only: it may be gone since) */
    uint64_t stream_id;             /* the same, by id: what descriptions look the label up by */
    uint64_t stream_seq;            /* the operations of that stream it follows (its place in the order) */
    gf_event_pool *pool;
    int in_pool;                    /* atomic: 1 while it sits in its pool (or was never acquired) */
    int shelf;                      /* atomic: the pool shelf it was last acquired from */
    gf__atomic64 capture_id;        /* recorded inside this capture (0: none); atomic: a pool take clears it unlocked */
    int capture_pos;                /* recording stream's capture_ops at the record */
    uint64_t trace_id;              /* profiler: the op it marks, for flow arrows */
    int waits;                      /* atomic: pending gf_event_on_complete waits on it */
    int after_waits;                /* the waiter's lock: a gf__after_waits the last wait carries out */
    uint64_t *race_vc; int race_n;  /* race detector: its recording stream's clock at the record */
    char gap[GF__CACHE_LINE];       /* pooled events cycle on different threads: no shared line */
};

#define GF__SEM_STREAMS 8   /* streams a timeline remembers the last signal of */
struct gf_semaphore {
    uint32_t type;
    gf_device *dev;
    uint64_t id;
    int timeline;
    gf_external_type imported;      /* what it came from; GF_EXTERNAL_NONE: gpuflow's own */
    char label[32];                 /* "semaphore N": what hang reports and op notes call it */
    void *native;                   /* the backend's */
    uint64_t *race_vc; int race_n;  /* race detector: the clocks of the signals so far, joined */
    int refs;                       /* atomic: the handle, and each graph that signals or waits on it */
    gf__spin last_lock;             /* timelines: the last signal enqueued outside a capture by each */
    struct { uint64_t stream, value, used; } last[GF__SEM_STREAMS];   /* of the latest streams (id 0: none) */
    uint64_t last_used;             /* stamps the entries: a new stream takes the least recently used */
};

typedef struct gf__record_info { int recorded; gf_stream *stream; uint64_t stream_id, stream_seq, capture_id, trace_id; int capture_pos; } gf__record_info;
static gf__record_info gf__event_latest(gf_event *ev) {
    gf__record_info info;
    gf__spin_lock(&ev->lock);
    info.recorded = gf__atomic_load_int(&ev->recorded);
    info.stream = ev->stream;
    info.stream_id = ev->stream_id;
    info.stream_seq = ev->stream_seq;
    info.capture_id = gf__atomic_load(&ev->capture_id);
    info.trace_id = ev->trace_id;
    info.capture_pos = ev->capture_pos;
    gf__spin_unlock(&ev->lock);
    return info;
}


struct gf_kernel {
    uint32_t type;
    gf_module *mod;
    char name[128];
    void *native;                   /* CUfunction, cl_kernel, ... */
    void (*stub_fn)(const gf_kernel_ctx *, void *const *);
    void (*stub_threads)(gf_kernel_ctx *, void *const *, unsigned);   /* NULL: stub_fn per thread */
    int stub_per_block;             /* a block kernel: stub_fn runs a whole block */
    int param_count;                /* arguments a launch must pass; 0: unknown, not checked */
    const gf_stub_param *params;    /* param_count entries, each checked at launch; NULL: none */
    uint32_t buffer_params;         /* bit i: params[i] is a pointer (a '*' in its type) */
    size_t static_shared;           /* its own shared arrays' bytes, where the backend says (OpenCL) */
    gf__mutex lock;                 /* OpenCL: clSetKernelArg + enqueue must not interleave */
    gf_kernel *next;
};

/* What tells one version of a file from another: its modification time (ns) and size, its
   status-change time (which no tool sets back: a copy that keeps the modification time, a
   chmod, a symlink turned to another file of the same size and time all move it) and its
   identity (another file put in its place). */
typedef struct gf__file_version { long long mtime, ctime, size; uint64_t ino, dev; } gf__file_version;

struct gf_module {
    uint32_t type;
    gf_device *dev;
    uint64_t id;                    /* unique on the device: graphs' launches name their module by it */
    void *native;
    gf_stub_kernel *stub_kernels; int stub_kernel_count;
    gf__mutex lock;
    gf__mutex reload_lock;          /* one reload at a time: path and origin change only inside one */
    gf_kernel *kernels;             /* handed out by gf_kernel_get, freed with the module */
    /* hot reload: how it was loaded from a file (path NULL: from text), and the code that
       stale graphs still run */
    char *path, *options, *source_name, *cache_dir;
    const gf_stub_kernel *given_stub; int given_stub_count;
    int given_stale;                /* reloaded from its file: given_stub no longer describes the code */
    gf__file_version path_version;  /* the file as last loaded or polled */
    int path_gone;                  /* a poll found it missing (said once) */
    gf_module **olds; int old_count, old_cap;
    int refs;                       /* atomic: the program's handle and each graph holding it (the code goes with the last) */
};

/* A recorded command: what a capture without native graphs keeps, and replay re-issues. */
typedef enum gf__cmd_kind {
    GF__CMD_COPY, GF__CMD_FILL, GF__CMD_LAUNCH, GF__CMD_CALLBACK, GF__CMD_PREFETCH, GF__CMD_GRAPH, GF__CMD_COPY_2D,
    GF__CMD_SIGNAL, GF__CMD_SEM_WAIT, GF__CMD_COND
} gf__cmd_kind;
/* A conditional's marker in a recording: a begin reads the int, an end closes its body; jump
   is the distance to the matching marker (relative, so a graph inlined into another keeps it). */
enum { GF__COND_WHILE, GF__COND_IF, GF__COND_END_WHILE, GF__COND_END_IF };
/* What a conditional tests: the int == value (equal), else the int != value. The public calls
   test != 0; a flow's condition task tests == k for its k-th successor. */
typedef struct gf__cond_test { int32_t value; int equal; } gf__cond_test;
static const gf__cond_test gf__cond_nonzero = { 0, 0 };
#define GF__COND_TRUE(t, v) ((t).equal ? (v) == (t).value : (v) != (t).value)
typedef struct gf__cmd_cond { int what; gf_buffer *buf; size_t offset; int jump; gf__cond_test test; } gf__cmd_cond;
/* One operation on a stream: its kind, and that kind's fields alone (c->as.<kind>). */
typedef struct gf__cmd_fill {
    gf_buffer *buf; size_t offset, bytes;
    uint32_t pattern; int width;    /* width 1, 2 or 4 bytes; width 1: the low byte of pattern */
} gf__cmd_fill;
typedef struct gf__cmd_launch {
    gf_kernel *kernel; gf_launch_dims dims; const gf_arg *args; int arg_count;
    const char *kernel_name;        /* k->name; in a graph, a copy in its args block (the module
                                       may go first: describing the graph stays safe) */
    uint64_t module_id;             /* k's module's id: kernel is only read while it is alive (a reload) */
} gf__cmd_launch;
typedef struct gf__cmd {
    gf__cmd_kind kind;
    union {
        gf__copy copy;                                          /* COPY */
        gf_copy_2d copy_2d;                                     /* COPY_2D */
        gf__cmd_fill fill;                                      /* FILL */
        struct { gf_buffer *buf; int to_device; } prefetch;     /* PREFETCH */
        gf__cmd_launch launch;                                  /* LAUNCH */
        struct { gf_callback fn; void *user; } callback;        /* CALLBACK */
        gf_graph *child;                                        /* GRAPH: launched inside a capture */
        struct { gf_semaphore *sem; uint64_t value; } sem;      /* SIGNAL, SEM_WAIT */
        gf__cmd_cond cond;                                      /* COND: only in recordings */
    } as;
} gf__cmd;

struct gf_graph {
    uint32_t type;
    gf_device *dev;
    gf_capture_mode mode;
    int by_driver;                  /* a driver graph (else the core's recording) */
    int launched;                   /* ever launched: releasing it waits for the device */
    char stale[160];                /* a reload it could not follow: why (written before stale_flag) */
    int stale_flag;                 /* atomic: stale, until a gf_graph_update brings it up to date */
    int has_children;               /* a native graph that launched other graphs inside its capture */
    gf__mutex lock;                 /* a replay's enqueue against an update's swap */
    void *native_exec;              /* CUgraphExec / hipGraphExec_t / command buffer */
    void *native_graph;             /* CUgraph / hipGraph_t, kept for update */
    int nodes;
    gf__cmd *cmds; int cmd_count, cmd_cap;          /* recording; a launch's args are its own block */
    gf_buffer **owned; int owned_count, owned_cap;  /* allocated inside the capture */
    void **blocks; int block_count, block_cap;      /* callback contexts a native graph refers to */
    gf_graph_pool *pool;                            /* its allocations come from there */
    gf__cmd *launches; int launch_count, launch_cap;/* native graphs: each launch, in capture order */
    int recorded_launches;                          /* recordings: launch commands so far (race detector) */
    struct gf__race_use *race_uses; int race_use_count, race_use_cap;   /* what its replays touch */
    void **launch_nodes; int launch_node_cap;       /* native graphs: the driver's node per launch
                                                       (backend's captured_node; NULL: unknown) */
    gf_semaphore **sems; int sem_count, sem_cap;    /* semaphores its replays signal or wait: held */
    gf_buffer **kept; int kept_count, kept_cap;     /* memory of gpuflow's own its replays use (a flow's
                                                       conditions): a reference each, dropped at release */
    gf_buffer **held; int held_count, held_cap;     /* the program's buffers its commands use, and the */
    gf_module **mods; int mod_count, mod_cap;       /* modules of its launches: a reference each, so that
                                                       destroying one while the graph lives frees nothing it replays */
    gf_graph *part_of;              /* the recording whose native first part this graph is (released with it) */
    int32_t *landing;               /* a recording's condition read back lands here (one of its blocks) */
    int emulated;                   /* began natively, recorded from its first loop or branch on (HIP) */
};

/* A capture in progress: the streams in it, the buffers it uses, the graph it becomes. */
struct gf__capture {
    uint64_t id;
    gf_stream *origin;              /* began it; must end it */
    uint64_t thread;                /* the thread that began it (gf__thread_id), where only it may end
                                       it (GF_CAPTURE_GLOBAL, _THREAD_LOCAL); 0: any (RELAXED) */
    gf_capture_mode mode;
    int by_driver;                  /* the driver captures; else the core records */
    gf_graph *graph;                /* what the capture becomes */
    gf_stream **members; int member_count, member_cap;   /* origin and forked streams */
    gf_buffer **buffers; int buffer_count, buffer_cap;   /* used: sync copies into them refused */
    unsigned char *pool_taken; int pool_taken_cap;       /* pool blocks this capture holds */
    gf__capture *next;
    struct { int at; gf_stream *s; int what; } open_cond[GF_COND_DEPTH];   /* conditionals begun, not ended */
    int open_conds;
};

/* Shared graph memory: blocks handed to captures of the pool, each capture taking distinct
   blocks; launches of its graphs ordered through one event. */
struct gf_graph_pool {
    uint32_t type;
    gf_device *dev;
    gf__mutex lock;                 /* blocks, last */
    gf_buffer **blocks; int block_count, block_cap;
    int graphs;                     /* atomic: live graphs captured in the pool */
    gf_event *last;                 /* recorded behind the latest launch of one of its graphs */
    int last_recorded;
};

#ifdef GPUFLOW_DEBUG
#  define GF__DEBUG_SHELLS 1
#else
#  define GF__DEBUG_SHELLS 0
#endif
/* Objects the program created and has not destroyed, counted by type for gf_device_close's
   report (the device's own are not counted). */
static void gf__live(gf_device *dev, gf__type type, int delta) { gf__atomic_add_int(&dev->live[type - GF__T_DEVICE], delta); }

/* Frees a destroyed object. Under GPUFLOW_DEBUG it stays a refused shell (its type tag
   cleared) until its device closes, so any later use of the handle is
   GF_ERROR_INVALID_HANDLE rather than a read of freed memory. */
static void gf__obj_free(gf_device *dev, void *obj) {
    *(uint32_t *)obj = GF__T_DEAD;
#ifdef GPUFLOW_DEBUG
    gf__spin_lock(&dev->shell_lock);
    if (gf__grow((void **)&dev->shells, &dev->shell_cap, dev->shell_count + 1, sizeof *dev->shells)) {
        dev->shells[dev->shell_count++] = obj;
        gf__spin_unlock(&dev->shell_lock);
        return;
    }
    gf__spin_unlock(&dev->shell_lock);   /* no memory to keep it: free it after all */
#else
    (void)dev;
#endif
    gf__free(obj);
}

/* ---- the backend vtable ------------------------------------------------------------- >>vtable */
/* WRITING A BACKEND
   A backend is one header, gpuflow_<name>.h, that fills this table and nothing else:
   - Register it: a row X(ID, name) in GF__BACKENDS (in the order AUTO should try it) and its
     block in "backend headers" at the end of this file; its header defines
     `static const gf__backend *gf__<name>_backend(void)` returning
     gf__backend_once(&its_table, its_fill), the fill setting each slot by name.
   - Required slots: GF__BACKEND_REQUIRED_SLOTS below (checked when the table is filled). The
     rest may stay NULL, each with the meaning written beside it: the core then supplies the
     behaviour (records and replays captures, caches stream-ordered memory, copies 2D row by
     row, ...) or answers GF_ERROR_NOT_SUPPORTED. Native graphs are all five graph slots or
     none; compile, module_load_compiled and kernel_prelude come together.
   - Handles: each object has `void *native` for the backend's own state (a buffer: the
     uint64_t `native`, the one rule for a device handle, see gf_buffer); devices carry
     `info` for the backend to fill at open.
   - Use only the kit (the next section): the core's helpers for errors, memory, threads,
     drivers and launches, and the hooks for native graphs. tests/backend_rules.sh checks it.
   - Every slot returns GF_OK or a failure whose detail it has set with gf__fail (naming the
     native call and error); gf__native_codes maps a driver's codes in one table.
   - Tests: the conformance suite takes the backend's name (tests/backends.h); run it, the
     faults suite (every slot failed in turn) and the race suite on the new backend.
   The primitive operations the core is written over follow. The graph entries are NULL where
   the driver has no native capture: the core then records the stream's commands and replays
   them. buffer_alloc_async / buffer_free_async are NULL where the driver has no
   stream-ordered allocator: the core then keeps a cache. */
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
    /* 1 where module_unload and host_free wait for every stream of the device (CUDA's
       cuModuleUnload and cuMemFreeHost do: 280 ms behind another stream's 300 ms host function
       on an H100): the core then makes them only when its streams are idle ("deferred releases"). */
    int       release_waits;

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
    gf_result (*event_failure)(gf_event *ev);   /* optional: a complete event's work failed (its code,
                                                   the text set), else GF_OK; a driver whose query
                                                   answers failures itself leaves it NULL */

    gf_result (*module_load)(gf_module *mod, const gf_module_desc *desc);
    void      (*module_unload)(gf_module *mod);
    gf_result (*kernel_get)(gf_kernel *k);                      /* name set; sets native */
    gf_result (*launch)(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims,
                        const gf_arg *args, int count);

    gf_result (*capture_begin)(gf_stream *s, gf_capture_mode mode);
    gf_result (*capture_end)(gf_stream *s, gf_graph *g);        /* sets g->by_driver, g->nodes; on
                                                                   failure the capture is over */
    gf_result (*graph_launch)(gf_graph *g, gf_stream *s);
    gf_result (*graph_update)(gf_graph *target, gf_graph *from);/* shape mismatch: INVALID_ARGUMENT */
    void      (*graph_destroy)(gf_graph *g);
    /* Optional with native graphs. captured_node: the driver's node for the launch of k that
       just succeeded in s's native capture, NULL where the driver cannot say; the core keeps
       it per launch (gf__graph_launch_node). graph_set_kernel_args: new arguments for the
       launch_index-th launch; while gf__following_reload is set (a hot reload) the launch also
       takes k's code now (k is then alive: it is the reloaded module's). */
    void     *(*captured_node)(gf_stream *s, gf_kernel *k);
    gf_result (*graph_set_kernel_args)(gf_graph *g, int launch_index, gf_kernel *k, const gf_arg *args, int count);
    gf_result (*graph_write_dot)(gf_graph *g, const char *path);   /* NULL: the core writes the recording */
    void      (*range)(gf_stream *s, const char *name);    /* a tool's range (NVTX): push a name, pop with NULL */
    /* Graphs that decide in a native capture (all three or none: none refuses them with
       GF_ERROR_NOT_SUPPORTED). cond_begin: a while (what 0) or if (1) on the int at buf +
       offset; s's work then goes into the body until cond_end closes the innermost. cond_abort:
       a capture discarded with s's bodies open: they are ended and thrown away, s enqueues on
       its own again. State per stream in s->cond_native. */
    gf_result (*cond_begin)(gf_stream *s, int what, gf_buffer *buf, size_t offset, gf__cond_test test);
    gf_result (*cond_end)(gf_stream *s);
    void      (*cond_abort)(gf_stream *s);

    /* Kernels from one source (all three or none; none: gf_module_desc.source goes to
       module_load, as the stub's C kernels do). kernel_prelude: what the dialect's words mean
       to this compiler (gf__kernel_prelude_cxx or _clc), put before the user's source.
       compile: that whole text with options into *binary (from gf__malloc; the core frees it
       and may keep it in the disk cache). A compile error is GF_ERROR_BUILD with the
       compiler's log; a compiler library that is missing is GF_ERROR_NOT_SUPPORTED naming it
       and what to install. module_load_compiled: module_load for such a binary.
       compiler_id (optional): what a cache key must hold beyond the text and options: device,
       compiler and driver versions; "" when they cannot be read (the cache is then not used). */
    const char *kernel_prelude;
    gf_result (*compile)(gf_device *dev, const char *name, const char *text, const char *options,
                         void **binary, size_t *size);
    gf_result (*module_load_compiled)(gf_module *mod, const void *binary, size_t size);
    void      (*compiler_id)(gf_device *dev, char *out, size_t cap);

    /* NULL: the driver copies from any host memory asynchronously. Else: whether p is pinned;
       the core stages copies from other host memory (see "staged copies"). */
    int       (*host_pinned)(gf_device *dev, const void *p);

    /* Interop and memory; NULL: GF_ERROR_NOT_SUPPORTED, or the core's fallback where named. */
    uint64_t  (*native_handle)(gf__type type, void *obj);      /* what gf_<object>_native returns (not devices, not buffers: buf->native) */
    void      (*device_native)(gf_device *dev, gf_native_device *out);
    gf_result (*device_open_native)(gf_device *dev, const gf_native_device *native);   /* uses, never owns */
    gf_result (*stream_wrap)(gf_stream *s, void *native);       /* s->borrowed: destroy leaves it */
    gf_result (*buffer_wrap)(gf_buffer *buf, uint64_t native);  /* buf->borrowed: free leaves it */
    gf_result (*buffer_view)(gf_buffer *view);   /* parent, view_offset set; NULL: native and host offset */
    gf_result (*fill_wide)(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, int width, size_t count);
    gf_result (*copy_2d)(gf_stream *s, const gf_copy_2d *c);    /* NULL: one copy per row */
    void      (*trim)(gf_device *dev, size_t keep_bytes);       /* the driver's stream-ordered pool; the stub's kept fiber stacks */
    size_t    (*cached_bytes)(gf_device *dev);                  /* freed memory the driver's pool keeps */
    /* What the state report (gf_device_write_state, GPUFLOW_HANG_MS) adds for s beyond the
       core's view: a kernel running now, a failure the stream holds. Never waits. */
    void      (*describe_stream)(gf_stream *s, struct gf__text *t);

    /* External memory and semaphores (all of them, or none: GF_ERROR_NOT_SUPPORTED).
       external_types: the handle types the device takes for a use (GF__EXT_*), as bits
       1u << type; the core refuses any other type before a slot runs, naming these.
       buffer_import: buf->size set (the bytes from desc->offset on); sets native, host,
       external; buffer_free then frees the import. buffer_alloc gets buf->exportable. The
       semaphore slots: timeline set (import: also imported); signal and wait are enqueued on s
       in its order, refused by the core inside a capture. */
    unsigned  (*external_types)(gf_device *dev, int use);
    gf_result (*buffer_import)(gf_buffer *buf, const gf_external_memory_desc *desc);
    gf_result (*buffer_export)(gf_buffer *buf, gf_external_type type, gf_external_handle *out);
    gf_result (*semaphore_create)(gf_semaphore *sem);
    gf_result (*semaphore_import)(gf_semaphore *sem, const gf_semaphore_desc *desc);
    gf_result (*semaphore_export)(gf_semaphore *sem, gf_external_type type, gf_external_handle *out);
    void      (*semaphore_destroy)(gf_semaphore *sem);
    gf_result (*semaphore_signal)(gf_stream *s, gf_semaphore *sem, uint64_t value);
    gf_result (*semaphore_wait)(gf_stream *s, gf_semaphore *sem, uint64_t value);

    /* More than one device of this backend (each optional). peer_can_access: whether a's
       kernels and copies can reach b's memory once peer_enable(a, b) ran (NULL: never; the
       core answers for a device and itself). copy_peer: a D2D copy whose dst and src belong
       to two devices of this backend, on s (a stream of one of them); NULL: the core stages
       it through host memory. stream_wait_peer: s waits for ev's latest record, made on
       another device of this backend; NULL: the core bridges it through a host callback. */
    int       (*peer_can_access)(gf_device *a, gf_device *b);
    gf_result (*peer_enable)(gf_device *a, gf_device *b);
    gf_result (*copy_peer)(gf_stream *s, const gf__copy *c);
    gf_result (*stream_wait_peer)(gf_stream *s, gf_event *ev);
};
/* The uses external_types answers for. */
enum { GF__EXT_IMPORT_MEMORY, GF__EXT_EXPORT_MEMORY, GF__EXT_IMPORT_SEMAPHORE, GF__EXT_EXPORT_SEMAPHORE };

/* The slots every backend fills; the others may stay NULL, with the meaning given above. */
#define GF__BACKEND_REQUIRED_SLOTS(X) \
    X(load) X(device_count) X(device_open) X(device_close) X(memory_info) \
    X(buffer_alloc) X(buffer_free) X(host_alloc) X(host_free) \
    X(stream_create) X(stream_destroy) X(stream_synchronize) X(stream_query) \
    X(copy) X(fill) X(host_callback) \
    X(event_create) X(event_destroy) X(event_record) X(stream_wait_event) \
    X(event_synchronize) X(event_query) X(event_elapsed_ms) \
    X(module_load) X(module_unload) X(kernel_get) X(launch)

/* Test builds may wrap a backend's table (tests/faults.c fails each slot in turn). */
#ifndef GF__BACKEND_WRAP
#  define GF__BACKEND_WRAP(be) (be)
#endif

/* A backend's table, filled by name the first time it is asked for (under the driver lock, so
   threads racing to the first device see a whole table), its required slots checked, and
   native graphs all-or-nothing. */
static const gf__backend *gf__backend_once(gf__backend *table, void (*fill)(gf__backend *t)) {
    gf__driver_lock_acquire();
    if (!table->name) {
        gf__backend t;
        memset(&t, 0, sizeof t);
        fill(&t);
#define GF__REQUIRE_SLOT(slot) GPUFLOW_ASSERT(t.slot != NULL && #slot);
        GF__BACKEND_REQUIRED_SLOTS(GF__REQUIRE_SLOT)
#undef GF__REQUIRE_SLOT
        GPUFLOW_ASSERT(t.name != NULL);
        GPUFLOW_ASSERT(!t.capture_begin == !t.capture_end && !t.capture_begin == !t.graph_launch &&
                       !t.capture_begin == !t.graph_update && !t.capture_begin == !t.graph_destroy);
        GPUFLOW_ASSERT(!t.buffer_alloc_async == !t.buffer_free_async);
        GPUFLOW_ASSERT(!t.compile == !t.module_load_compiled && !t.compile == !t.kernel_prelude);
        GPUFLOW_ASSERT(!t.cond_begin == !t.cond_end && !t.cond_begin == !t.cond_abort);
        GPUFLOW_ASSERT(!t.external_types == !t.buffer_import && !t.external_types == !t.buffer_export &&
                       !t.external_types == !t.semaphore_create && !t.external_types == !t.semaphore_import &&
                       !t.external_types == !t.semaphore_export && !t.external_types == !t.semaphore_destroy &&
                       !t.external_types == !t.semaphore_signal && !t.external_types == !t.semaphore_wait);
        *table = t;
    }
    gf__driver_lock_release();
    return GF__BACKEND_WRAP(table);
}

/* The table of a registered backend, NULL when it is not compiled in (defined after the
   backend headers, at the end of the implementation). */
static const gf__backend *gf__backend_of(gf_backend b);

/* ---- the backend kit ----------------------------------------------------------- >>kit */
/* Everything of the core a backend header may use, and nothing else: the vtable above, the
   fields of the objects (gf_device, gf_buffer, gf_stream, gf_event, gf_module, gf_kernel,
   gf_graph) that the vtable's notes name (dev, size, label, native, host, ...), and these
   names. tests/kit_names.sh checks every gf__/GF__ name the backend headers use against this
   list. Most are defined in earlier sections (the platform, errors, objects) and only named
   here; the rest follow. A name used by only some backends is GF__UNUSED_DECL, so a build
   with none of them stays warning-free.
     kit: gf__backend gf__backend_once GF__T_BUFFER GF__T_STREAM GF__T_EVENT GF__T_KERNEL
          GF__T_MODULE gf__type gf__copy GF__COPY_H2D GF__COPY_D2H GF__DEFAULT_POOL_KEEP
          GF__FAULT GF__TLS gf__error_text
     errors and logging: gf__fail gf__set_error gf__notice gf__quiet gf__copy_str
     host memory: gf__malloc gf__calloc gf__free gf__grow gf__alloc_own (> 0 around an
          allocation that fault rules must not count)
     files: gf__fopen (a UTF-8 path, on Windows too) gf__fd_dup (POSIX: a duplicate above 2, close-on-exec)
     threads: gf__mutex gf__mutex_init gf__mutex_destroy gf__lock gf__unlock gf__cond
          gf__cond_init gf__cond_destroy gf__cond_wait gf__cond_broadcast gf__thread
          gf__thread_create gf__thread_join gf__atomic_add gf__atomic_load gf__spin
          gf__spin_lock gf__spin_unlock
     drivers: gf__driver gf__driver_load gf__driver_no_device gf__driver_has_device
          gf__dlopen gf__dlsym gf__dlerror gf__native_codes gf__native_fail gf__native_ready
          gf__native_capture_broken gf__native_update_refused gf__native_priority
     launches: gf__kernel_params GF__STACK_ARGS gf__split_options gf__options_joined
          gf__kernel_prelude_cxx gf__kernel_prelude_clc gf__build_log_lines gf__build_log_start
     streams: gf__stream_failed (a failure found as a host callback comes due)
     captures and graphs: gf__stream_capturing gf__graph_launch_count gf__graph_launch_node
          gf__graph_launch_args gf__following_reload (set while a hot reload updates a
          native graph's launches: graph_set_kernel_args then takes the kernel's code too)
          gf__cond_test (what cond_begin's node tests the int against)
     external memory and semaphores: GF__EXT_BIT GF__EXT_IMPORT_MEMORY GF__EXT_EXPORT_MEMORY
          GF__EXT_IMPORT_SEMAPHORE GF__EXT_EXPORT_SEMAPHORE GF__T_SEMAPHORE
*/

/* A failure of work queued on s before a host callback, found by the backend as the callback
   comes due (a stub launch's, an OpenCL marker's status): the callback gets it as its status,
   as do later ones (a stream's error stays). */
static void gf__stream_failed(gf_stream *s, gf_result r) GF__UNUSED_DECL;
static void gf__stream_failed(gf_stream *s, gf_result r) {
    if (r < 0 && !gf__atomic_load_int(&s->status)) gf__atomic_store_int(&s->status, (int)r);
}
/* Whether s is in a capture now (s->lock held, as it is in every slot that enqueues). */
static int gf__stream_capturing(const gf_stream *s) GF__UNUSED_DECL;
static int gf__stream_capturing(const gf_stream *s) { return s->capture != NULL; }
/* A native graph's launches, in capture order: how many, the driver's node for launch i (what
   the backend's captured_node said; NULL: unknown), and the arguments and dimensions it runs
   with now. */
static int gf__graph_launch_count(const gf_graph *g) GF__UNUSED_DECL;
static int gf__graph_launch_count(const gf_graph *g) { return g->launch_count; }
static void *gf__graph_launch_node(const gf_graph *g, int i) GF__UNUSED_DECL;
static void *gf__graph_launch_node(const gf_graph *g, int i) { return i >= 0 && i < g->launch_count ? g->launch_nodes[i] : NULL; }
static void gf__graph_launch_args(const gf_graph *g, int i, const gf_arg **args, int *count, gf_launch_dims *dims) GF__UNUSED_DECL;
static void gf__graph_launch_args(const gf_graph *g, int i, const gf_arg **args, int *count, gf_launch_dims *dims) {
    GPUFLOW_ASSERT(i >= 0 && i < g->launch_count);
    *args = g->launches[i].as.launch.args;
    *count = g->launches[i].as.launch.arg_count;
    if (dims) *dims = g->launches[i].as.launch.dims;
}


/* Lazy driver loading: each backend loads its library once, under one process-wide lock,
   and keeps the outcome (and why it failed) for every later caller. */
typedef struct gf__driver {
    int tried;
    gf_result result;
    char why[512];
    void *lib;
    int no_device;                  /* loaded, but the driver found no device: why says so */
    unsigned fork_count;            /* gf__fork_count when loaded: a fork's child does not use it */
} gf__driver;
/* fork()s this process has been the child of (>>deadlocks says what it guards) */
static volatile unsigned gf__fork_count;
#if defined(_WIN32)
GF__UNUSED_DECL static void *gf__dlopen(const char *name) { return (void *)LoadLibraryA(name); }
GF__UNUSED_DECL static void *gf__dlsym(void *lib, const char *name) {   /* a function pointer, carried as an object pointer */
    FARPROC f = GetProcAddress((HMODULE)lib, name);
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}
GF__UNUSED_DECL static const char *gf__dlerror(void) { return "LoadLibrary failed"; }
#else
GF__UNUSED_DECL static void *gf__dlopen(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
GF__UNUSED_DECL static void *gf__dlsym(void *lib, const char *name) { return dlsym(lib, name); }
GF__UNUSED_DECL static const char *gf__dlerror(void) { const char *e = dlerror(); return e ? e : "unknown dlopen error"; }
#endif

/* What vendor backends share, so that each says only what is its own: how a driver's result
   codes map onto gpuflow's and are named in messages, "loaded but no device", stream
   priorities, the launch parameter table, and the words of common refusals. */
typedef struct gf__native_codes {
    int success, not_ready, out_of_memory, not_found, not_supported, no_device;
    const int *capture; int capture_count;     /* codes that mean "not allowed in this capture" */
    const int *lost; int lost_count;           /* codes that leave the context unusable (a kernel's fault) */
    const char *(*name)(int r);                /* the driver's name for a code */
} gf__native_codes;

GF__UNUSED_DECL static gf_result gf__native_code(const gf__native_codes *c, int r) {
    int i;
    if (r == c->success) return GF_OK;
    if (r == c->not_ready) return GF_NOT_READY;
    if (r == c->out_of_memory) return GF_ERROR_OUT_OF_MEMORY;
    if (r == c->not_found) return GF_ERROR_NOT_FOUND;
    if (r == c->not_supported) return GF_ERROR_NOT_SUPPORTED;
    if (r == c->no_device) return GF_ERROR_NO_DEVICE;
    for (i = 0; i < c->capture_count; i++) if (r == c->capture[i]) return GF_ERROR_CAPTURE;
    for (i = 0; i < c->lost_count; i++) if (r == c->lost[i]) return GF_ERROR_DEVICE_LOST;
    return GF_ERROR_DRIVER;
}
/* "call: NAME (n)", with the gpuflow code r maps to. */
GF__UNUSED_DECL static gf_result gf__native_fail(const gf__native_codes *c, int r, const char *call) {
    gf_result code = gf__native_code(c, r);
    return gf__fail(code, "%s: %s (%d)%s", call, c->name(r), r, code == GF_ERROR_CAPTURE ? ": not allowed in this stream capture"
                    : code == GF_ERROR_DEVICE_LOST ? ": a kernel's fault left the device's context unusable (every later call fails the same): close the device" : "");
}
/* A query's answer: done, not yet, or a failure to report. */
GF__UNUSED_DECL static gf_result gf__native_ready(const gf__native_codes *c, int r, const char *call) {
    gf_result code = gf__native_code(c, r);
    return code == GF_OK || code == GF_NOT_READY ? code : gf__native_fail(c, r, call);
}
/* A capture the driver ended with a failure: gone, and the stream usable again. */
GF__UNUSED_DECL static gf_result gf__native_capture_broken(const gf__native_codes *c, int r, const char *call) {
    return gf__fail(GF_ERROR_CAPTURE, "%s: %s (%d): the capture was broken and is discarded", call, c->name(r), r);
}
/* A refused graph update: why (the driver's reason, in words), and that nothing changed. */
GF__UNUSED_DECL static gf_result gf__native_update_refused(const char *call, const char *error_name, int r, const char *why, int native_why) {
    return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: %s (%d): %s (result %d); the target graph is unchanged", call, error_name, r, why, native_why);
}
/* gpuflow's priorities on a driver's range, where "greatest" is the most urgent: NORMAL in
   the middle (rounding toward least). */
GF__UNUSED_DECL static int gf__native_priority(gf_priority p, int least, int greatest) {
    return p == GF_PRIORITY_HIGH ? greatest : p == GF_PRIORITY_LOW ? least : (least + greatest) / 2;
}
/* kernelParams for a launch: args[i].value, or for a buffer the address of its handle
   (buf->native). The table is stack when count fits, else allocated (the caller frees it if it
   is not stack); NULL: out of memory. */
#define GF__STACK_ARGS 32
GF__UNUSED_DECL static void **gf__kernel_params(const gf_arg *args, int count, void **stack) {
    void **params = count > GF__STACK_ARGS ? (void **)gf__malloc(sizeof *params * (size_t)count) : stack;
    int i;
    if (!params) { gf__set_error(GF_ERROR_OUT_OF_MEMORY, "gpuflow: out of host memory for %d kernel arguments", count); return NULL; }
    for (i = 0; i < count; i++)
        params[i] = args[i].buffer ? (void *)&args[i].buffer->native : (void *)args[i].value;
    return params;
}
/* Splits a build_options string into opts at spaces, for the runtime compilers (NVRTC,
   hiprtc) that take an argv; "..." or '...' keep spaces inside one option (the quotes go). In
   place: buf is changed. Returns how many; opts has room for strlen(buf) / 2 + 1. */
GF__UNUSED_DECL static int gf__split_options(char *buf, const char **opts) {
    char *r = buf, *w = buf;
    int count = 0;
    for (;;) {
        char quote = 0;
        while (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r') r++;
        if (!*r) return count;
        opts[count++] = w;
        for (; *r && (quote || (*r != ' ' && *r != '\t' && *r != '\n' && *r != '\r')); r++) {
            if (!quote && (*r == '"' || *r == '\'')) quote = *r;
            else if (*r == quote) quote = 0;
            else *w++ = *r;
        }
        if (*r) r++;     /* the space that ended the option; w is behind it */
        *w++ = 0;
    }
}
/* The same options as one string for a driver that takes one (clBuildProgram), so that an
   options string means the same on every backend: split as above, then each option that holds
   white space written with its value (after the first '=') in double quotes, " and \ escaped.
   Allocated; NULL: out of host memory. */
GF__UNUSED_DECL static char *gf__options_joined(const char *options) {
    size_t n = options ? strlen(options) : 0;
    char *buf = (char *)gf__malloc(n + 1), *out = (char *)gf__malloc(2 * n + 3 * (n / 2 + 1) + 1), *w = out;
    const char **opts = (const char **)gf__malloc(sizeof *opts * (n / 2 + 1));
    int count, i;
    if (!buf || !out || !opts) { gf__free(buf); gf__free(out); gf__free((void *)opts); return NULL; }
    memcpy(buf, options ? options : "", n + 1);
    count = gf__split_options(buf, opts);
    for (i = 0; i < count; i++) {
        const char *p = opts[i], *eq = strchr(p, '=');
        int spaced = strpbrk(p, " \t\n\r\"\\") != NULL;
        if (i) *w++ = ' ';
        if (spaced && eq) { memcpy(w, p, (size_t)(eq + 1 - p)); w += eq + 1 - p; p = eq + 1; }
        if (spaced) *w++ = '"';
        for (; *p; p++) { if (spaced && (*p == '"' || *p == '\\')) *w++ = '\\'; *w++ = *p; }
        if (spaced) *w++ = '"';
    }
    *w = 0;
    gf__free(buf);
    gf__free((void *)opts);
    return out;
}
/* The driver loaded but found no device: remembered, and said by every device_count. */
GF__UNUSED_DECL static void gf__driver_no_device(gf__driver *d, const char *fmt, ...) GF__PRINTF(2, 3);
GF__UNUSED_DECL static void gf__driver_no_device(gf__driver *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
    d->no_device = 1;
}
GF__UNUSED_DECL static gf_result gf__driver_has_device(const gf__driver *d) {
    return d->no_device ? gf__fail(GF_ERROR_NO_DEVICE, "%s", d->why) : GF_OK;
}

/* Loads a driver once: load_fn fills d (lib, result, why) the first time; every call returns
   the stored outcome with its reason as this thread's error detail. */
GF__UNUSED_DECL static gf_result gf__driver_load(gf__driver *d, void (*load_fn)(gf__driver *d)) {
    gf_result r;
    unsigned forked;
    gf__driver_lock_acquire();
    if (!d->tried) { load_fn(d); d->tried = 1; d->fork_count = gf__fork_count; }
    r = d->result;
    forked = d->fork_count != gf__fork_count;
    gf__driver_lock_release();
    if (r != GF_OK) return gf__fail(r, "%s", d->why);
    if (forked)   /* its threads stayed in the parent: CUDA refuses such a child, PoCL's queues never run */
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "the driver was loaded before this process was forked, and a vendor driver does "
                        "not work in a fork's child (its threads and state stayed in the parent): exec a program for the GPU work "
                        "(posix_spawn), load the driver only after the fork, or use the stub in the child");
    return GF_OK;
}


/* ---- forward declarations --------------------------------------------------- >>forward */
/* Every function of the core used before its section defines it, in one place; what a section
   calls of a later one is then plain to see. */
typedef gf_result (*gf__query_fn)(void *obj);   /* GF_OK done, GF_NOT_READY not yet, or a failure */
/* devices and streams */
static gf_result gf__stream_new(gf_device *dev, const char *label, gf_priority prio, int internal, gf_stream **out);
static gf_result gf__stream_new_on(gf_device *dev, const char *label, gf_priority prio, int internal, void *wrap, gf_stream **out);
static void gf__stream_free(gf_stream *s);
static gf_result gf__stream_sync(gf_stream *s);
static gf_result gf__stream_query_settled(void *p);
static gf_result gf__poll(gf__query_fn query, void *obj, unsigned timeout_ms);
static gf_result gf__capture_add(gf_stream *s, const gf__cmd *c);
static gf_result gf__copy_between_devices(gf_stream *s, const gf__copy *c);   /* >>peers */
static int gf__device_is_open(const gf_device *dev);                          /* >>devices */
static gf_result gf__wait_event_across(gf_stream *s, gf_event *ev);
static gf_result gf__wait_stream_across(gf_stream *waiter, gf_stream *other);
#define gf__copy_across(c) ((c)->kind == GF__COPY_D2D && (c)->dst->dev != (c)->src->dev)
static gf_graph *gf__capture_discard(gf__capture *c);
static void gf__discarded_release(gf_graph *g);
static void gf__capture_abandon(gf_stream *s);
/* memory */
static void gf__buffer_uses_drop(gf_buffer *buf);
static void gf__cache_init(gf_device *dev);
static void gf__cache_trim(gf_device *dev);
static void gf__cache_release(gf_device *dev, size_t keep, int wait);
static void gf__stages_free(gf_device *dev, struct gf__stage *st, int now);
static void gf__retire(gf_device *dev, void (*release)(void *obj), void *obj, int kind, size_t bytes, int when_idle);
#define GF__KIND_NO_MEMORY (-1)   /* gf__retire's kind for an object that holds no memory (a semaphore) */
static void gf__buffer_unref(gf_buffer *buf, int retire);
static void gf__module_unref(gf_module *mod);
static int gf__in_task_on(const gf_stream *s);
static void gf__retired_collect(gf_device *dev, int wait);
static int gf__idle_push(gf_device *dev, void (*release)(void *obj), void *obj, size_t bytes);
enum { GF__IDLE_IF_IDLE, GF__IDLE_OR_BOUND, GF__IDLE_NOW };   /* gf__idle_drain: when the idle releases are made */
static void gf__idle_drain(gf_device *dev, int when);
static uint64_t gf__pending(gf_stream *s);
/* events, event pools, async waiters */
static gf_result gf__wait_locked(gf_stream *s, gf_event *ev);
static gf_result gf__event_record_locked(gf_event *ev, gf_stream *s);
static gf_result gf__event_query_backend(void *p);
static gf_result gf__event_pool_take(gf_event_pool *pool, unsigned flags, gf_event **out);
static void gf__event_pool_give(gf_event_pool *pool, gf_event *ev);
static void gf__event_pool_free(gf_event_pool *pool);
static gf_result gf__waiter_add(gf_event *ev, gf_callback fn, void *user, uint64_t *wait_id);
/* what an event's last gf_event_on_complete wait carries out: the user destroyed it, released
   it to its pool, or destroyed its pool while the waits were pending */
enum gf__after_waits { GF__AFTER_NOTHING, GF__AFTER_FREE, GF__AFTER_RELEASE, GF__AFTER_POOL };
static int gf__after_waits_set(gf_event *ev, int after);
static int gf__after_waits_pool(gf_event_pool *pool);
static void gf__pool_drop_completions(gf_stream_pool *pool);
static void gf__waiter_stop(gf_device *dev);
/* graphs and graph pools */
static gf_result gf__graph_replay(gf_graph *g, gf_stream *s);
static int gf__keep_block(gf_graph *g, void *block);
static void gf__graph_release(gf_graph *g);
static int gf__graph_own(gf_graph *g, gf_buffer *buf);
static int gf__graph_keep(gf_graph *g, gf_buffer *buf);
static int gf__graph_hold_semaphore(gf_graph *g, gf_semaphore *sem);
static int gf__graph_hold_semaphores_of(gf_graph *g, gf_semaphore *const *sems, int count);
static void gf__semaphore_unref(void *sem);
static gf_result gf__pool_alloc(gf__capture *cap, size_t bytes, gf_buffer **out);
/* diagnostics: race detector, hang report, profiler. The core path asks GF__RACE_ON before
   each call into the detector: off, it costs that one load. */
#define GF__RACE_ON(dev) gf__atomic_load_int(&(dev)->race_on)
/* One access of an operation. A graph keeps its commands' in capture order, each launch's
   tagged with its index (launch_index of gf_graph_set_kernel_args; -1: not a launch), a launch
   with no buffer argument as one entry without a root, so new arguments replace its own. */
/* One access a command makes (root: the buffer), or in a graph's list a semaphore signal or
   wait it captured (root NULL, sem set): its launches order by them as the stream would. */
/* op names the operation in reports: a literal, or a name the detector interned (kept until the
   device closes), so that neither building nor keeping an access copies text. */
typedef struct gf__race_use { gf_buffer *root; size_t lo, hi; const char *op; gf_semaphore *sem; int write, launch, sem_wait; } gf__race_use;
/* faults on demand (>>faults): what an operation counts as, and the check at its start,
   which costs two relaxed loads while no rule is set and the device is not lost */
enum { GF__FK_LAUNCH, GF__FK_COPY, GF__FK_FILL, GF__FK_OP, GF__FK_BUFFER, GF__FK_SYNC, GF__FK_ALLOC, GF__FK_LOST, GF__FK_ENTRY };
static gf_result gf__fault_point(gf_device *dev, int kind, const char *fn);
static GF__TLS int gf__faults_inside;   /* > 0: the library's own waits (a close, a destroy, a set's pacing): never failed on purpose */
#define GF__FAULT_POINT(dev, kind, fn) \
    (((gf__atomic_load_int(&gf__faults_armed) | gf__atomic_load_int(&(dev)->lost)) && !gf__faults_inside) ? gf__fault_point((dev), (kind), (fn)) : GF_OK)
/* A call that is not a counted operation (a query, an object's creation, a capture's begin, a
   trim) on a device a lost rule made lost fails as on a real lost device; it counts nothing. */
static gf_result gf__device_lost(gf_device *dev, const char *fn);
#define GF__LOST_POINT(dev, fn) \
    ((gf__atomic_load_int(&(dev)->lost) && !gf__faults_inside) ? gf__device_lost((dev), (fn)) : GF_OK)
static gf_result gf__wait_device(gf_device *dev);   /* gf_device_synchronize, as the library's own wait */
static void gf__race_op(gf_stream *s, const gf__cmd *c);
static void gf__budgets_free(gf_device *dev);
static void gf__race_capture(gf_graph *g, const gf__cmd *c, int launch);
static void gf__race_retarget(gf_graph *g, int launch, const gf__cmd *c);
static void gf__race_take(gf_graph *target, const gf_graph *from);
static void gf__race_record(gf_event *ev, gf_stream *s);
static void gf__race_wait(gf_stream *s, gf_event *ev);
static void gf__race_signal(gf_stream *s, gf_semaphore *sem);
static void gf__race_sem_wait(gf_stream *s, gf_semaphore *sem);
/* What a wait's success teaches the host: the clock of the stream (the event) as the wait
   began, since another thread may queue on it (record it anew) meanwhile. Empty: detector off. */
typedef struct gf__race_seen { uint64_t *vc; int n; } gf__race_seen;
static gf__race_seen gf__race_seen_stream(gf_stream *s);
static gf__race_seen gf__race_seen_event(gf_event *ev);
static void gf__race_seen_done(gf_device *dev, gf__race_seen *seen, int done);
static int gf__race_abort;                  /* atomic: GPUFLOW_RACE_CHECK=abort (gf__race_log) */
static void gf__race_free(gf_buffer *buf, gf_stream *s);
static void gf__race_forget(gf_buffer *buf);
static void gf__race_slot_release(gf_stream *s);
static void gf__race_close(gf_device *dev);
static void gf__hang_report(gf_device *dev, const char *what);
static void gf__trace_run_begin(const gf_device *dev);                         /* >>profiler */
static gf_result gf__trace_run_write(gf_device *dev, const char *path);
static const char *gf__op_name(gf_op_kind k);
/* the profiler wraps each operation in two timing events: begin gives the record's index, or
   -1 when profiling is off */
static int gf__prof_begin(gf_stream *s, gf_op_kind kind, const char *name, uint64_t bytes, uint64_t flow_from);
static void gf__prof_end(gf_stream *s, int rec, gf_result r);
static void gf__profiler_free(gf_device *dev);

/* ---- names --------------------------------------------------------------------------- >>names */
/* whether a code read from outside (a recording) is one of gf_result's: only such a code may be
   made a gf_result (C++ leaves a value outside the enum's range undefined) */
static int gf__result_known(int32_t code) { return code >= GF_ERROR_DEVICE_LOST && code <= GF_TIMEOUT; }

GPUFLOW_IMPL const char *gf_result_name(gf_result r) {
    switch (r) {
    case GF_OK: return "GF_OK";
    case GF_NOT_READY: return "GF_NOT_READY";
    case GF_TIMEOUT: return "GF_TIMEOUT";
    case GF_ERROR_INVALID_ARGUMENT: return "GF_ERROR_INVALID_ARGUMENT";
    case GF_ERROR_INVALID_HANDLE: return "GF_ERROR_INVALID_HANDLE";
    case GF_ERROR_OUT_OF_RANGE: return "GF_ERROR_OUT_OF_RANGE";
    case GF_ERROR_OUT_OF_MEMORY: return "GF_ERROR_OUT_OF_MEMORY";
    case GF_ERROR_BACKEND_UNAVAILABLE: return "GF_ERROR_BACKEND_UNAVAILABLE";
    case GF_ERROR_NO_DEVICE: return "GF_ERROR_NO_DEVICE";
    case GF_ERROR_NOT_SUPPORTED: return "GF_ERROR_NOT_SUPPORTED";
    case GF_ERROR_WRONG_DEVICE: return "GF_ERROR_WRONG_DEVICE";
    case GF_ERROR_CAPTURE: return "GF_ERROR_CAPTURE";
    case GF_ERROR_CYCLE: return "GF_ERROR_CYCLE";
    case GF_ERROR_INVALID_STATE: return "GF_ERROR_INVALID_STATE";
    case GF_ERROR_NOT_FOUND: return "GF_ERROR_NOT_FOUND";
    case GF_ERROR_BUILD: return "GF_ERROR_BUILD";
    case GF_ERROR_DRIVER: return "GF_ERROR_DRIVER";
    case GF_ERROR_DEVICE_LOST: return "GF_ERROR_DEVICE_LOST";
    }
    return "GF_(unknown result)";
}

GPUFLOW_IMPL const char *gf_last_error(void) { return gf__error_text; }

#define GF__BACKEND_NAME_ROW(ID, name) #name,
static const char *const gf__backend_names[GF_BACKEND_COUNT] = { "auto", GF__BACKENDS(GF__BACKEND_NAME_ROW) };
#undef GF__BACKEND_NAME_ROW

GPUFLOW_IMPL const char *gf_backend_name(gf_backend b) {
    return b >= GF_BACKEND_AUTO && b < GF_BACKEND_COUNT ? gf__backend_names[b] : "unknown";
}

/* ---- validation ----------------------------------------------------------------- >>validation */
static int gf__is(const void *obj, gf__type type) {
    return obj != NULL && *(const uint32_t *)obj == (uint32_t)type;
}
static const char *gf__type_name(gf__type t) {
    switch (t) {
    case GF__T_DEVICE: return "gf_device"; case GF__T_BUFFER: return "gf_buffer";
    case GF__T_STREAM: return "gf_stream"; case GF__T_EVENT: return "gf_event";
    case GF__T_EVENT_POOL: return "gf_event_pool"; case GF__T_STREAM_POOL: return "gf_stream_pool";
    case GF__T_STREAM_SET: return "gf_stream_set"; case GF__T_FLOW: return "gf_flow";
    case GF__T_GRAPH: return "gf_graph"; case GF__T_MODULE: return "gf_module";
    case GF__T_KERNEL: return "gf_kernel"; case GF__T_GRAPH_POOL: return "gf_graph_pool";
    case GF__T_SEMAPHORE: return "gf_semaphore"; case GF__T_BUDGET: return "gf_budget";
    case GF__T_DEAD: case GF__T_PENDING: break;
    }
    return "object";
}
/* Says why a handle is refused; gf__bad_handle's value is always GF_ERROR_INVALID_HANDLE. */
static void gf__say_bad_handle(const char *fn, const char *param, const void *obj, gf__type want) {
    if (!obj) gf__set_error(GF_ERROR_INVALID_HANDLE, "%s: %s is NULL", fn, param);
    else gf__set_error(GF_ERROR_INVALID_HANDLE, "%s: %s is not a live %s (wrong type or destroyed)", fn, param, gf__type_name(want));
}
#define gf__bad_handle(fn, param, obj, want) (gf__say_bad_handle((fn), (param), (obj), (want)), GF_ERROR_INVALID_HANDLE)
/* The public name of the call a function serves, for messages: a recorded call's body is
   gf__call_<name> (>>record), whose public entry point is gf_<name>. Error paths only. */
static const char *gf__api_name(const char *fn) {
    static GF__TLS char name[96];
    if (strncmp(fn, "gf__call_", 9) != 0) return fn;
    snprintf(name, sizeof name, "gf_%s", fn + 9);
    return name;
}
#define GF__FN gf__api_name(__func__)
/* Returns from the calling function when obj is not a live object of the given type. */
/* The NULL test is spelled out (gf__is makes it too) so that the code after the check visibly
   has a non-NULL handle, also where gf__is is not looked into. */
#define GF__CHECK(obj, T) \
    do { if (!(obj) || !gf__is((obj), (T))) return gf__bad_handle(GF__FN, #obj, (obj), (T)); } while (0)
/* The same in a helper that several calls share: fn names the call the user made. */
#define GF__CHECK_IN(fn, obj, T) \
    do { if (!(obj) || !gf__is((obj), (T))) return gf__bad_handle((fn), #obj, (obj), (T)); } while (0)
/* The same for functions that return nothing (destroy, close): they only set the error text. */
#define GF__CHECK_VOID(obj, T) \
    do { if (!(obj) || !gf__is((obj), (T))) { gf__say_bad_handle(GF__FN, #obj, (obj), (T)); return; } } while (0)
/* A destroy or close of NULL does nothing, as free(NULL); any other bad handle is refused. */
#define GF__CHECK_DESTROY(obj, T) \
    do { if (!(obj)) return; GF__CHECK_VOID(obj, T); } while (0)
/* First in a call that makes an object: every failure, even of a bad handle, leaves NULL in *out. */
#define GF__OUT_NULL(out) \
    do { if (out) *(out) = NULL; } while (0)
#define GF__CHECK_OUT(out) \
    do { if (!(out)) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", GF__FN, #out); } while (0)
#define GF__SAME_DEVICE(a, b) \
    do { if ((a) != (b)) return gf__fail(GF_ERROR_WRONG_DEVICE, \
         "%s: objects of two different devices used together", GF__FN); } while (0)

/* offset + bytes <= size, without overflow; bytes must be non-zero. */
static gf_result gf__check_range(const char *fn, const gf_buffer *buf, size_t offset, size_t bytes) {
    if (bytes == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: size is 0", fn);
    if (bytes > buf->size || offset > buf->size - bytes)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "%s: range [%llu, +%llu) is past the buffer's %llu bytes",
                        fn, (unsigned long long)offset, (unsigned long long)bytes, (unsigned long long)buf->size);
    return GF_OK;
}

/* ---- backends --------------------------------------------------------------------- >>backends */
#define GF__BACKEND_MACRO_ROW(ID, name) "GPUFLOW_" #ID,
static const char *const gf__backend_macros[GF_BACKEND_COUNT] = { "", GF__BACKENDS(GF__BACKEND_MACRO_ROW) };
#undef GF__BACKEND_MACRO_ROW

static int gf__backend_valid(gf_backend b) { return b > GF_BACKEND_AUTO && b < GF_BACKEND_COUNT; }

/* Loads b's driver for fn; GF_OK, or why not (compiled out, library missing, ...). */
static gf_result gf__backend_load(const char *fn, gf_backend b, const gf__backend **out) {
    const gf__backend *be;
    if (!gf__backend_valid(b))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: backend %d is not a gf_backend", fn, (int)b);
    if (!(be = gf__backend_of(b)))
        return gf__fail(GF_ERROR_BACKEND_UNAVAILABLE,
                        "%s backend is not compiled in: build with -D%s (its vendor headers on the include path)",
                        gf_backend_name(b), gf__backend_macros[b]);
    *out = be;
    return be->load();
}

/* Questions, not failures: a backend that is not there is not logged; gf_last_error says why. */
GPUFLOW_IMPL int gf_backend_available(gf_backend b) {
    const gf__backend *be;
    gf_result r;
    if (b == GF_BACKEND_AUTO) return 1;   /* AUTO always finds one: the stub */
    gf__quiet++;
    r = gf__backend_load(__func__, b, &be);
    gf__quiet--;
    return r == GF_OK;
}

GPUFLOW_IMPL int gf_device_count(gf_backend b) {
    const gf__backend *be = NULL;
    int n = 0;
    gf_result r;
    if (b == GF_BACKEND_AUTO) {   /* a sum: no one backend's reason is the answer's */
        gf__error_keep keep;
        int total = 0;
        gf_backend k;
        gf__error_keep_begin(&keep);
        for (k = (gf_backend)(GF_BACKEND_AUTO + 1); k < GF_BACKEND_COUNT; k = (gf_backend)(k + 1)) total += gf_device_count(k);
        gf__error_keep_end(&keep, NULL);
        return total;
    }
    gf__quiet++;
    if ((r = gf__backend_load(__func__, b, &be)) == GF_OK) r = be->device_count(&n);
    gf__quiet--;
    return r == GF_OK ? n : 0;
}

/* ---- devices ----------------------------------------------------------------------- >>devices */
/* The devices open now, process-wide: the other side of a copy or wait across devices is
   checked against it, so an object left over from a closed device is refused by name without
   its device being read. */
static gf__spin gf__open_lock;
static gf_device **gf__open_list;
static int gf__open_count, gf__open_cap;
/* dev's name in messages; open: which open of one device it is (the first: 1). */
static void gf__device_tag(gf_device *dev, int open) {
    char where[48];
    if (dev->index < 0) snprintf(where, sizeof where, "%s, the program's own", dev->be->name);
    else if (open > 1) snprintf(where, sizeof where, "%s %d, open #%d", dev->be->name, dev->index, open);
    else snprintf(where, sizeof where, "%s %d", dev->be->name, dev->index);
    snprintf(dev->tag, sizeof dev->tag, "'%s' (%s)", dev->info.name, where);
}
/* Adds dev; a second open of one device is told apart in its tag, by a number above those of
   the opens still there (so no two open handles read alike). */
static int gf__open_devices_add(gf_device *dev) {
    int ok, i;
    dev->open_number = 1;
    gf__spin_lock(&gf__open_lock);
    for (i = 0; i < gf__open_count; i++)
        if (dev->index >= 0 && gf__open_list[i]->be == dev->be && gf__open_list[i]->index == dev->index && gf__open_list[i]->open_number >= dev->open_number)
            dev->open_number = gf__open_list[i]->open_number + 1;
    if ((ok = gf__grow((void **)&gf__open_list, &gf__open_cap, gf__open_count + 1, sizeof *gf__open_list)) != 0) gf__open_list[gf__open_count++] = dev;
    gf__spin_unlock(&gf__open_lock);
    if (dev->open_number > 1) gf__device_tag(dev, dev->open_number);
    return ok;
}
static void gf__open_devices_remove(gf_device *dev) {
    int i;
    gf__spin_lock(&gf__open_lock);
    for (i = 0; i < gf__open_count; i++)
        if (gf__open_list[i] == dev) { gf__open_list[i] = gf__open_list[--gf__open_count]; break; }
    if (!gf__open_count) { gf__free(gf__open_list); gf__open_list = NULL; gf__open_cap = 0; }
    gf__spin_unlock(&gf__open_lock);
}
static int gf__device_is_open(const gf_device *dev) {   /* never reads *dev */
    int i, open = 0;
    gf__spin_lock(&gf__open_lock);
    for (i = 0; i < gf__open_count && !open; i++) open = gf__open_list[i] == dev;
    gf__spin_unlock(&gf__open_lock);
    return open;
}

static void gf__device_free(gf_device *dev) {
    int i;
    gf__retired_collect(dev, 1);   /* the device is idle: every fence has passed, and what waited for idle goes */
    gf__free(dev->retired);
    gf__free(dev->idle);
    gf__free(dev->trace_path);
    gf__mutex_destroy(&dev->retired_lock);
    gf__mutex_destroy(&dev->idle_lock);
    gf__cache_trim(dev);
    for (i = 0; i < dev->graph_count; i++)   /* graphs are shells the device recycles; a graph releases its own parts */
        if (dev->graphs[i]->type == GF__T_GRAPH && !dev->graphs[i]->part_of) gf__graph_release(dev->graphs[i]);
    for (i = 0; i < dev->graph_count; i++) gf__free(dev->graphs[i]);
    if (dev->sync_stream) gf__stream_free(dev->sync_stream);
    if (dev->peer_stream) gf__stream_free(dev->peer_stream);
    if (dev->outside_stream) gf__stream_free(dev->outside_stream);
    if (dev->events) gf__event_pool_free(dev->events);   /* the waiter thread has stopped */
    gf__stages_free(dev, dev->stage_idle, 1);   /* every stream drained: no callback holds one */
    gf__stages_free(dev, dev->stage_lost, 1);
    gf__mutex_destroy(&dev->stage_lock);
    if (dev->native) dev->be->device_close(dev);
    gf__cond_destroy(&dev->released);
    gf__mutex_destroy(&dev->lock);
    gf__free(dev->streams);
    gf__free(dev->graphs);
    for (i = 0; i < dev->shell_count; i++) gf__free(dev->shells[i]);
    gf__free(dev->shells);
    gf__free(dev->pinned);
    gf__budgets_free(dev);
    gf__race_close(dev);
    dev->type = GF__T_DEAD;
    gf__free(dev);
}

/* Debugging switches from the environment, read at open: GPUFLOW_RACE_CHECK=1 turns the race
   detector on, GPUFLOW_HANG_MS=N logs the device's state when a wait lasts longer than N ms. */
/* GPUFLOW_* switches, read strictly: a value that is not understood is named in a warning and
   leaves the switch off; one that is understood is confirmed at info level. */
static int gf__env_word(const char *v, const char *const *words) {
    int i;
    size_t j;
    for (i = 0; words[i]; i++) {
        for (j = 0; v[j] && words[i][j] && (v[j] >= 'A' && v[j] <= 'Z' ? v[j] | 0x20 : v[j]) == words[i][j]; j++) {}   /* letters' case only */
        if (!v[j] && !words[i][j]) return 1;
    }
    return 0;
}
/* 1 on, 0 off (also unset, empty or not understood). */
static int gf__env_switch(const char *name) {
    static const char *const on[] = { "1", "on", "yes", "true", NULL }, *const off[] = { "0", "off", "no", "false", NULL };
    const char *v = getenv(name);
    if (!v || !*v || gf__env_word(v, off)) return 0;
    if (gf__env_word(v, on)) return 1;
    gf__env_warn("gpuflow: %s=%s is not understood (1, on, yes, true or 0, off, no, false); it stays off", name, v);
    return 0;
}
/* v as a whole number, decimal digits only (no sign, space or base: strtol takes " 4"), at
   most max: 1 and *out, else 0. Every count the environment gives is read so. */
static int gf__env_digits(const char *v, uint64_t max, uint64_t *out) {
    const char *p = v;
    uint64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (digit > max || n > (max - digit) / 10) return 0;
        n = n * 10 + digit;
    }
    if (*p || p == v) return 0;
    *out = n;
    return 1;
}
/* A count of milliseconds: 0 (off) to max; else a warning and 0. */
static unsigned gf__env_ms(const char *name, unsigned max) {
    const char *v = getenv(name);
    uint64_t n = 0;
    if (!v || !*v) return 0;
    if (!gf__env_digits(v, max, &n)) {
        gf__env_warn("gpuflow: %s=%s is not understood (whole milliseconds, 0 to %u); it stays off", name, v, max);
        return 0;
    }
    return (unsigned)n;
}
/* A size in bytes from the environment: fallback when unset, or (a warning) not a whole number
   of at least 1 (strtoull would take "-1", and clamp past 2^64). warned: where a variable read
   again and again (at each cache write) notes that its warning was given, or NULL. */
static uint64_t gf__env_bytes(const char *name, uint64_t fallback, int *warned) {
    const char *v = getenv(name);
    uint64_t n = 0;
    if (!v || !*v) return fallback;
    if (!gf__env_digits(v, UINT64_MAX, &n) || !n) {
        if (!warned || !gf__atomic_xchg_int(warned, 1))
            gf__env_warn("gpuflow: %s=%s: expected a number of bytes; the default (%llu) holds", name, v, (unsigned long long)fallback);
        return fallback;
    }
    return n;
}
static void gf__env_unknown(void) {   /* once per process, at the first device's open */
    static int checked;
    const char *name;
    size_t n;
    int at = 0;
    if (gf__atomic_xchg_int(&checked, 1)) return;   /* once per process */
    (void)gf__stderr_level_now();   /* a GPUFLOW_LOG it does not understand is named now, not at the first message */
    while ((name = gf__env_next_unknown(&at, &n)) != NULL)
        gf__env_warn("gpuflow: %.*s is not a variable gpuflow reads (it reads GPUFLOW_BACKEND, _CACHE_DIR, _CACHE_LIMIT, _FAULTS, _HANG_MS, _LOG, "
                   "_OPENCL_PLATFORM, _RACE_CHECK, _RECORD, _RECORD_LIMIT, _STATS, _STUB_DEVICES, _STUB_THREADS, _SYNC, _SYNC_DEBUG, _TRACE)", (int)n, name);
}

static void gf__env_record(void);                          /* >>record */
static void gf__rec_env_faults(const char *spec, gf_result r);
static int gf__rec_on;                      /* atomic: recording; every recorded call reads it */
static GF__TLS int gf__rec_late_wanted;     /* inside a recorded async copy from host memory */
static GF__TLS uint64_t gf__rec_late_token; /* that copy's bytes, seen in stream order, are snapshot number this */
static uint64_t gf__rec_late_enqueue(gf_stream *s, const gf__cmd *c);
static void gf__rec_late_cancel(uint64_t number);
static void gf__rec_late_forget(gf_device *dev);
static void gf__rec_gone(const void *obj);
static void gf__rec_made_buffer(const gf_buffer *buf);
static gf_result gf__recorded_cond_begin(gf_stream *s, gf_buffer *cond, size_t offset, int what, gf__cond_test test);
static gf_result gf__recorded_cond_end(gf_stream *s, int what);
static void gf__recorded_capture_abandon(gf_stream *s);

/* GPUFLOW_FAULTS: the rules of gf_faults_set, once per process, at the first device's open. */
static void gf__env_faults(void) {
    static int read;
    const char *v = getenv("GPUFLOW_FAULTS");
    gf__error_keep keep;
    char why[sizeof gf__error_text];
    gf_result r;
    if (gf__atomic_xchg_int(&read, 1) || !v || !*v) return;
    gf__error_keep_begin(&keep);   /* said once, below, with the variable named */
    r = gf_faults_set(v);
    gf__error_keep_end(&keep, why);
    gf__rec_env_faults(v, r);
    if (r == GF_OK) gf__notice(GF_LOG_WARNING, "gpuflow: GPUFLOW_FAULTS=%s: these operations will fail on purpose", v);
    else gf__env_warn("gpuflow: GPUFLOW_FAULTS=%s is not understood (%s); no fault is injected", v, why);
}

static void gf__device_env(gf_device *dev) {
    unsigned hang = gf__env_ms("GPUFLOW_HANG_MS", 86400000u);   /* a day at most */
    char *trace = gf__env_path("GPUFLOW_TRACE");
    gf__env_unknown();
    gf__env_record();   /* first: GPUFLOW_FAULTS is then recorded */
    gf__env_faults();
    if (trace && *trace) {
        if (gf_profiler_enable(dev, GF_PROFILE_ON) == GF_OK) {
            gf__trace_run_begin(dev);
            gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_TRACE: %s is profiled; its trace goes to %s at close", dev->tag, trace);
            dev->trace_path = trace;
            trace = NULL;
        } else {
            gf__env_warn("gpuflow: GPUFLOW_TRACE=%s: the profiler could not be turned on (%s)", trace, gf__error_text);
        }
    }
    gf__free(trace);
    if (gf__env_switch("GPUFLOW_SYNC")) {
        dev->sync_each = 1;
        gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_SYNC: every operation on %s waits for itself", dev->tag);
    }
    dev->stats_at_close = gf__env_switch("GPUFLOW_STATS");
    {
        const char *race = getenv("GPUFLOW_RACE_CHECK");
        int halt = race && !strcmp(race, "abort");
        if (halt || gf__env_switch("GPUFLOW_RACE_CHECK")) {
            if (halt) gf__atomic_store_int(&gf__race_abort, 1);
            gf_race_check_enable(dev, GF_RACE_CHECK_ON);
            gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_RACE_CHECK: the race detector is on for %s%s", dev->tag,
                       halt ? " (the first race found ends the process)" : "");
        }
    }
    if (hang) {
        dev->hang_ms = hang;
        gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_HANG_MS=%u: a wait longer than that reports the state of %s", hang, dev->tag);
    }
}

/* ---- hidden waits: GPUFLOW_SYNC_DEBUG ----------------------------------------------- >>syncdebug */
/* Every place where a call other than a synchronize, a wait or a close holds the host until
   work on the device has passed calls this first, with the call, the stream (or NULL: the
   device) and what it waits for. GPUFLOW_SYNC_DEBUG=warn logs each such wait (a warning, with
   the call and the stream), error makes the call fail instead (GF_ERROR_INVALID_STATE; a
   destroy keeps its object), unset or off says nothing. Read at each such wait, which costs
   nothing beside the wait itself. */
static int gf__sync_debug_mode(void) {   /* 0 off, 1 warn, 2 error */
    const char *v = getenv("GPUFLOW_SYNC_DEBUG");
    if (!v || !*v || !strcmp(v, "off") || !strcmp(v, "0")) return 0;
    if (!strcmp(v, "warn") || !strcmp(v, "1")) return 1;
    if (!strcmp(v, "error") || !strcmp(v, "2")) return 2;
    gf__env_warn("gpuflow: GPUFLOW_SYNC_DEBUG=%s: expected warn, error or off; the check stays off", v);
    return 0;
}
static gf_result gf__hidden_wait(const char *call, const gf_stream *s, const char *what) {
    int mode = gf__sync_debug_mode();
    char where[96] = "the device";
    if (!mode) return GF_OK;
    if (s) snprintf(where, sizeof where, "stream '%s'", s->label);
    if (mode == 1) {
        gf__notice(GF_LOG_WARNING, "GPUFLOW_SYNC_DEBUG: %s holds the host until %s on %s", call, what, where);
        return GF_OK;
    }
    return gf__fail(GF_ERROR_INVALID_STATE, "GPUFLOW_SYNC_DEBUG=error: %s would hold the host until %s on %s; refused", call, what, where);
}
/* Whether s has work outstanding now: a destroy then has to wait for it. */
static int gf__stream_busy(gf_stream *s) {
    gf_result r;
    gf__lock(&s->lock);
    r = s->capture && s->capture->by_driver ? GF_OK : s->dev->be->stream_query(s);
    gf__unlock(&s->lock);
    return r != GF_OK;
}

/* ---- waits that could never end -------------------------------------------------- >>deadlocks */
/* fork(): the child gets the parent's memory but not its threads (stub workers, callback and
   waiter threads) nor its driver context, so a device opened before the fork can neither run
   work nor finish a wait there. A child handler counts forks; a device remembers the count it
   was opened under and refuses to be used past a fork.
   A driver loaded before the fork is refused in the child (gf__driver_load), the stub works.
   The process-wide locks are held across the fork, so that the child gets them free (a thread
   of the parent inside one would otherwise leave it taken for ever), and a logger's calls in
   progress on the parent's threads are not waited for by the child's gf_set_logger. */
#if !defined(_WIN32)
static void gf__rec_after_fork(void);   /* >>record */
static void gf__fork_prepare(void) { gf__driver_lock_acquire(); gf__log_lock_acquire(); gf__spin_lock(&gf__open_lock); }
static void gf__fork_parent(void) { gf__spin_unlock(&gf__open_lock); gf__log_lock_release(); gf__driver_lock_release(); }
static void gf__on_fork_child(void) {
    gf__fork_count = gf__fork_count + 1;
    gf__atomic_store_int(&gf__log_calls[0], 0);   /* the threads in the logger are the parent's */
    gf__atomic_store_int(&gf__log_calls[1], 0);
    gf__atomic_store_int(&gf__log_swapping, 0);
    gf__fork_parent();
    gf__rec_after_fork();
}
static pthread_once_t gf__fork_once = PTHREAD_ONCE_INIT;
static void gf__fork_register(void) { pthread_atfork(gf__fork_prepare, gf__fork_parent, gf__on_fork_child); }
static void gf__fork_hooks(void) { pthread_once(&gf__fork_once, gf__fork_register); }
#endif
static gf_result gf__refuse_forked(const gf_device *dev, const char *fn) {
    if (dev->fork_count == gf__fork_count) return GF_OK;
    return gf__fail(GF_ERROR_INVALID_STATE, "%s: the device was opened before fork(); its threads and driver state stayed in the "
                    "parent: open a fresh device in the child (and leave this one alone there)", fn);
}
/* The stream whose host callback this thread is running (NULL: none). A wait from inside it
   for that stream, or for the whole device, would wait for the callback itself. */
static GF__TLS gf_stream *gf__callback_stream;
static GF__TLS uint64_t gf__callback_seq;   /* that callback's place in its stream's order (0: unknown) */
static GF__TLS gf_device *gf__budget_calling;   /* the device whose budget's callback this thread runs */
static GF__TLS gf__waiter *gf__waiter_self;     /* the async waiter whose thread this is (NULL: none) */
static GF__TLS gf_event *gf__waiter_event;      /* the event whose gf_event_on_complete callback runs on this thread */
static int gf__waits_behind_callback(gf_stream *t, uint64_t upto, int depth);
static gf_result gf__refuse_self_wait(const char *fn, gf_device *dev, gf_stream *s) {
    gf_stream *cb = gf__callback_stream;
    gf_result r = gf__refuse_forked(dev, fn);
    if (r != GF_OK || !cb) return r;
    if (s && s != cb && cb->dev == dev && dev->be->stream_query(s) == GF_NOT_READY && gf__waits_behind_callback(s, UINT64_MAX, GF__WAIT_CHAIN))
        return gf__fail(GF_ERROR_INVALID_STATE, "%s: called from a host callback of stream '%s', it would wait for stream '%s', which "
                        "waits (itself or through other streams) for work queued on '%s' after that callback, and never end; wait "
                        "outside the callback (signal a thread of your own, or use gf_event_on_complete)", fn, cb->label, s->label, cb->label);
    if (s ? cb != s : cb->dev != dev) return GF_OK;
    return gf__fail(GF_ERROR_INVALID_STATE, "%s: called from a host callback of stream '%s', it would wait for that callback to "
                    "return and never end; wait outside the callback (signal a thread of your own, or use gf_event_on_complete)",
                    fn, cb->label);
}

/* The same for a wait for the whole device (close, synchronize, trim), which a callback of
   another device's stream may not make either: that device's copies and waits between the two
   (gpuflow's own stages, bridges and peer streams) may be queued behind the callback, and no
   chain of those is traced. */
static gf_result gf__refuse_device_wait(const char *fn, gf_device *dev) {
    gf_stream *cb = gf__callback_stream;
    gf_result r = gf__refuse_self_wait(fn, dev, NULL);
    if (r != GF_OK || !cb || cb->dev == dev) return r;
    return gf__fail(GF_ERROR_INVALID_STATE, "%s: called from a host callback of stream '%s' of another device, it would wait for all "
                    "of %s's work, which may wait for work queued on '%s' after that callback (a copy or a wait between the two "
                    "devices), and never end; call it outside the callback (signal a thread of your own, or use gf_event_on_complete)",
                    fn, cb->label, dev->tag, cb->label);
}

/* Opens device index of b, or (native != NULL) a gf_device over an engine's own device. */
static gf_result gf__device_open_on(gf_backend b, int index, const gf_native_device *native, gf_device **out) {
    const gf__backend *be = NULL;
    gf_device *dev;
    gf_result r;
    int count = 0;
    if ((r = gf__backend_load(native ? "gf_device_open_native" : "gf_device_open", b, &be)) != GF_OK) return r;
    if (native && !be->device_open_native)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_device_open_native: the %s backend has no native device to open on", be->name);
    if ((r = be->device_count(&count)) != GF_OK) return r;
    if (count == 0) return gf__fail(GF_ERROR_NO_DEVICE, "%s: the driver loaded but reports no device", gf_backend_name(b));
    if (!native && (index < 0 || index >= count))
        return gf__fail(GF_ERROR_NO_DEVICE, "%s: device index %d is out of range: %d device%s, indices 0 to %d "
                        "(gf_device_count says how many)", gf_backend_name(b), index, count, count == 1 ? "" : "s", count - 1);
    if (!(dev = (gf_device *)gf__calloc(sizeof *dev))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_device_open: out of host memory");
    dev->type = GF__T_DEVICE;
    dev->be = be;
    dev->index = native ? -1 : index;
#if !defined(_WIN32)
    gf__fork_hooks();
#endif
    dev->fork_count = gf__fork_count;
    gf__mutex_init(&dev->lock);
    gf__cond_init(&dev->released);
    gf__mutex_init(&dev->stage_lock);
    gf__mutex_init(&dev->retired_lock);
    gf__mutex_init(&dev->idle_lock);
    gf__cache_init(dev);
    r = native ? be->device_open_native(dev, native) : be->device_open(dev, index);
    if (r != GF_OK) { dev->native = NULL; gf__device_free(dev); return r; }
    dev->info.backend = b;
    gf__device_tag(dev, 1);
    if (!dev->info.max_kernel_args_bytes) dev->info.max_kernel_args_bytes = GF__DEFAULT_KERNEL_ARGS_BYTES;
    if ((r = gf_event_pool_create(dev, NULL, &dev->events)) != GF_OK ||
        (r = gf__stream_new(dev, "gpuflow/sync", GF_PRIORITY_NORMAL, 1, &dev->sync_stream)) != GF_OK) {
        gf__device_free(dev);
        return r;
    }
    if (!gf__open_devices_add(dev)) { gf__device_free(dev); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_device_open: out of host memory"); }
    gf__device_env(dev);   /* last: the switches use the device's own events and streams */
    *out = dev;
    return GF_OK;
}

/* GPUFLOW_BACKEND's value: a backend's name, else AUTO (refused by the caller). */
static gf_backend gf__backend_from_env(const char *v) {
    gf_backend b;
    for (b = (gf_backend)(GF_BACKEND_AUTO + 1); b < GF_BACKEND_COUNT; b = (gf_backend)(b + 1))
        if (!strcmp(v, gf__backend_names[b])) return b;
    return GF_BACKEND_AUTO;
}

/* Text built in a fixed buffer: what does not fit is cut, never overrun. */
typedef struct gf__text { char *p; size_t cap, used; } gf__text;
static void gf__say(gf__text *t, const char *fmt, ...) GF__PRINTF(2, 3);
static void gf__say(gf__text *t, const char *fmt, ...) {
    va_list ap;
    int n;
    if (t->used + 1 >= t->cap) return;
    va_start(ap, fmt);
    n = vsnprintf(t->p + t->used, t->cap - t->used, fmt, ap);
    va_end(ap);
    if (n > 0) t->used = t->used + (size_t)n < t->cap ? t->used + (size_t)n : t->cap - 1;
}

static gf_result gf__call_device_open(gf_backend b, int index, gf_device **out) {
#define GF__BACKEND_WORD_ROW(ID, name) " " #name
    static const char every_name[] = GF__BACKENDS(GF__BACKEND_WORD_ROW);
#undef GF__BACKEND_WORD_ROW
    const char *env;
    char note[256] = "";
    gf__text said;   /* why each backend passed over did not open */
    gf_backend k;
    said.p = note; said.cap = sizeof note; said.used = 0;
    GF__CHECK_OUT(out);
    *out = NULL;
    if (b != GF_BACKEND_AUTO && !gf__backend_valid(b))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_open: backend %d is not a gf_backend", (int)b);
    if (b != GF_BACKEND_AUTO) return gf__device_open_on(b, index, NULL, out);
    env = getenv("GPUFLOW_BACKEND");
    if (env && *env) {
        gf_backend forced = gf__backend_from_env(env);
        if (forced == GF_BACKEND_AUTO) {   /* refused, not ignored: the program would run on a backend the user did not ask for */
            static int warned;
            if (!gf__atomic_xchg_int(&warned, 1))
                gf__env_warn("gpuflow: GPUFLOW_BACKEND=%s: expected one of:%s; gf_device_open(GF_BACKEND_AUTO) fails", env, every_name);
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "GPUFLOW_BACKEND=%s: expected one of:%s", env, every_name);
        }
        return gf__device_open_on(forced, index, NULL, out);
    }
    /* AUTO: the first compiled-in backend that opens, in registry order, remembering why the
       others did not. */
    for (k = (gf_backend)(GF_BACKEND_AUTO + 1); k < GF_BACKEND_COUNT; k = (gf_backend)(k + 1)) {
        gf__error_keep keep;
        gf_result r;
        if (!gf__backend_of(k)) continue;
        gf__error_keep_begin(&keep);   /* a backend passed over is said once, below, in the note */
        if ((r = gf__device_open_on(k, index, NULL, out)) != GF_OK) gf__say(&said, "%s%s: %s", said.used ? "; " : "", gf_backend_name(k), gf_last_error());
        gf__error_keep_end(&keep, NULL);
        if (r == GF_OK) {
            if (said.used) {
                gf__copy_str((*out)->info.note, sizeof (*out)->info.note, note);
                gf__notice(GF_LOG_INFO, "gf_device_open: chose %s; passed over %s", gf_backend_name(k), note);
            }
            return GF_OK;
        }
    }
    return gf__fail(GF_ERROR_NO_DEVICE, "gf_device_open: no backend has device %d (%s)", index, note);
}


/* What the program made on dev and did not destroy, named through the logger as Vulkan's
   validation layer does at vkDestroyDevice: the device frees only what it owns itself. */
static void gf__report_live(gf_device *dev) {
    static const struct { gf__type type; const char *name; } kinds[] = {
        { GF__T_EVENT, "event" }, { GF__T_EVENT_POOL, "event pool" }, { GF__T_STREAM_POOL, "stream pool" },
        { GF__T_STREAM_SET, "stream set" }, { GF__T_FLOW, "flow" }, { GF__T_GRAPH_POOL, "graph pool" },
        { GF__T_MODULE, "module" }, { GF__T_SEMAPHORE, "semaphore" }, { GF__T_BUDGET, "budget" }
    };
    char text[768];
    gf__text t;
    uint64_t buffers, bytes, pinned;
    int i, streams = 0, graphs = 0, named = 0;
    t.p = text; t.cap = sizeof text; t.used = 0;
    text[0] = 0;
    gf__lock(&dev->lock);
    for (i = 0; i < dev->stream_count; i++) streams += !dev->streams[i]->internal;
    if (streams) {
        gf__say(&t, "%d stream%s (", streams, streams == 1 ? "" : "s");
        for (i = 0; i < dev->stream_count; i++)
            if (!dev->streams[i]->internal && named++ < 4) gf__say(&t, "%s'%s'", named > 1 ? ", " : "", dev->streams[i]->label);
        gf__say(&t, "%s)", named > 4 ? ", ..." : "");
    }
    for (i = 0; i < dev->graph_count; i++) graphs += dev->graphs[i]->type == GF__T_GRAPH && !dev->graphs[i]->part_of;
    gf__unlock(&dev->lock);
    gf__spin_lock(&dev->mem_lock);
    buffers = dev->mem[GF_MEMORY_DEVICE].count + dev->mem[GF_MEMORY_MANAGED].count + dev->mem[GF_MEMORY_ASYNC].count;
    bytes = dev->mem[GF_MEMORY_DEVICE].bytes + dev->mem[GF_MEMORY_MANAGED].bytes + dev->mem[GF_MEMORY_ASYNC].bytes;
    pinned = dev->mem[GF_MEMORY_PINNED].count;
    gf__spin_unlock(&dev->mem_lock);
    if (buffers) gf__say(&t, "%s%llu buffer%s (%llu bytes)", t.used ? ", " : "", (unsigned long long)buffers,
                           buffers == 1 ? "" : "s", (unsigned long long)bytes);
    if (pinned) gf__say(&t, "%s%llu pinned host allocation%s", t.used ? ", " : "", (unsigned long long)pinned, pinned == 1 ? "" : "s");
    if (graphs) gf__say(&t, "%s%d graph%s", t.used ? ", " : "", graphs, graphs == 1 ? "" : "s");
    for (i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++) {
        int n = gf__atomic_load_int(&dev->live[kinds[i].type - GF__T_DEVICE]) - (kinds[i].type == GF__T_EVENT_POOL);   /* less the device's own */
        if (n > 0) gf__say(&t, "%s%d %s%s", t.used ? ", " : "", n, kinds[i].name, n == 1 ? "" : "s");
    }
    if (t.used) gf__notice(GF_LOG_WARNING, "gf_device_close: %s is closed with objects still alive: %s; destroy them first (what the device does not own leaks)",
                        dev->tag, text);
}

/* At close, what the environment asked for: GPUFLOW_TRACE's trace file, GPUFLOW_STATS's block
   (memory by kind with peaks, then each stream's counters), both after the device is idle. */
static void gf__env_at_close(gf_device *dev) {
    static const char *const kinds[GF_MEMORY_KIND_COUNT] = { "device", "pinned", "managed", "async", "cached", "pending", "imported" };
    gf_memory_stats st;
    int i, k;
    if (dev->trace_path) {
        gf__error_keep keep;
        char why[sizeof gf__error_text];
        gf_result r;
        gf__error_keep_begin(&keep);   /* said once, below, as a warning */
        r = gf__trace_run_write(dev, dev->trace_path);
        gf__error_keep_end(&keep, why);
        if (r == GF_OK)
            gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_TRACE: the trace of %s is in %s (open it in https://ui.perfetto.dev)", dev->tag, dev->trace_path);
        else
            gf__notice(GF_LOG_WARNING, "gpuflow: GPUFLOW_TRACE: the trace of %s could not be written: %s", dev->tag, why);
    }
    if (!dev->stats_at_close || gf_device_memory_stats(dev, &st) != GF_OK) return;
    gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_STATS: %s at close", dev->tag);
    for (k = 0; k < GF_MEMORY_KIND_COUNT; k++)
        gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_STATS:   memory %-8s %llu bytes in %llu (peak %llu bytes in %llu)", kinds[k],
                   (unsigned long long)st.kind[k].bytes, (unsigned long long)st.kind[k].count,
                   (unsigned long long)st.kind[k].peak_bytes, (unsigned long long)st.kind[k].peak_count);
    gf__lock(&dev->lock);
    for (i = 0; i < dev->stream_count; i++) {
        gf_stream *s = dev->streams[i];
        if (s->internal && !gf__atomic_load(&s->ops)) continue;   /* the device's own streams, when unused */
        gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_STATS:   stream '%s': %llu operations, %llu launches, %llu copies (%llu bytes), %llu callbacks",
                   s->label, (unsigned long long)gf__atomic_load(&s->ops), (unsigned long long)gf__atomic_load(&s->launches),
                   (unsigned long long)gf__atomic_load(&s->copies), (unsigned long long)gf__atomic_load(&s->bytes_copied),
                   (unsigned long long)gf__atomic_load(&s->callbacks));
    }
    gf__unlock(&dev->lock);
}

static void gf__call_device_close(gf_device *dev) {
    GF__CHECK_DESTROY(dev, GF__T_DEVICE);
    if (gf__refuse_device_wait("gf_device_close", dev) != GF_OK) return;   /* kept: closing waits for the device */
    if (gf__waiter_self && gf__waiter_self == dev->waiter) {   /* the close stops and frees the thread it runs on */
        gf__set_error(GF_ERROR_INVALID_STATE, "gf_device_close: called from a completion callback (gf_event_on_complete, a flow's "
                      "on_complete), which runs on the device's waiter thread that the close stops; close the device after it returns");
        return;
    }
    if (gf__budget_calling == dev) {
        gf__set_error(GF_ERROR_INVALID_STATE, "gf_device_close: called from a callback of one of the device's budgets, which holds "
                      "the budget until it returns; close the device after it");
        return;
    }
    gf__open_devices_remove(dev);
    gf__report_live(dev);
    gf__wait_device(dev);
    if (dev->outside_stream) (void)gf__stream_sync(dev->outside_stream);   /* other devices' copies of its memory */
    while (gf__atomic_load_int(&dev->bridges)) gf__sleep_us(200);   /* other devices' callbacks still hold its marks or stages */
    gf__env_at_close(dev);
    gf__waiter_stop(dev);
    gf__rec_late_forget(dev);   /* a recording's snapshots whose callbacks the driver dropped */
    gf__profiler_free(dev);
    gf__device_free(dev);
}

GPUFLOW_IMPL gf_backend gf_device_backend(const gf_device *dev) {
    return gf__is(dev, GF__T_DEVICE) ? dev->info.backend : GF_BACKEND_AUTO;
}
GPUFLOW_IMPL const char *gf_device_name(const gf_device *dev) {
    return gf__is(dev, GF__T_DEVICE) ? dev->info.name : "";
}
GPUFLOW_IMPL gf_result gf_device_get_info(gf_device *dev, gf_device_info *out) {
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    *out = dev->info;
    return GF_OK;
}
GPUFLOW_IMPL gf_result gf_device_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    size_t f = 0, t = 0;
    gf_result r;
    GF__CHECK(dev, GF__T_DEVICE);
    if (!free_bytes && !total_bytes)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_memory_info: both outputs are NULL");
    if ((r = dev->be->memory_info(dev, &f, &t)) != GF_OK) return r;
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return GF_OK;
}

/* Visits every stream the device had when the call began, one at a time in id order, each
   held by a sync reference meanwhile (a concurrent gf_stream_destroy waits for the visit rather
   than freeing the stream). A driver that is capturing a stream refuses to wait for it or to
   record there, so such a stream is passed over; a recording leaves the stream itself running
   what came before the capture, so that one is visited. Returns the first failure of visit;
   stop: the visits end at it (else they go on). Allocates nothing: the fallback of a destroy
   that cannot fence waits through it, and must not fail for want of memory. */
static gf_result gf__streams_visit(gf_device *dev, gf_result (*visit)(gf_stream *s, void *ctx), void *ctx, int stop) {
    uint64_t after = 0, last = gf__atomic_load(&dev->next_id);
    gf_result r = GF_OK;
    for (;;) {
        gf_stream *next = NULL;
        int i, native_capture = 0;
        gf_result ri;
        gf__lock(&dev->lock);
        for (i = 0; i < dev->stream_count; i++) {
            gf_stream *c = dev->streams[i];
            if (c->id > after && c->id <= last && (!next || c->id < next->id)) next = c;
        }
        if (next) { next->sync_refs++; native_capture = next->capture != NULL && next->capture->by_driver; }
        gf__unlock(&dev->lock);
        if (!next) break;
        after = next->id;
        if (!native_capture && (ri = visit(next, ctx)) != GF_OK && r == GF_OK) r = ri;
        gf__lock(&dev->lock);
        next->sync_refs--;
        gf__cond_broadcast(&dev->released);
        gf__unlock(&dev->lock);
        if (r != GF_OK && stop) break;
    }
    return r;
}
static gf_result gf__visit_sync(gf_stream *s, void *ctx) { (void)ctx; return s->fence_only ? GF_OK : gf__stream_sync(s); }

/* A lock that may be held while its holder waits for this thread: tried for a while, never
   waited for (0: still busy). */
static int gf__trylock_a_while(gf__mutex *m) {
    int i;
    for (i = 0; i < 64; i++) {
        if (gf__trylock(m)) return 1;
        gf__yield();
    }
    return 0;
}
/* The stream of dev with this id, held against its destroy as gf__streams_visit holds it
   (NULL: gone, or the device's lock is busy: the caller may hold locks of its own). */
static gf_stream *gf__stream_hold(gf_device *dev, uint64_t id) {
    gf_stream *u = NULL;
    int k;
    if (!gf__trylock_a_while(&dev->lock)) return NULL;
    for (k = 0; k < dev->stream_count && !u; k++) if (dev->streams[k]->id == id) u = dev->streams[k];
    if (u) u->sync_refs++;
    gf__unlock(&dev->lock);
    return u;
}
static void gf__stream_unhold(gf_stream *u) {
    gf__lock(&u->dev->lock);
    u->sync_refs--;
    gf__cond_broadcast(&u->dev->released);
    gf__unlock(&u->dev->lock);
}
/* Does t's work up to its place upto (UINT64_MAX: all of it) wait, itself or through the
   waits of the streams it waits for (depth more), for work queued on the running host
   callback's stream after that callback? Then a wait for it from the callback never ends. Read
   from each stream's notes of its latest operations (gf__op_note): a wait older than those,
   across devices, or through a stream being destroyed, is not seen. Locks are only tried (a
   busy one: not seen): another thread may hold a stream's lock while it waits for this
   callback (a recorded graph reading a condition back), and the caller may hold a lock. */
static int gf__waits_behind_callback(gf_stream *t, uint64_t upto, int depth) {
    const gf_stream *cb = gf__callback_stream;
    const uint64_t from = gf__callback_seq;
    gf_device *dev = t->dev;
    uint64_t next_id[GF__RECENT_OPS], next_seq[GF__RECENT_OPS], seq, last, low;
    int n = 0, i, behind = 0;
    if (!cb || !from || cb->dev != dev || !gf__trylock_a_while(&t->lock)) return 0;
    last = gf__atomic_load(&t->submitted);
    low = gf__atomic_load(&t->retired);
    if (last > GF__RECENT_OPS && low < last - GF__RECENT_OPS) low = last - GF__RECENT_OPS;
    for (seq = low + 1; seq <= last && seq <= upto && !behind; seq++) {
        const gf__op_note *note = &t->recent[seq % GF__RECENT_OPS];
        if (note->seq != seq || note->kind != GF_OP_WAIT || !note->waits_on_seq) continue;
        if (note->waits_on == cb->id) behind = note->waits_on_seq >= from;
        else if (depth > 1) { next_id[n] = note->waits_on; next_seq[n] = note->waits_on_seq; n++; }
    }
    gf__unlock(&t->lock);
    for (i = 0; i < n && !behind; i++) {
        gf_stream *u = gf__stream_hold(dev, next_id[i]);
        if (!u) continue;
        behind = gf__waits_behind_callback(u, next_seq[i], depth - 1);
        gf__stream_unhold(u);
    }
    return behind;
}
/* The same for the record an event's wait waits for (not the callback's own stream: that is
   gf__event_refuse_self_wait's direct case). */
static int gf__event_behind_callback(gf_event *ev, const gf__record_info *rec) {
    gf_stream *t;
    int behind;
    if (!gf__callback_stream || gf__callback_stream->dev != ev->dev || rec->stream_id == gf__callback_stream->id) return 0;
    if (!(t = gf__stream_hold(ev->dev, rec->stream_id))) return 0;
    behind = gf__waits_behind_callback(t, rec->stream_seq, GF__WAIT_CHAIN);
    gf__stream_unhold(t);
    return behind;
}
/* Waits for every stream the device had when the call began (as gf__streams_visit visits
   them), then frees what waited only for that work. */

static gf_result gf__wait_device(gf_device *dev) {
    gf_result r;
    gf__faults_inside++;
    r = gf_device_synchronize(dev);
    gf__faults_inside--;
    return r;
}
static gf_result gf__call_device_synchronize(gf_device *dev) {
    gf_result r;
    GF__CHECK(dev, GF__T_DEVICE);
    if ((r = gf__refuse_device_wait("gf_device_synchronize", dev)) != GF_OK) return r;
    if ((r = GF__FAULT_POINT(dev, GF__FK_SYNC, "gf_device_synchronize")) != GF_OK) return r;
    r = gf__streams_visit(dev, gf__visit_sync, NULL, 0);
    gf__retired_collect(dev, 0);   /* what waited for the work just finished */
    gf__idle_drain(dev, GF__IDLE_NOW);   /* the device was just waited for: what waits for idle goes too */
    return r;
}

/* A destroy that must first wait for queued work: if the wait fails, the object is kept (and
   the failure reported), never freed under work that may still touch it. */
static gf_result gf__settle_for_destroy(gf_device *dev, const char *fn, const char *what) {
    gf_result r = gf__wait_device(dev);
    if (r != GF_OK)
        return gf__fail(r, "%s: waiting for the device failed, so the %s was kept (queued work may still use it): %s", fn, what, gf__error_text);
    return GF_OK;
}

/* ---- captures in progress --------------------------------------------------------- >>captures */
static gf__capture *gf__capture_find(gf_device *dev, uint64_t id) {  /* dev->lock held */
    GF__HELD(&dev->lock);
    gf__capture *c;
    for (c = dev->captures; c; c = c->next) if (c->id == id) return c;
    return NULL;
}
static int gf__event_in_capture(gf_event *ev) {
    uint64_t id = gf__event_latest(ev).capture_id;
    int live;
    if (!id) return 0;
    gf__lock(&ev->dev->lock);
    live = gf__capture_find(ev->dev, id) != NULL;
    gf__unlock(&ev->dev->lock);
    return live;
}
static void gf__capture_use(gf__capture *c, gf_buffer *buf) {       /* dev->lock held */
    GF__HELD(&c->origin->dev->lock);
    int i;
    if (!buf) return;
    for (i = 0; i < c->buffer_count; i++) if (c->buffers[i] == buf) return;
    if (!gf__grow((void **)&c->buffers, &c->buffer_cap, c->buffer_count + 1, sizeof *c->buffers)) return;
    c->buffers[c->buffer_count++] = buf;
    gf__atomic_add_int(&buf->capture_uses, 1);
}

static void gf__capture_forget(gf_stream *s, gf_buffer *buf) {   /* the buffer is freed inside s's capture */
    gf__capture *c;
    int i;
    gf__lock(&s->dev->lock);
    for (i = 0, c = s->capture; c && i < c->buffer_count; i++)
        if (c->buffers[i] == buf) {
            c->buffers[i] = c->buffers[--c->buffer_count];
            gf__atomic_add_int(&buf->capture_uses, -1);
            break;
        }
    gf__unlock(&s->dev->lock);
}

/* ---- staged copies: pageable host memory on drivers that would block ---------------- >>staged */
/* Whether a copy on s with this host side goes through a stage (s->lock held): the backend
   asks for it, the memory is not pinned, and s does not capture. */
static int gf__host_staged(gf_stream *s, const void *host) {
    const gf__backend *be = s->dev->be;
    return host && be->host_pinned && !s->capture && !be->host_pinned(s->dev, host);
}
/* CUDA and HIP run a copy to or from pageable (malloc'd) memory synchronously with the host: a
   D2H into it waits for all earlier work on the stream. gpuflow's copies are asynchronous on
   every backend, so where the backend says so (host_pinned), a copy outside a capture from
   memory that is not pinned goes through a pinned stage: an H2D reads the source into the
   stage at once (the caller may reuse it on return, as with the driver) and copies from
   there; a D2H copies into the stage, and a host callback moves the bytes to the destination
   in stream order, before any later work on the stream. Stages are recycled per device; the
   callback touches only host memory and a mutex (CUDA forbids driver calls there). A capture
   keeps the direct copy: the driver records it as a graph node and replays it without
   blocking. */
typedef struct gf__stage {
    struct gf__stage *next;
    gf_device *dev;
    void *pinned; size_t cap;
    void *dst; size_t bytes;                     /* D2H: where the callback puts the bytes */
} gf__stage;

/* Powers of two from 64 KiB, then whole MiB: few distinct sizes, so stages get reused. */
static size_t gf__stage_size(size_t bytes) {
    size_t cap = (size_t)64 << 10, mib = (size_t)1 << 20;
    if (bytes > 16 * mib) return (bytes + mib - 1) & ~(mib - 1);
    while (cap < bytes) cap *= 2;
    return cap;
}

static void gf__stage_release(void *p) {
    gf__stage *st = (gf__stage *)p;
    st->dev->be->host_free(st->dev, st->pinned);
    gf__free(st);
}
/* now: at close (idle); else idle releases where the driver's free waits for the device */
static void gf__stages_free(gf_device *dev, gf__stage *st, int now) {   /* never from a callback */
    while (st) {
        gf__stage *next = st->next;
        if (now || !dev->be->release_waits || !gf__idle_push(dev, gf__stage_release, st, st->cap)) gf__stage_release(st);
        st = next;
    }
}

static gf_result gf__stage_get(gf_device *dev, size_t bytes, gf__stage **out) {
    gf__stage **link, *st = NULL, *idle = NULL;
    size_t cap = gf__stage_size(bytes);
    gf_result r;
    gf__lock(&dev->stage_lock);
    for (link = &dev->stage_idle; *link; link = &(*link)->next)
        if ((*link)->cap >= cap && (*link)->cap <= cap + cap / 4) {
            st = *link;
            *link = st->next;
            dev->stage_idle_bytes -= st->cap;
            break;
        }
    if (dev->stage_idle_bytes > GF__STAGE_IDLE_KEEP) {   /* too much idle: give it all back */
        idle = dev->stage_idle;
        dev->stage_idle = NULL;
        dev->stage_idle_bytes = 0;
    }
    gf__unlock(&dev->stage_lock);
    gf__stages_free(dev, idle, 0);
    if (!st) {
        if (!(st = (gf__stage *)gf__calloc(sizeof *st))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: out of host memory for a staging buffer");
        if ((r = dev->be->host_alloc(dev, cap, &st->pinned)) != GF_OK) { gf__free(st); return r; }
        st->dev = dev;
        st->cap = cap;
    }
    *out = st;
    return GF_OK;
}

/* The stream callback that ends a staged copy (and its error path): host memory only. */
static void gf__stage_done(void *p) {
    gf__stage *st = (gf__stage *)p;
    gf_device *dev = st->dev;
    if (st->dst) memcpy(st->dst, st->pinned, st->bytes);
    gf__lock(&dev->stage_lock);
    st->next = dev->stage_idle;
    dev->stage_idle = st;
    dev->stage_idle_bytes += st->cap;
    gf__unlock(&dev->stage_lock);
}

static gf_result gf__copy_staged(gf_stream *s, const gf__copy *c) {
    const gf__backend *be = s->dev->be;
    gf__copy through = *c;
    gf__stage *st = NULL;
    gf_result r;
    if ((r = gf__stage_get(s->dev, c->bytes, &st)) != GF_OK) return r;
    st->bytes = c->bytes;
    st->dst = c->kind == GF__COPY_D2H ? c->host : NULL;
    if (c->kind == GF__COPY_H2D) memcpy(st->pinned, c->host, c->bytes);
    through.host = st->pinned;
    if ((r = be->copy(s, &through)) != GF_OK) {
        st->dst = NULL;
        gf__stage_done(st);
        return r;
    }
    if ((r = be->host_callback(s, gf__stage_done, st)) == GF_OK) return GF_OK;
    /* The copy is queued but nothing will hand the stage back: finish it here, or, if the
       stream cannot be waited for, keep the stage apart until the device closes (it may still
       write it). */
    if (be->stream_synchronize(s) != GF_OK) {
        gf__lock(&s->dev->stage_lock);
        st->next = s->dev->stage_lost;
        s->dev->stage_lost = st;
        gf__unlock(&s->dev->stage_lock);
        return r;
    }
    gf__stage_done(st);
    return GF_OK;
}

static gf_result gf__copy_exec(gf_stream *s, const gf__copy *c) {
    if (gf__copy_across(c)) return gf__copy_between_devices(s, c);
    if (c->kind != GF__COPY_D2D && gf__host_staged(s, c->host)) return gf__copy_staged(s, c);
    return s->dev->be->copy(s, c);
}

/* A 2D copy on the driver's own call where it has one and no host side needs staging, else one
   copy per row (each staged as any copy would be). */
static gf_result gf__copy_2d_exec(gf_stream *s, const gf_copy_2d *c) {
    const gf__backend *be = s->dev->be;
    const void *host = c->dst_host ? (const void *)c->dst_host : c->src_host;
    size_t row;
    if (be->copy_2d && !gf__host_staged(s, host)) return be->copy_2d(s, c);
    for (row = 0; row < c->height; row++) {
        gf__copy one;
        gf_result r;
        memset(&one, 0, sizeof one);
        one.kind = c->dst && c->src ? GF__COPY_D2D : c->dst ? GF__COPY_H2D : GF__COPY_D2H;
        one.dst = c->dst; one.dst_offset = c->dst_offset + row * c->dst_pitch;
        one.src = c->src; one.src_offset = c->src_offset + row * c->src_pitch;
        one.host = one.kind == GF__COPY_H2D ? (void *)((const char *)c->src_host + row * c->src_pitch)
                 : one.kind == GF__COPY_D2H ? (void *)((char *)c->dst_host + row * c->dst_pitch) : NULL;
        one.bytes = c->width;
        if ((r = gf__copy_exec(s, &one)) != GF_OK) return r;
    }
    return GF_OK;
}

/* ---- commands: every operation on a stream is one gf__cmd ------------------------- >>commands */
typedef struct gf__callback_ctx { gf_callback fn; void *user; gf_stream *s; uint64_t seq; int kept; } gf__callback_ctx;

static void gf__callback_run(void *p) {
    gf__callback_ctx *c = (gf__callback_ctx *)p;
    gf_result status = c->s ? (gf_result)gf__atomic_load_int(&c->s->status) : GF_OK;
    gf_stream *outer = gf__callback_stream;
    uint64_t outer_seq = gf__callback_seq;
    if (c->s) gf__atomic_store_int(&c->s->callback_running, 1);   /* for gf_device_write_state */
    gf__callback_stream = c->s;
    gf__callback_seq = c->seq;
    c->fn(c->user, status);
    gf__callback_stream = outer;
    gf__callback_seq = outer_seq;
    if (c->s) gf__atomic_store_int(&c->s->callback_running, 0);
    if (!c->kept) gf__free(c);
}

/* A signal the program enqueued on s (s->lock held; not a graph's replay). A timeline only
   moves forward: a signal queued behind one of at least its value on the same stream would
   move it back when it runs. (Signals on other streams may run in either order, and a captured
   one runs when its graph does: neither is judged here.) */
static GF__NOINLINE gf_result gf__timeline_signal(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    uint64_t last_value = 0;
    gf_result r;
    int i, at = -1;
    if (!sem->timeline) return s->dev->be->semaphore_signal(s, sem, value);
    gf__spin_lock(&sem->last_lock);
    for (i = 0; i < GF__SEM_STREAMS && at < 0; i++) if (sem->last[i].stream == s->id) { at = i; last_value = sem->last[i].value; }
    gf__spin_unlock(&sem->last_lock);
    if (at >= 0 && value <= last_value)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_signal_async: %s is a timeline, and stream '%s' already signals it to %llu "
                        "before this signal of %llu: a timeline only moves forward (signal a value above %llu)", sem->label, s->label,
                        (unsigned long long)last_value, (unsigned long long)value, (unsigned long long)last_value);
    if ((r = s->dev->be->semaphore_signal(s, sem, value)) != GF_OK) return r;
    gf__spin_lock(&sem->last_lock);   /* s->lock is held: no other signal of s came meanwhile (another stream's may have taken its entry) */
    for (at = -1, i = 0; i < GF__SEM_STREAMS && at < 0; i++) if (sem->last[i].stream == s->id) at = i;
    if (at < 0) {   /* the least recently signalling stream's entry goes */
        for (at = 0, i = 1; i < GF__SEM_STREAMS; i++) if (sem->last[i].used < sem->last[at].used) at = i;
        sem->last[at].stream = s->id;
    }
    sem->last[at].value = value;
    sem->last[at].used = ++sem->last_used;
    gf__spin_unlock(&sem->last_lock);
    return GF_OK;
}
/* Runs one command on s through the backend. owner: a native graph being captured, which
   then keeps what the driver will refer to at every replay. */
static gf_result gf__exec(gf_stream *s, const gf__cmd *c, gf_graph *owner) {
    const gf__backend *be = s->dev->be;
    switch (c->kind) {
    case GF__CMD_COPY: return gf__copy_exec(s, &c->as.copy);
    case GF__CMD_FILL: {
        const gf__cmd_fill *f = &c->as.fill;
        return f->width > 1 ? be->fill_wide(s, f->buf, f->offset, f->pattern, f->width, f->bytes / (size_t)f->width)
                            : be->fill(s, f->buf, f->offset, (unsigned char)f->pattern, f->bytes);
    }
    case GF__CMD_COPY_2D: return gf__copy_2d_exec(s, &c->as.copy_2d);
    case GF__CMD_PREFETCH: return be->prefetch(s, c->as.prefetch.buf, c->as.prefetch.to_device);
    case GF__CMD_LAUNCH: return be->launch(s, c->as.launch.kernel, &c->as.launch.dims, c->as.launch.args, c->as.launch.arg_count);
    case GF__CMD_GRAPH: return gf__graph_replay(c->as.child, s);
    case GF__CMD_SIGNAL: return be->semaphore_signal(s, c->as.sem.sem, c->as.sem.value);
    case GF__CMD_SEM_WAIT: return be->semaphore_wait(s, c->as.sem.sem, c->as.sem.value);
    case GF__CMD_COND: return GF_OK;   /* a marker: gf__graph_replay reads it */
    case GF__CMD_CALLBACK: {
        gf_result r;
        gf__callback_ctx *ctx = (gf__callback_ctx *)gf__calloc(sizeof *ctx);
        if (!ctx) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_add_callback: out of host memory");
        ctx->fn = c->as.callback.fn; ctx->user = c->as.callback.user; ctx->s = owner ? NULL : s; ctx->kept = owner != NULL;
        ctx->seq = owner ? 0 : gf__atomic_load(&s->submitted) + 1;   /* its note's place (s->lock held) */
        if (owner && !gf__keep_block(owner, ctx)) {
            gf__free(ctx);
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_add_callback: out of host memory");
        }
        r = be->host_callback(s, gf__callback_run, ctx);
        if (r != GF_OK && !owner) gf__free(ctx);
        return r;
    }
    }
    return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gpuflow: unknown command");
}

static gf_op_kind gf__cmd_op(const gf__cmd *c) {
    switch (c->kind) {
    case GF__CMD_COPY: case GF__CMD_COPY_2D: return GF_OP_COPY;
    case GF__CMD_FILL: case GF__CMD_PREFETCH: return GF_OP_FILL;
    case GF__CMD_LAUNCH: return GF_OP_LAUNCH;
    case GF__CMD_CALLBACK: return GF_OP_CALLBACK;
    case GF__CMD_GRAPH: return GF_OP_GRAPH;
    case GF__CMD_SIGNAL: return GF_OP_SIGNAL;
    case GF__CMD_SEM_WAIT: case GF__CMD_COND: return GF_OP_WAIT;
    }
    return GF_OP_COPY;
}
/* What names a command in notes and traces: a launch's kernel; a semaphore's label and value
   ("semaphore 5: 7", written into buf). */
static const char *gf__cmd_name(const gf__cmd *c, char *buf, size_t cap) {
    if (c->kind == GF__CMD_LAUNCH) return c->as.launch.kernel_name;
    if (c->kind != GF__CMD_SIGNAL && c->kind != GF__CMD_SEM_WAIT) return NULL;
    snprintf(buf, cap, "%s: %llu", c->as.sem.sem->label, (unsigned long long)c->as.sem.value);
    return buf;
}
/* The bytes a copy or fill moves (what the profiler and the stream's stats count); 0 else. */
static size_t gf__cmd_bytes(const gf__cmd *c) {
    switch (c->kind) {
    case GF__CMD_COPY: return c->as.copy.bytes;
    case GF__CMD_COPY_2D: return c->as.copy_2d.width * c->as.copy_2d.height;
    case GF__CMD_FILL: return c->as.fill.bytes;
    default: return 0;
    }
}

/* What a stream did last, for gf_device_write_state: a ring of its latest operations, each
   with its place in the stream's order (s->lock held). */
static gf__op_note *gf__note_op(gf_stream *s, gf_op_kind kind, const char *name, uint64_t waits_on) {
    GF__HELD(&s->lock);
    uint64_t seq = gf__atomic_load(&s->submitted) + 1;   /* s->lock held: the only writer */
    gf__counter_add(&s->submitted, 1);
    gf__op_note *n = &s->recent[seq % GF__RECENT_OPS];
    n->seq = seq;
    n->kind = kind;
    if (name) gf__copy_str(n->name, sizeof n->name, name); else n->name[0] = 0;
    n->waits_on = waits_on;
    n->waits_on_seq = 0;
    n->has_value = 0;
    n->across = 0;
    return n;
}
/* A wait for work of another device's stream, named when queued (ids are per device). */
static void gf__note_wait_across(gf_stream *s, const char *stream_label, const gf_device *other) {
    char what[sizeof other->tag + 96];   /* cut to the note's name there */
    snprintf(what, sizeof what, "%.80s of %s", stream_label, other->tag);
    gf__note_op(s, GF_OP_WAIT, what, 0)->across = 1;
}
/* A stream's label by id, for descriptions: "a destroyed stream" once it is gone. */
static void gf__stream_label_of(gf_device *dev, uint64_t id, char *out, size_t cap) {
    int i;
    gf__copy_str(out, cap, "a destroyed stream");
    gf__lock(&dev->lock);
    for (i = 0; i < dev->stream_count; i++)
        if (dev->streams[i]->id == id) { snprintf(out, cap, "'%s'", dev->streams[i]->label); break; }
    gf__unlock(&dev->lock);
}

static gf_result gf__event_record_locked(gf_event *ev, gf_stream *s);
/* A frame's start due on s (a stream set's, a flow lane's) is recorded now, before its first
   operation (s->lock held; not in a capture). A record that fails leaves the frame untimed (0 ms), as an unrecorded start. */
static void gf__start_now(gf_stream *s) {
    GF__HELD(&s->lock);
    gf_event *due = s->start_due;
    s->start_due = NULL;
    if (due) (void)gf__event_record_locked(due, s);
}
static gf_result gf__exec_counted(gf_stream *s, const gf__cmd *c) {   /* s->lock held */
    GF__HELD(&s->lock);
    char name[48];
    gf_result r;
    int rec = -1;
    if (s->start_due) gf__start_now(s);
    if (gf__atomic_load_int(&s->dev->profiling))   /* off: not even the call and its arguments */
        rec = gf__prof_begin(s, gf__cmd_op(c), gf__cmd_name(c, name, sizeof name), gf__cmd_bytes(c), 0);
    r = c->kind == GF__CMD_SIGNAL ? gf__timeline_signal(s, c->as.sem.sem, c->as.sem.value) : gf__exec(s, c, NULL);
    if (rec >= 0) gf__prof_end(s, rec, r);
    if (r != GF_OK) return r;
    if (GF__RACE_ON(s->dev)) gf__race_op(s, c);
    if (c->kind == GF__CMD_SIGNAL || c->kind == GF__CMD_SEM_WAIT) {   /* the label and the value, unformatted: the hot path */
        gf__op_note *n = gf__note_op(s, gf__cmd_op(c), c->as.sem.sem->label, 0);
        n->has_value = 1;
        n->value = c->as.sem.value;
        if (c->kind == GF__CMD_SEM_WAIT && c->as.sem.sem->imported != GF_EXTERNAL_NONE) {   /* another API signals it */
            s->foreign_wait_seq = n->seq;
            gf__cmd_name(c, s->foreign_wait, sizeof s->foreign_wait);
        }
    } else {
        gf__note_op(s, gf__cmd_op(c), c->kind == GF__CMD_LAUNCH ? c->as.launch.kernel_name : NULL, 0);
    }
    gf__counter_add(&s->ops, 1);   /* s->lock held: one writer; stats read them lock-free */
    if (c->kind == GF__CMD_COPY || c->kind == GF__CMD_COPY_2D) { gf__counter_add(&s->copies, 1); gf__counter_add(&s->bytes_copied, gf__cmd_bytes(c)); }
    if (c->kind == GF__CMD_LAUNCH) gf__counter_add(&s->launches, 1);
    if (c->kind == GF__CMD_CALLBACK) gf__counter_add(&s->callbacks, 1);
    return GF_OK;
}

/* GPUFLOW_SYNC: the operation just enqueued is waited for, so the first that fails is named
   with its stream (as CUDA_LAUNCH_BLOCKING does). Not from a stream callback (that wait could
   never end), and not inside a capture. */
static gf_result gf__sync_each(gf_stream *s, const gf__cmd *c) {
    gf_result r;
    if (gf__callback_stream) return GF_OK;
    if ((r = gf__stream_sync(s)) == GF_OK) return GF_OK;
    if (gf__atomic_xchg_int(&s->sync_failed, 1))   /* the stream's sticky failure: not this operation's */
        return gf__fail(r, "GPUFLOW_SYNC: stream '%s' failed before this %s (at the call GPUFLOW_SYNC named then): %s", s->label,
                        gf__op_name(gf__cmd_op(c)), gf__error_text);
    return gf__fail(r, "GPUFLOW_SYNC: %s%s%s%s on stream '%s' failed: %s", gf__op_name(gf__cmd_op(c)),
                    c->kind == GF__CMD_LAUNCH ? " of '" : "", c->kind == GF__CMD_LAUNCH ? c->as.launch.kernel_name : "",
                    c->kind == GF__CMD_LAUNCH ? "'" : "", s->label, gf__error_text);
}

/* Which faults-on-demand count a command answers to. */
static int gf__fault_kind_of(const gf__cmd *c) {
    switch (c->kind) {
    case GF__CMD_LAUNCH: return GF__FK_LAUNCH;
    case GF__CMD_COPY: case GF__CMD_COPY_2D: return GF__FK_COPY;
    case GF__CMD_FILL: return GF__FK_FILL;
    default: return GF__FK_OP;
    }
}

/* The one path by which work reaches a stream: recorded when it captures, else run (unless
   faults on demand fail it first). */
static gf_result gf__submit(gf_stream *s, const gf__cmd *c) {
    gf_result r;
    int capturing;
    uint64_t snapshot = 0;
    if (s->dev->fork_count != gf__fork_count) return gf__refuse_forked(s->dev, "gpuflow: enqueue");
    gf__lock(&s->lock);
    capturing = s->capture != NULL;
    if (!capturing && (r = GF__FAULT_POINT(s->dev, gf__fault_kind_of(c), gf__op_name(gf__cmd_op(c)))) != GF_OK) {
        gf__unlock(&s->lock);
        return r;
    }
    if (!capturing && (c->kind == GF__CMD_COPY || c->kind == GF__CMD_COPY_2D) && gf__atomic_load_int(&gf__rec_on) && gf__rec_late_wanted)
        snapshot = gf__rec_late_enqueue(s, c);   /* recording: the host bytes as the stream reaches them, just before the copy */
    r = capturing ? gf__capture_add(s, c) : gf__exec_counted(s, c);
    if (snapshot && r != GF_OK) gf__rec_late_cancel(snapshot);   /* the memory is the program's again */
    gf__unlock(&s->lock);
    if (r == GF_OK && s->dev->sync_each && !capturing) r = gf__sync_each(s, c);
    return r;
}

/* ---- streams ----------------------------------------------------------------------- >>streams */
static gf_result gf__stream_new(gf_device *dev, const char *label, gf_priority prio, int internal, gf_stream **out) {
    return gf__stream_new_on(dev, label, prio, internal, NULL, out);
}
static gf_result gf__stream_new_on(gf_device *dev, const char *label, gf_priority prio, int internal, void *wrap, gf_stream **out) {
    gf_stream *s = (gf_stream *)gf__calloc(sizeof *s);
    gf_result r;
    if (!s) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_create: out of host memory");
    s->type = GF__T_STREAM;
    s->dev = dev;
    s->id = gf__atomic_add(&dev->next_id, 1) + 1;
    if (label && *label) gf__copy_str(s->label, sizeof s->label, label);
    else   /* numbered among the streams the program made: the device's own take ids too */
        snprintf(s->label, sizeof s->label, "stream %llu", (unsigned long long)(gf__atomic_add(&dev->next_label, 1) + 1));
    s->priority = prio;
    s->internal = internal;
    s->borrowed = wrap != NULL;
    s->race_slot = -1;
    gf__mutex_init(&s->lock);
    if ((r = wrap ? dev->be->stream_wrap(s, wrap) : dev->be->stream_create(s)) != GF_OK) {
        gf__mutex_destroy(&s->lock);
        gf__free(s);
        return r;
    }
    gf__lock(&dev->lock);
    if (!gf__grow((void **)&dev->streams, &dev->stream_cap, dev->stream_count + 1, sizeof *dev->streams)) {
        gf__unlock(&dev->lock);
        dev->be->stream_destroy(s);
        gf__mutex_destroy(&s->lock);
        gf__free(s);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_create: out of host memory");
    }
    dev->streams[dev->stream_count++] = s;
    gf__unlock(&dev->lock);
    *out = s;
    return GF_OK;
}

/* The work of s up to seen (a count of submitted read before the driver said done) is done:
   retired only rises, since two threads may settle with different counts in either order. */
static void gf__stream_retire(gf_stream *s, uint64_t seen) {
    uint64_t was = gf__atomic_load(&s->retired);
    while (was < seen && !gf__atomic_cas(&s->retired, was, seen)) was = gf__atomic_load(&s->retired);
}
/* Operations of s not known to be done. retired is read first: it never passes a count of
   submitted read before it, so the difference cannot wrap. */
static uint64_t gf__stream_unsettled(gf_stream *s) {
    uint64_t ret = gf__atomic_load(&s->retired), sub = gf__atomic_load(&s->submitted);
    return sub > ret ? sub - ret : 0;
}

/* The answer of a wait or query of s: done (the host now knows its work so far completed),
   not yet, or a failure the stream keeps. waited: a synchronize, which ends with the stream's
   work whether it failed or not (the race detector learns it either way: the next access
   after a failed kernel raced with nothing). */
static gf_result gf__stream_settle(gf_stream *s, gf_result r, uint64_t seen, gf__race_seen *race_seen, int waited) {
    if (r == GF_OK) {
        gf__stream_retire(s, seen);
        /* its work so far ran well: a failure its callbacks were told of is no longer the
           stream's (a driver whose wait failed once and then answered GF_OK, as OpenCL's may;
           a stream that keeps a failure, as CUDA's and the stub's, never answers GF_OK) */
        if (gf__atomic_load_int(&s->status)) gf__atomic_store_int(&s->status, 0);
    } else if (r != GF_NOT_READY) gf__atomic_store_int(&s->status, (int)r);
    gf__race_seen_done(s->dev, race_seen, r == GF_OK || (waited && r < 0));
    return r;
}

/* A host wait behind a wait for an imported semaphore: said once per such wait, since the
   signal may be this very thread's to give (then the host wait never returns). */
static void gf__warn_foreign_wait(gf_stream *s) {
    uint64_t seq;
    char what[48];
    gf__lock(&s->lock);
    seq = s->foreign_wait_seq;
    if (!seq || seq == s->foreign_warned || gf__atomic_load(&s->retired) >= seq || s->capture) seq = 0;
    else s->foreign_warned = seq;
    gf__copy_str(what, sizeof what, s->foreign_wait);
    gf__unlock(&s->lock);
    if (!seq || s->dev->be->stream_query(s) == GF_OK) return;
    gf__notice(GF_LOG_WARNING, "gpuflow: waiting for stream '%s', which first waits for %s, imported: another API signals it. If "
               "that signal is this thread's to give after this wait, the wait never returns", s->label, what);
}

/* A blocking wait; with GPUFLOW_HANG_MS set it first polls that long, and if the stream is
   still busy logs the device's state once, then keeps waiting. */
static gf_result gf__stream_sync(gf_stream *s) {
    uint64_t seen = gf__atomic_load(&s->submitted);
    gf__race_seen race_seen = gf__race_seen_stream(s);
    gf__warn_foreign_wait(s);
    if (s->dev->hang_ms && gf__poll(gf__stream_query_settled, s, s->dev->hang_ms) == GF_TIMEOUT) {
        char what[128];
        snprintf(what, sizeof what, "waiting for stream '%s'", s->label);
        gf__hang_report(s->dev, what);
    }
    return gf__stream_settle(s, s->dev->be->stream_synchronize(s), seen, &race_seen, 1);
}

/* This thread, as a capture remembers the one that began it: a number no other thread of the
   process is ever given (a thread-local's address would be, once its thread has ended). */
static GF__TLS uint64_t gf__thread_number;
static gf__atomic64 gf__thread_numbers;   /* atomic: the last given */
static uint64_t gf__thread_id(void) {
    if (!gf__thread_number) gf__thread_number = gf__atomic_add(&gf__thread_numbers, 1) + 1;
    return gf__thread_number;
}
/* GF_OK if this thread may end (or discard) capture c: the one that began it, unless it is
   relaxed. CUDA and HIP refuse the end elsewhere and leave the driver capturing, with no one
   left to end it; the stub and OpenCL refuse it too, so a program that would fail there fails
   everywhere. */
static gf_result gf__capture_thread_check(const char *fn, const gf__capture *c) {
    static const char *const modes[] = { "GF_CAPTURE_GLOBAL", "GF_CAPTURE_THREAD_LOCAL", "GF_CAPTURE_RELAXED" };
    if (!c->thread || c->thread == gf__thread_id()) return GF_OK;
    return gf__fail(GF_ERROR_CAPTURE, "%s: the capture of stream '%s' was begun on another thread in %s mode, where only that thread may "
                    "end it (CUDA and HIP refuse it elsewhere); it goes on: end it on that thread, or begin it with GF_CAPTURE_RELAXED",
                    fn, c->origin->label, modes[c->mode]);
}
/* The same before a destroy of s, which would discard the capture s is in (s->lock not held). */
static gf_result gf__destroy_capture_check(const char *fn, gf_stream *s) {
    gf_result r;
    gf__lock(&s->lock);
    r = s->capture ? gf__capture_thread_check(fn, s->capture) : GF_OK;
    gf__unlock(&s->lock);
    return r;
}

static void gf__stream_free(gf_stream *s) {
    gf_device *dev = s->dev;
    int i;
    gf_graph *discarded = NULL;
    gf__lock(&s->lock);
    if (s->capture) discarded = gf__capture_discard(s->capture);
    gf__unlock(&s->lock);
    gf__discarded_release(discarded);
    gf__stream_sync(s);   /* still the device's meanwhile: a hang report shows what it waits for */
    gf__lock(&dev->lock);
    for (i = 0; i < dev->stream_count; i++)
        if (dev->streams[i] == s) { dev->streams[i] = dev->streams[--dev->stream_count]; break; }
    while (s->sync_refs) gf__cond_wait(&dev->released, &dev->lock);   /* a device sync still holds it */
    gf__unlock(&dev->lock);
    if (gf__atomic_load_int(&gf__rec_on)) gf__rec_gone(s);   /* one gpuflow made: its number goes with it */
    dev->be->stream_destroy(s);
    gf__mutex_destroy(&s->lock);
    gf__race_slot_release(s);
    gf__free(s->race_vc);
    gf__obj_free(dev, s);
}

static gf_result gf__call_stream_create(gf_device *dev, const gf_stream_desc *desc, gf_stream **out) {
    gf_priority prio = desc ? desc->priority : GF_PRIORITY_NORMAL;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (prio < GF_PRIORITY_NORMAL || prio > GF_PRIORITY_LOW)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_create: priority %d is not a gf_priority", (int)prio);
    if (prio != GF_PRIORITY_NORMAL && !dev->info.stream_priorities && !gf__atomic_xchg_int(&dev->priority_noted, 1))
        gf__notice(GF_LOG_INFO, "gf_stream_create: device %s has no stream priorities; the priority is kept as a label only "
                   "(said once per device)", dev->tag);
    if ((r = GF__LOST_POINT(dev, "gf_stream_create")) != GF_OK) return r;
    return gf__stream_new(dev, desc ? desc->label : NULL, prio, 0, out);
}

static void gf__call_stream_destroy(gf_stream *s) {
    GF__CHECK_DESTROY(s, GF__T_STREAM);
    if (s->internal) {
        gf__set_error(GF_ERROR_INVALID_ARGUMENT, "gf_stream_destroy: stream '%s' belongs to a %s; destroy that instead",
                 s->label, s->pool ? "stream pool" : "stream set, flow or device");
        return;
    }
    if (gf__refuse_self_wait("gf_stream_destroy", s->dev, s) != GF_OK) return;   /* kept: it cannot drain */
    if (gf__destroy_capture_check("gf_stream_destroy", s) != GF_OK) return;   /* kept: its capture cannot be discarded from this thread */
    if (gf__stream_busy(s) && gf__hidden_wait("gf_stream_destroy", s, "its queued work has run") != GF_OK) return;
    gf__stream_free(s);
}

/* A capturing stream cannot be waited on: the capture is discarded and the misuse reported. */
static gf_result gf__refuse_in_capture(gf_stream *s, const char *fn) {
    gf_graph *discarded;
    gf_result r;
    gf__lock(&s->lock);
    if (!s->capture) { gf__unlock(&s->lock); return GF_OK; }
    if ((r = gf__capture_thread_check(fn, s->capture)) != GF_OK) { gf__unlock(&s->lock); return r; }
    discarded = gf__capture_discard(s->capture);
    gf__unlock(&s->lock);
    gf__discarded_release(discarded);
    return gf__fail(GF_ERROR_CAPTURE, "%s: stream '%s' is capturing; the capture was ended and discarded (wait after "
                    "gf_stream_end_capture; inside a capture, order streams with events)", fn, s->label);
}

static gf_result gf__call_stream_synchronize(gf_stream *s) {
    gf_result r;
    GF__CHECK(s, GF__T_STREAM);
    if ((r = GF__FAULT_POINT(s->dev, GF__FK_SYNC, "gf_stream_synchronize")) != GF_OK) return r;
    if ((r = gf__refuse_self_wait("gf_stream_synchronize", s->dev, s)) != GF_OK) return r;
    if ((r = gf__refuse_in_capture(s, "gf_stream_synchronize")) != GF_OK) return r;
    r = gf__stream_sync(s);
    gf__retired_collect(s->dev, 0);   /* what waited only for this stream goes now */
    return r;
}

/* Bounded waits poll the driver's query with a backoff from 20 us to 1 ms (never past the
   deadline), so they work alike on every backend and a frame-budgeted caller gets control
   back. */
static gf_result gf__poll_until(gf__query_fn query, void *obj, uint64_t deadline) {
    unsigned nap = GF__WAIT_NAP_MIN_US;
    for (;;) {
        gf_result r = query(obj);
        uint64_t now;
        if (r != GF_NOT_READY) return r;
        if ((now = gf__now_ns()) >= deadline) return GF_TIMEOUT;
        if ((uint64_t)nap * 1000u > deadline - now) nap = (unsigned)((deadline - now) / 1000u) + 1;
        gf__sleep_us(nap);
        if (nap < GF__WAIT_NAP_MAX_US) nap *= 2;
    }
}
static gf_result gf__poll(gf__query_fn query, void *obj, unsigned timeout_ms) {
    return gf__poll_until(query, obj, gf__now_ns() + (uint64_t)timeout_ms * 1000000u);
}
/* gf__poll for a _timeout synchronize: with GPUFLOW_HANG_MS shorter than its bound, the state
   is logged once the wait passes it, as for an unbounded wait; what names the wait. One
   deadline from the call: the report's own time comes out of the bound, not on top of it. */
static gf_result gf__poll_reported(gf_device *dev, gf__query_fn query, void *obj, unsigned timeout_ms, const char *what) {
    gf_result r;
    uint64_t start = gf__now_ns();
    if (!dev->hang_ms || timeout_ms <= dev->hang_ms) return gf__poll(query, obj, timeout_ms);
    if ((r = gf__poll_until(query, obj, start + (uint64_t)dev->hang_ms * 1000000u)) != GF_TIMEOUT) return r;
    gf__hang_report(dev, what);
    return gf__poll_until(query, obj, start + (uint64_t)timeout_ms * 1000000u);
}
static gf_result gf__stream_query_settled(void *p) {
    gf_stream *s = (gf_stream *)p;
    uint64_t seen = gf__atomic_load(&s->submitted);
    gf__race_seen race_seen = gf__race_seen_stream(s);
    return gf__stream_settle(s, s->dev->be->stream_query(s), seen, &race_seen, 0);
}

static gf_result gf__call_stream_synchronize_timeout(gf_stream *s, unsigned timeout_ms) {
    char what[128];
    gf_result r;
    GF__CHECK(s, GF__T_STREAM);
    if ((r = GF__FAULT_POINT(s->dev, GF__FK_SYNC, "gf_stream_synchronize_timeout")) != GF_OK) return r;
    if ((r = gf__refuse_self_wait("gf_stream_synchronize_timeout", s->dev, s)) != GF_OK) return r;   /* it could only time out */
    if ((r = gf__refuse_in_capture(s, "gf_stream_synchronize_timeout")) != GF_OK) return r;
    if (s->dev->hang_ms) snprintf(what, sizeof what, "gf_stream_synchronize_timeout: waiting for stream '%s'", s->label);
    if ((r = gf__poll_reported(s->dev, gf__stream_query_settled, s, timeout_ms, what)) == GF_TIMEOUT)
        return gf__fail(GF_TIMEOUT, "gf_stream_synchronize_timeout: stream '%s' still had work after %u ms", s->label, timeout_ms);
    return r;
}

static gf_result gf__call_stream_query(gf_stream *s) {
    gf_result r;
    GF__CHECK(s, GF__T_STREAM);
    if ((r = gf__refuse_in_capture(s, "gf_stream_query")) != GF_OK) return r;
    if ((r = GF__LOST_POINT(s->dev, "gf_stream_query")) != GF_OK) return r;
    return gf__stream_query_settled(s);
}

static gf_result gf__call_stream_add_callback(gf_stream *s, gf_callback fn, void *user) {
    gf__cmd c;
    GF__CHECK(s, GF__T_STREAM);
    if (!fn) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_add_callback: fn is NULL");
    c.kind = GF__CMD_CALLBACK; c.as.callback.fn = fn; c.as.callback.user = user;
    return gf__submit(s, &c);
}

GPUFLOW_IMPL gf_result gf_stream_get_stats(gf_stream *s, gf_stream_stats *out);
GPUFLOW_IMPL const char *gf_stream_label(const gf_stream *s) { return gf__is(s, GF__T_STREAM) ? s->label : ""; }
GPUFLOW_IMPL uint64_t gf_stream_id(const gf_stream *s) { return gf__is(s, GF__T_STREAM) ? s->id : 0; }
GPUFLOW_IMPL gf_device *gf_stream_device(const gf_stream *s) { return gf__is(s, GF__T_STREAM) ? s->dev : NULL; }

/* ---- memory ------------------------------------------------------------------------- >>memory */
/* Budgets: counted under the device's mem_lock (they change with the memory they count);
   held by the program's handle and by each buffer charged to them. With the profiler on, each
   change is kept as a sample (host time, bytes) for the trace's counter. */
#define GF__BUDGET_SAMPLES 4096
struct gf_budget {
    uint32_t type;
    gf_device *dev;
    int refs;                       /* under dev->mem_lock */
    char label[64];
    uint64_t limit, warn_bytes, bytes, peak_bytes, count, refused;
    uint64_t charging;              /* of bytes: charged for buffers not made yet (not held: no peak, no sample) */
    gf_budget_fn fn; void *user;
    uint64_t (*samples)[2]; int sample_count;   /* (ns since the profiler's base, bytes) */
};
static void gf__budget_sample(gf_budget *b) {   /* mem_lock held */
    if (!gf__atomic_load_int(&b->dev->profiling) || !b->dev->profiler) return;
    if (!b->samples && !(b->samples = (uint64_t (*)[2])gf__malloc(sizeof *b->samples * GF__BUDGET_SAMPLES))) return;
    if (b->sample_count == GF__BUDGET_SAMPLES) return;   /* the trace shows the first ones */
    b->samples[b->sample_count][0] = gf__now_ns();
    b->samples[b->sample_count][1] = b->bytes - b->charging;
    b->sample_count++;
}
static void gf__budget_unref(gf_budget *b) {   /* mem_lock held; the last reference frees it */
    if (--b->refs > 0) return;
    gf__free(b->samples);
    b->samples = NULL;
    gf__obj_free(b->dev, b);   /* under GPUFLOW_DEBUG kept as a shell, so later uses are refused */
}
/* A budget's callback is told once gf_buffer_create_desc has finished (and been recorded), so
   the calls it makes come after that call, in a recording as in time. The note holds the
   budget (refs) until then. */
typedef struct gf__budget_note { gf_budget *budget; gf_budget_event event; uint64_t used, asked; } gf__budget_note;
static GF__TLS gf__budget_note gf__budget_due;
static void gf__budget_tell(gf_budget *b, gf_budget_event event, uint64_t used, uint64_t asked) {   /* mem_lock held */
    if (!b->fn || gf__budget_due.budget) return;   /* one a call: gf_buffer_create_desc clears it */
    b->refs++;
    gf__budget_due.budget = b; gf__budget_due.event = event; gf__budget_due.used = used; gf__budget_due.asked = asked;
}
static void gf__budget_told(const gf__budget_note *due) {   /* a call's due callback, if any */
    gf__budget_note note = *due;
    char saved[sizeof gf__error_text];
    gf_device *dev, *calling;
    if (!note.budget) return;
    memcpy(saved, gf__error_text, sizeof saved);   /* the call's own error text outlives the callback's calls */
    dev = note.budget->dev;
    calling = gf__budget_calling;
    gf__budget_calling = dev;
    note.budget->fn(note.budget->user, note.budget, note.event, note.used, note.asked);
    gf__budget_calling = calling;
    memcpy(gf__error_text, saved, sizeof saved);
    gf__spin_lock(&dev->mem_lock);
    gf__budget_unref(note.budget);
    gf__spin_unlock(&dev->mem_lock);
}
/* Charges bytes to b before the memory is allocated: refused past its limit (the callback then
   due). Counted against the limit at once (two threads cannot both pass it), but held only once
   gf__budget_settle says the buffer was made: a buffer that is not made (the device's limit, no
   memory) leaves the count, peak, samples and figures as they were. *crossed: the charge
   crosses warn_bytes upward. */
static gf_result gf__budget_charge(const char *fn, gf_budget *b, uint64_t bytes, int *crossed, uint64_t *now) {
    uint64_t used;
    gf__spin_lock(&b->dev->mem_lock);
    used = b->bytes;
    if (bytes > b->limit - used) {
        b->refused++;
        gf__budget_tell(b, GF_BUDGET_REFUSED, used, bytes);
        gf__spin_unlock(&b->dev->mem_lock);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: %llu bytes would take budget '%s' past its limit "
                        "(%llu of %llu bytes used)", fn, (unsigned long long)bytes, b->label, (unsigned long long)used, (unsigned long long)b->limit);
    }
    b->bytes += bytes;
    b->charging += bytes;
    *crossed = used < b->warn_bytes && b->bytes >= b->warn_bytes;
    *now = b->bytes;
    b->refs++;   /* the buffer's hold */
    gf__spin_unlock(&b->dev->mem_lock);
    return GF_OK;
}
/* The charged buffer was made (ok) or not: held from now on (its count, the peak of what is
   held, a sample, the crossing's callback due), or its charge given back. */
static void gf__budget_settle(gf_budget *b, uint64_t bytes, int ok, int crossed, uint64_t now) {
    gf_device *dev = b->dev;   /* b may go with the unref */
    gf__spin_lock(&dev->mem_lock);
    b->charging -= bytes;
    if (ok) {
        b->count++;
        if (b->bytes - b->charging > b->peak_bytes) b->peak_bytes = b->bytes - b->charging;
        gf__budget_sample(b);
        if (crossed) gf__budget_tell(b, GF_BUDGET_CROSSED, now, bytes);
    } else {
        b->bytes -= bytes;
        gf__budget_unref(b);
    }
    gf__spin_unlock(&dev->mem_lock);
}
static void gf__budget_uncharge(gf_budget *b, uint64_t bytes) {
    gf_device *dev = b->dev;   /* b may go with the unref */
    gf__spin_lock(&dev->mem_lock);
    b->bytes -= bytes;
    b->count--;
    gf__budget_sample(b);
    gf__budget_unref(b);
    gf__spin_unlock(&dev->mem_lock);
}
/* At close: budgets the program left alive (gf__report_live named them) go with the device. */
static void gf__budgets_free(gf_device *dev) {
    int i;
    for (i = 0; i < dev->budget_count; i++) {
        gf__free(dev->budgets[i]->samples);
        gf__free(dev->budgets[i]);
    }
    gf__free(dev->budgets);
}
static void gf__budget_stats_of(const gf_budget *b, gf_budget_stats *out) {
    gf__copy_str(out->label, sizeof out->label, b->label);
    out->limit = b->limit; out->bytes = b->bytes - b->charging; out->peak_bytes = b->peak_bytes;
    out->count = b->count; out->refused = b->refused;
}

/* Accounting: every allocation gpuflow makes is counted under its kind, with peaks; the limit
   (gf_device_set_memory_limit) is held against the device kinds together. */
static void gf__mem_count_locked(gf_device *dev, int kind, uint64_t bytes, int sign) {   /* mem_lock held */
    gf_memory_counter *c;
    if (kind < 0 || kind >= GF_MEMORY_KIND_COUNT) return;   /* wrapped memory and views: not ours */
    c = &dev->mem[kind];
    if (sign > 0) {
        c->bytes += bytes; c->count++;
        if (c->bytes > c->peak_bytes) c->peak_bytes = c->bytes;
        if (c->count > c->peak_count) c->peak_count = c->count;
    } else {
        c->bytes -= bytes; c->count--;
    }
}
static void gf__mem_count(gf_device *dev, int kind, uint64_t bytes, int sign) {
    gf__spin_lock(&dev->mem_lock);
    gf__mem_count_locked(dev, kind, bytes, sign);
    gf__spin_unlock(&dev->mem_lock);
}
static void gf__mem_unadmit(gf_device *dev, uint64_t bytes) {   /* an admitted allocation that failed */
    gf__spin_lock(&dev->mem_lock);
    dev->mem_admitted -= bytes;
    gf__spin_unlock(&dev->mem_lock);
}
/* An admitted allocation that succeeded: counted as kind and no longer as admitted, at once. */
static void gf__mem_count_new(gf_device *dev, int kind, uint64_t bytes) {
    gf__spin_lock(&dev->mem_lock);
    dev->mem_admitted -= bytes;
    gf__mem_count_locked(dev, kind, bytes, +1);
    gf__spin_unlock(&dev->mem_lock);
}
/* Memory that changes kind (cached <-> in use): one step, so that the total never dips. */
static void gf__mem_move(gf_device *dev, int from, int to, uint64_t bytes) {
    gf__spin_lock(&dev->mem_lock);
    gf__mem_count_locked(dev, from, bytes, -1);
    gf__mem_count_locked(dev, to, bytes, +1);
    gf__spin_unlock(&dev->mem_lock);
}
static uint64_t gf__mem_device_bytes(gf_device *dev) {   /* dev->mem_lock held */
    return dev->mem[GF_MEMORY_DEVICE].bytes + dev->mem[GF_MEMORY_MANAGED].bytes +
           dev->mem[GF_MEMORY_ASYNC].bytes + dev->mem[GF_MEMORY_CACHED].bytes + dev->mem[GF_MEMORY_PENDING].bytes;
}
/* Memory destroyed and not yet released: on the list, or in a collection's hands. */
static int gf__retired_any(gf_device *dev) {
    return gf__atomic_load_int(&dev->retired_pending) || gf__atomic_load_int(&dev->retired_busy);
}
/* An allocation made while this thread holds one of the library's locks (an allocation on a
   stream: its lock), or from a stream's host callback, takes back only what has passed:
   waiting for pending frees could wait for a host callback that needs that lock, or for work
   queued behind the callback itself. */
static int gf__may_wait_for_frees(void) { return gf__locks_held == 0 && !gf__callback_stream; }
/* GF_OK if bytes more device memory stays within the limit; else gives cached blocks back and
   asks again, then refuses naming the limit and the use. What it lets through counts as used
   (mem_admitted) until the allocation is counted (gf__mem_count_new) or fails
   (gf__mem_unadmit): else allocations at once from several threads each passed the check on
   the same use, together past the limit. */
static gf_result gf__mem_admit(gf_device *dev, size_t bytes, const char *fn) {
    int pass;
    for (pass = 0; pass <= GF__ADMIT_WAITS; pass++) {
        uint64_t used, limit;
        int fits;
        gf__spin_lock(&dev->mem_lock);
        used = gf__mem_device_bytes(dev) + dev->mem_admitted;
        limit = dev->mem_limit;
        fits = !limit || (bytes <= limit && used <= limit - bytes);
        if (fits) dev->mem_admitted += bytes;
        gf__spin_unlock(&dev->mem_lock);
        if (fits) return GF_OK;
        /* waits again while other threads' destroys keep adding pending frees meanwhile */
        if (pass < GF__ADMIT_WAITS && (pass == 0 || gf__retired_any(dev))) {
            gf_result r;
            if (!gf__may_wait_for_frees()) { gf__cache_release(dev, 0, 0); gf__retired_collect(dev, 0); continue; }
            if (gf__retired_any(dev) &&
                (r = gf__hidden_wait(fn, NULL, "destroyed buffers' queued work has passed (the memory limit is reached)")) != GF_OK) return r;
            gf__cache_release(dev, 0, 1);
            gf__retired_collect(dev, 1);
            continue;
        }
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: %llu more bytes would pass the device's memory limit of %llu bytes (%llu in use)",
                        fn, (unsigned long long)bytes, (unsigned long long)limit, (unsigned long long)used);
    }
    return GF_OK;
}

/* A driver's allocation made while the library holds memory it could give back: tried
   quietly; out of memory, reclaim(dev) gives back what it can and it is tried once more. The
   first failure is not logged, and a retry that succeeds leaves no error behind. */
static gf_result gf__alloc_reclaiming(gf_device *dev, gf_result (*alloc)(void *ctx), void *ctx, gf_result (*reclaim)(gf_device *dev)) {
    char before[sizeof gf__error_text];
    unsigned serial = gf__error_serial;
    gf_result r;
    memcpy(before, gf__error_text, sizeof before);
    gf__quiet++;
    r = alloc(ctx);
    gf__quiet--;
    if (r == GF_OK) return r;
    if (r != GF_ERROR_OUT_OF_MEMORY) { gf__log_text(gf__level_of(r), r, gf__error_text); return r; }
    if ((r = reclaim(dev)) != GF_OK) return r;
    memcpy(gf__error_text, before, sizeof before);
    gf__error_serial = serial;
    return alloc(ctx);
}

/* Device memory: the stream-ordered cache's blocks go back (waiting for their last uses), and
   destroyed buffers' pending frees are waited for. */
static gf_result gf__reclaim_device_memory(gf_device *dev) {
    gf_result r;
    if (!gf__may_wait_for_frees()) {
        gf__cache_release(dev, 0, 0);
        gf__retired_collect(dev, 0);
        return GF_OK;
    }
    if (gf__retired_any(dev) && (r = gf__hidden_wait("gf_buffer_create", NULL, "destroyed buffers' queued work has passed (the memory is short)")) != GF_OK) return r;
    gf__cache_release(dev, 0, 1);
    gf__retired_collect(dev, 1);   /* an allocation that would fail waits for pending frees */
    return GF_OK;
}
static gf_result gf__buffer_alloc_try(void *buf) { return ((gf_buffer *)buf)->dev->be->buffer_alloc((gf_buffer *)buf); }
static gf_result gf__buffer_alloc_admitted(gf_buffer *buf) {
    gf_device *dev = buf->dev;
    int reclaimable;
    gf__lock(&dev->cache.lock);
    reclaimable = dev->cache.count > 0 || gf__retired_any(dev);
    gf__unlock(&dev->cache.lock);
    if (!reclaimable) return dev->be->buffer_alloc(buf);
    return gf__alloc_reclaiming(dev, gf__buffer_alloc_try, buf, gf__reclaim_device_memory);
}
static gf_result gf__buffer_alloc(const char *fn, gf_buffer *buf) {   /* counted by the caller (gf__mem_count_new) when GF_OK */
    gf_result r;
    gf__retired_collect(buf->dev, 0);   /* memory whose queued work has passed goes first */
    if ((r = gf__mem_admit(buf->dev, buf->size, fn)) != GF_OK) return r;
    if ((r = gf__buffer_alloc_admitted(buf)) != GF_OK) gf__mem_unadmit(buf->dev, buf->size);
    return r;
}

/* A buffer of new device memory; fn: the public call that makes it, named in its failures. */
static gf_result gf__buffer_new_as(const char *fn, gf_device *dev, size_t bytes, gf_memory_kind kind, int exportable, gf_buffer **out) {
    gf_buffer *buf;
    gf_result r;
    if (!(buf = (gf_buffer *)gf__calloc(sizeof *buf))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    buf->type = GF__T_BUFFER;
    buf->dev = dev;
    buf->exportable = exportable;
    buf->size = bytes;
    buf->managed = kind == GF_MEMORY_MANAGED;
    buf->refs = 1;
    buf->kind = kind;
    if ((r = gf__buffer_alloc(fn, buf)) != GF_OK) { gf__free(buf); return r; }
    buf->capacity = bytes;
    gf__mem_count_new(dev, buf->kind, bytes);
    *out = buf;
    return GF_OK;
}
static gf_result gf__buffer_new(const char *fn, gf_device *dev, size_t bytes, gf_memory_kind kind, gf_buffer **out) {
    return gf__buffer_new_as(fn, dev, bytes, kind, 0, out);
}

/* gf_buffer_create and gf_buffer_create_desc; fn names the one the program called. */
static gf_result gf__buffer_create(const char *fn, gf_device *dev, const gf_buffer_desc *desc, gf_buffer **out) {
    gf_memory_kind kind;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK_IN(fn, dev, GF__T_DEVICE);
    if (!out) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    if (!desc) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    kind = desc->managed ? GF_MEMORY_MANAGED : GF_MEMORY_DEVICE;
    if (desc->size == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: size is 0", fn);
    if (desc->managed && !dev->info.managed_memory)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: device %s has no managed memory", fn, dev->tag);
    if (desc->exportable && desc->managed)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: a managed buffer cannot be exportable", fn);
    if (desc->exportable && !(dev->be->external_types ? dev->be->external_types(dev, GF__EXT_EXPORT_MEMORY) : 0))
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: the %s backend (device %s) exports no memory", fn, dev->be->name, dev->tag);
    if ((r = GF__FAULT_POINT(dev, GF__FK_BUFFER, fn)) != GF_OK) return r;
    if (desc->budget) {
        int crossed = 0;
        uint64_t used = 0;
        GF__CHECK_IN(fn, desc->budget, GF__T_BUDGET);
        if (desc->budget->dev != dev)
            return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: budget '%s' belongs to another device", fn, desc->budget->label);
        if ((r = gf__budget_charge(fn, desc->budget, desc->size, &crossed, &used)) != GF_OK) return r;
        r = gf__buffer_new_as(fn, dev, desc->size, kind, desc->exportable != 0, out);
        if (r == GF_OK) (*out)->budget = desc->budget;
        gf__budget_settle(desc->budget, desc->size, r == GF_OK, crossed, used);
        return r;
    }
    return gf__buffer_new_as(fn, dev, desc->size, kind, desc->exportable != 0, out);
}
static gf_result gf__call_buffer_create_desc(gf_device *dev, const gf_buffer_desc *desc, gf_buffer **out) {
    return gf__buffer_create("gf_buffer_create_desc", dev, desc, out);
}
static gf_result gf__call_buffer_create(gf_device *dev, size_t bytes, gf_buffer **out) {
    gf_buffer_desc d;
    memset(&d, 0, sizeof d);
    d.size = bytes;
    return gf__buffer_create("gf_buffer_create", dev, &d, out);
}

/* Drops one reference (the handle's, or a view's on its parent). At the last the memory goes:
   the backend frees what it allocated (a wrapped buffer's backend leaves what it borrowed),
   and a view lets go of its parent. */
static void gf__buffer_release(void *p) {   /* the memory itself, once nothing queued uses it */
    gf_buffer *buf = (gf_buffer *)p;
    gf_device *dev = buf->dev;
    gf_buffer *parent = buf->parent;
    int holds_parent = parent && !buf->parent_dropped;
    buf->size = buf->capacity;
    if (!parent || dev->be->buffer_view) dev->be->buffer_free(buf);
    gf__free(buf->uses);
    gf__obj_free(dev, buf);
    if (holds_parent) gf__buffer_unref(parent, 1);   /* the view's hold on its parent's memory */
}
/* Drops one reference. At the last the memory goes: at once (retire 0: the device is idle, or
   nothing can still use it), else retired until the work queued before now has passed. A
   view holds no memory of its own (its parent's memory is the parent's to retire), but a
   backend's handle for it (an OpenCL sub-buffer) is retired too: NVIDIA's OpenCL holds the
   host in clReleaseMemObject of a sub-buffer that queued work uses (20 ms on an H100). */
static void gf__buffer_unref(gf_buffer *buf, int retire) {
    gf_device *dev = buf->dev;
    if (gf__atomic_add_int(&buf->refs, -1) > 1) return;   /* views still use the memory */
    gf__buffer_uses_drop(buf);
    if (buf->budget) { gf__budget_uncharge(buf->budget, buf->capacity); buf->budget = NULL; }
    if (buf->race) gf__race_forget(buf);
    if (retire && buf->parent && dev->be->buffer_view) {   /* the view's handle, and at once its hold on the parent */
        gf_buffer *parent = buf->parent;
        buf->parent_dropped = 1;
        gf__retire(dev, gf__buffer_release, buf, buf->kind, 0, 0);
        gf__buffer_unref(parent, 1);
    } else if (retire && !buf->parent && !buf->borrowed) {
        gf__retire(dev, gf__buffer_release, buf, buf->kind, buf->capacity, 0);
    } else {
        gf__mem_count(dev, buf->kind, buf->capacity, -1);
        gf__buffer_release(buf);
    }
}
/* A buffer's handle is gone (its memory goes with the last reference): a view's parent no longer
   counts it among its live views. */
static void gf__buffer_handle_gone(gf_buffer *buf) {
    if (buf->parent) gf__atomic_add_int(&buf->parent->views, -1);
    buf->type = GF__T_DEAD;
}
static void gf__buffer_free(gf_buffer *buf) {   /* the handle goes; the memory with its last reference */
    gf__buffer_handle_gone(buf);
    gf__buffer_unref(buf, 0);
}

/* Never waits: the handle goes now, the memory once the work queued before the destroy has
   passed (retired; see "deferred releases"). */
static void gf__call_buffer_destroy(gf_buffer *buf) {
    GF__CHECK_DESTROY(buf, GF__T_BUFFER);
    if (buf->graph_owner) {
        gf__set_error(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_destroy: the buffer was allocated inside a capture; its graph owns it");
        return;
    }
    if (gf__atomic_load_int(&buf->capture_uses)) {
        gf__set_error(GF_ERROR_CAPTURE, "gf_buffer_destroy: a capture in progress uses the buffer");
        return;
    }
    if (gf__refuse_self_wait("gf_buffer_destroy", buf->dev, NULL) != GF_OK) return;   /* kept: fencing the streams calls the driver */
    if (GF__RACE_ON(buf->dev)) gf__race_free(buf, NULL);
    gf__buffer_handle_gone(buf);
    gf__buffer_unref(buf, 1);
}

GPUFLOW_IMPL size_t gf_buffer_size(const gf_buffer *buf) { return gf__is(buf, GF__T_BUFFER) ? buf->size : 0; }

/* Pinned allocations are listed per device (few, and large): the list gives gf_host_free the
   size to account and refuses pointers gf_host_alloc did not give. Short of memory while pinned
   memory let go of waits for an idle device, that goes back first (waiting for the device). */
typedef struct gf__host_request { gf_device *dev; size_t bytes; void **out; } gf__host_request;
static gf_result gf__host_alloc_try(void *p) {
    gf__host_request *q = (gf__host_request *)p;
    return q->dev->be->host_alloc(q->dev, q->bytes, q->out);
}
static gf_result gf__reclaim_host_memory(gf_device *dev) {
    gf_result r;
    if (!gf__may_wait_for_frees()) return GF_OK;
    if ((r = gf__hidden_wait("gf_host_alloc", NULL, "the device's streams have run (pinned memory let go of goes back: the memory is short)")) != GF_OK) return r;
    gf__idle_drain(dev, GF__IDLE_NOW);
    return GF_OK;
}
GPUFLOW_IMPL gf_result gf_host_alloc(gf_device *dev, size_t bytes, void **out) {
    gf_result r;
    int listed;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (bytes == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_host_alloc: size is 0");
    gf__idle_drain(dev, GF__IDLE_OR_BOUND);   /* an allocation is a collection point, as for device memory */
    if (gf__atomic_load_int(&dev->idle_pending)) {   /* pinned memory let go of may be what is short */
        gf__host_request req;
        req.dev = dev; req.bytes = bytes; req.out = out;
        r = gf__alloc_reclaiming(dev, gf__host_alloc_try, &req, gf__reclaim_host_memory);
    } else r = dev->be->host_alloc(dev, bytes, out);
    if (r != GF_OK) return r;
    gf__spin_lock(&dev->mem_lock);
    listed = gf__grow((void **)&dev->pinned, &dev->pinned_cap, dev->pinned_count + 1, sizeof *dev->pinned);
    if (listed) { dev->pinned[dev->pinned_count].ptr = *out; dev->pinned[dev->pinned_count++].bytes = bytes; }
    gf__spin_unlock(&dev->mem_lock);
    if (!listed) {
        dev->be->host_free(dev, *out);
        *out = NULL;
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_host_alloc: out of host memory");
    }
    gf__mem_count(dev, GF_MEMORY_PINNED, bytes, +1);
    return GF_OK;
}
/* A gf_host_alloc allocation let go of, waiting for the device to be idle (counted as pinned until then). */
typedef struct gf__pinned_free { gf_device *dev; void *ptr; size_t bytes; } gf__pinned_free;
static void gf__pinned_release(void *p) {
    gf__pinned_free *f = (gf__pinned_free *)p;
    gf__mem_count(f->dev, GF_MEMORY_PINNED, f->bytes, -1);
    f->dev->be->host_free(f->dev, f->ptr);
    gf__free(f);
}
GPUFLOW_IMPL void gf_host_free(gf_device *dev, void *ptr) {
    size_t bytes = 0;
    int i, found = 0;
    GF__CHECK_VOID(dev, GF__T_DEVICE);
    if (!ptr) return;
    gf__spin_lock(&dev->mem_lock);
    for (i = 0; i < dev->pinned_count && !found; i++)
        if (dev->pinned[i].ptr == ptr) { bytes = dev->pinned[i].bytes; dev->pinned[i] = dev->pinned[--dev->pinned_count]; found = 1; }
    gf__spin_unlock(&dev->mem_lock);
    if (!found) { gf__set_error(GF_ERROR_INVALID_ARGUMENT, "gf_host_free: the pointer was not allocated by gf_host_alloc on this device"); return; }
    if (dev->be->release_waits) {   /* the driver's free waits for the device: an idle release */
        gf__pinned_free *p = (gf__pinned_free *)gf__malloc(sizeof *p);
        if (p) {
            p->dev = dev; p->ptr = ptr; p->bytes = bytes;
            if (gf__idle_push(dev, gf__pinned_release, p, bytes)) {
                gf__idle_drain(dev, GF__IDLE_IF_IDLE);   /* an idle device: freed now, as elsewhere */
                return;
            }
            gf__free(p);   /* no room to note it: freed now */
        }
    }
    gf__mem_count(dev, GF_MEMORY_PINNED, bytes, -1);
    dev->be->host_free(dev, ptr);
}

static gf_result gf__check_copy(const char *fn, gf_stream *s, const gf__copy *c) {
    gf_result r;
    if (c->dst && !gf__is(c->dst, GF__T_BUFFER)) return gf__bad_handle(fn, "dst", c->dst, GF__T_BUFFER);
    if (c->src && !gf__is(c->src, GF__T_BUFFER)) return gf__bad_handle(fn, "src", c->src, GF__T_BUFFER);
    if (c->kind != GF__COPY_D2D && !c->host) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: host pointer is NULL", fn);
    if (c->dst && c->src && c->dst->dev != c->src->dev) {   /* between devices: s belongs to one of them */
        if (!gf__device_is_open(c->dst->dev) || !gf__device_is_open(c->src->dev))
            return gf__fail(GF_ERROR_INVALID_HANDLE, "%s: %s belongs to a device that was closed", fn, gf__device_is_open(c->dst->dev) ? "src" : "dst");
        if (s->dev != c->dst->dev && s->dev != c->src->dev)
            return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: a copy between devices %s and %s runs on a stream of one of them, not of %s",
                            fn, c->src->dev->tag, c->dst->dev->tag, s->dev->tag);
    } else {
        if (c->dst && c->dst->dev != s->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: dst belongs to another device", fn);
        if (c->src && c->src->dev != s->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: src belongs to another device", fn);
    }
    if (c->dst && (r = gf__check_range(fn, c->dst, c->dst_offset, c->bytes)) != GF_OK) return r;
    if (c->src && (r = gf__check_range(fn, c->src, c->src_offset, c->bytes)) != GF_OK) return r;
    return GF_OK;
}

static gf_result gf__copy_async(const char *fn, gf_stream *s, const gf__copy *copy) {
    gf_result r;
    gf__cmd c;
    GF__CHECK_IN(fn, s, GF__T_STREAM);
    if ((r = gf__check_copy(fn, s, copy)) != GF_OK) return r;
    c.kind = GF__CMD_COPY;
    c.as.copy = *copy;
    return gf__submit(s, &c);
}

/* The buffer that owns a view's memory (views of views are refused). */
static const gf_buffer *gf__buffer_root(const gf_buffer *b) { return b->parent ? b->parent : b; }

/* A capture in progress uses buf's memory: through buf itself, or through its parent or a view
   of that parent (capture_uses counts per handle). */
static int gf__capture_uses_memory(gf_buffer *buf) {
    const gf_buffer *root = gf__buffer_root(buf);
    gf__capture *c;
    int i, used = gf__atomic_load_int(&buf->capture_uses) != 0;
    if (used) return 1;
    gf__lock(&buf->dev->lock);
    for (c = buf->dev->captures; c && !used; c = c->next)
        for (i = 0; i < c->buffer_count && !used; i++) used = gf__buffer_root(c->buffers[i]) == root;
    gf__unlock(&buf->dev->lock);
    return used;
}

/* Synchronous copies run on the device's own stream; they do not wait for other streams. */
static gf_result gf__copy_sync(const char *fn, const char *name, gf_buffer *buf, const gf__copy *copy) {   /* name: buf's parameter */
    gf_result r;
    if (!buf || !gf__is(buf, GF__T_BUFFER)) return gf__bad_handle(fn, name, buf, GF__T_BUFFER);
    if (gf__capture_uses_memory(buf))
        return gf__fail(GF_ERROR_CAPTURE, "%s: a capture in progress uses this buffer's allocation (the buffer, its parent or a view of it); "
                        "a synchronous copy would race it", fn);
    if ((r = gf__hidden_wait(fn, NULL, "the copy is done (a synchronous copy: the _async form does not wait)")) != GF_OK) return r;
    if ((r = gf__copy_async(fn, buf->dev->sync_stream, copy)) != GF_OK) return r;
    return gf__stream_sync(buf->dev->sync_stream);
}

static gf__copy gf__copy_desc(gf__copy_kind kind, gf_buffer *dst, size_t dst_off, gf_buffer *src, size_t src_off,
                              void *host, size_t bytes) {
    gf__copy c;
    c.kind = kind; c.dst = dst; c.dst_offset = dst_off; c.src = src; c.src_offset = src_off;
    c.host = host; c.bytes = bytes;
    return c;
}

static gf_result gf__call_copy_to_device(gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes) {
    gf__copy c = gf__copy_desc(GF__COPY_H2D, dst, dst_offset, NULL, 0, (void *)src, bytes);
    return gf__copy_sync("gf_copy_to_device", "dst", dst, &c);
}
static gf_result gf__call_copy_to_host(void *dst, gf_buffer *src, size_t src_offset, size_t bytes) {
    gf__copy c = gf__copy_desc(GF__COPY_D2H, NULL, 0, src, src_offset, dst, bytes);
    return gf__copy_sync("gf_copy_to_host", "src", src, &c);
}
static gf_result gf__call_copy_to_device_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes) {
    gf__copy c = gf__copy_desc(GF__COPY_H2D, dst, dst_offset, NULL, 0, (void *)src, bytes);
    if (!dst) return gf__bad_handle("gf_copy_to_device_async", "dst", dst, GF__T_BUFFER);
    return gf__copy_async("gf_copy_to_device_async", s, &c);
}
static gf_result gf__call_copy_to_host_async(gf_stream *s, void *dst, gf_buffer *src, size_t src_offset, size_t bytes) {
    gf__copy c = gf__copy_desc(GF__COPY_D2H, NULL, 0, src, src_offset, dst, bytes);
    if (!src) return gf__bad_handle("gf_copy_to_host_async", "src", src, GF__T_BUFFER);
    return gf__copy_async("gf_copy_to_host_async", s, &c);
}
/* An offset into the buffer that owns a view's memory (gf__buffer_root). */
static size_t gf__root_offset(const gf_buffer *b, size_t offset) {   /* saturates: past the end stays past it */
    size_t base = b->parent ? b->view_offset : 0;
    return offset > (size_t)-1 - base ? (size_t)-1 : base + offset;
}
static gf_result gf__call_copy_buffer_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, gf_buffer *src, size_t src_offset, size_t bytes) {
    gf__copy c = gf__copy_desc(GF__COPY_D2D, dst, dst_offset, src, src_offset, NULL, bytes);
    gf_result checked;
    if (!gf__is(dst, GF__T_BUFFER)) return gf__bad_handle("gf_copy_buffer_async", "dst", dst, GF__T_BUFFER);
    if (!gf__is(src, GF__T_BUFFER)) return gf__bad_handle("gf_copy_buffer_async", "src", src, GF__T_BUFFER);
    if (gf__buffer_root(dst) == gf__buffer_root(src)) {   /* the same memory, perhaps through views */
        size_t d = gf__root_offset(dst, dst_offset), r = gf__root_offset(src, src_offset);
        GF__CHECK(s, GF__T_STREAM);
        if ((checked = gf__check_copy("gf_copy_buffer_async", s, &c)) != GF_OK) return checked;   /* a range past its buffer first */
        if ((d < r ? r - d : d - r) < bytes)
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_copy_buffer_async: source and destination ranges overlap%s",
                            dst != src ? " (through a view)" : "");
    }
    return gf__copy_async("gf_copy_buffer_async", s, &c);
}

static gf_result gf__call_fill_async(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    gf_result r;
    gf__cmd c;
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK(buf, GF__T_BUFFER);
    GF__SAME_DEVICE(s->dev, buf->dev);
    if ((r = gf__check_range("gf_fill_async", buf, offset, bytes)) != GF_OK) return r;
    c.kind = GF__CMD_FILL;
    c.as.fill.buf = buf; c.as.fill.offset = offset; c.as.fill.bytes = bytes; c.as.fill.pattern = value; c.as.fill.width = 1;
    return gf__submit(s, &c);
}

static gf_result gf__call_prefetch_async(gf_stream *s, gf_buffer *buf, int to_device) {
    gf__cmd c;
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK(buf, GF__T_BUFFER);
    GF__SAME_DEVICE(s->dev, buf->dev);
    if (!buf->managed) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_prefetch_async: the buffer is not managed");
    if (!s->dev->be->prefetch)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_prefetch_async: the %s backend cannot prefetch", s->dev->be->name);
    c.kind = GF__CMD_PREFETCH; c.as.prefetch.buf = buf; c.as.prefetch.to_device = to_device != 0;
    return gf__submit(s, &c);
}

/* Views: a window on a buffer, usable wherever a buffer is. The view holds a reference on its
   parent, so destroying the parent first is safe: the memory stays until its last view goes. */
static gf_result gf__call_buffer_view(gf_buffer *buf, size_t offset, size_t bytes, gf_buffer **out) {
    gf_buffer *view;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(buf, GF__T_BUFFER);
    GF__CHECK_OUT(out);
    if (buf->parent)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_view: the buffer is itself a view; make the view from its parent at offset %llu + %llu",
                        (unsigned long long)buf->view_offset, (unsigned long long)offset);
    if ((r = gf__check_range("gf_buffer_view", buf, offset, bytes)) != GF_OK) return r;
    if (!(view = (gf_buffer *)gf__calloc(sizeof *view))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_view: out of host memory");
    view->type = GF__T_BUFFER;
    view->dev = buf->dev;
    view->size = view->capacity = bytes;
    view->managed = buf->managed;
    view->borrowed = 1;
    view->parent = buf;
    view->view_offset = offset;
    view->refs = 1;
    view->kind = GF_MEMORY_KIND_COUNT;   /* the parent's memory, counted there */
    if (buf->dev->be->buffer_view) {
        if ((r = buf->dev->be->buffer_view(view)) != GF_OK) { gf__free(view); return r; }
    } else {
        view->native = buf->native ? buf->native + offset : 0;
        view->host = buf->host ? (void *)((char *)buf->host + offset) : NULL;
    }
    gf__atomic_add_int(&buf->refs, 1);
    gf__atomic_add_int(&buf->views, 1);
    *out = view;
    return GF_OK;
}

/* Work recorded against a buffer (gf_buffer_record_stream): an event per use, waited for on the
   freeing stream before stream-ordered memory is freed or reused (PyTorch's record_stream). */
static gf_result gf__call_buffer_record_stream(gf_buffer *buf, gf_stream *s) {
    gf_event *ev;
    gf_result r;
    int kept;
    GF__CHECK(buf, GF__T_BUFFER);
    GF__CHECK(s, GF__T_STREAM);
    GF__SAME_DEVICE(buf->dev, s->dev);
    if ((r = gf__event_pool_take(s->dev->events, 0, &ev)) != GF_OK) return r;
    gf__lock(&s->lock);
    if (s->capture) r = gf__fail(GF_ERROR_CAPTURE, "gf_buffer_record_stream: stream '%s' is capturing; record it after launching the graph", s->label);
    else r = gf__event_record_locked(ev, s);
    gf__unlock(&s->lock);
    if (r != GF_OK) { gf__event_pool_give(s->dev->events, ev); return r; }
    gf__spin_lock(&buf->use_lock);
    kept = gf__grow((void **)&buf->uses, &buf->use_cap, buf->use_count + 1, sizeof *buf->uses);
    if (kept) buf->uses[buf->use_count++] = ev;
    gf__spin_unlock(&buf->use_lock);
    if (!kept) {
        gf__event_pool_give(s->dev->events, ev);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_record_stream: out of host memory");
    }
    return GF_OK;
}
/* s (locked) waits, on the device, for every recorded use of buf. */
static gf_result gf__buffer_uses_wait(gf_stream *s, gf_buffer *buf) {
    gf_result r = GF_OK;
    int i;
    gf__spin_lock(&buf->use_lock);
    for (i = 0; i < buf->use_count && r == GF_OK; i++) r = gf__wait_locked(s, buf->uses[i]);
    gf__spin_unlock(&buf->use_lock);
    return r;
}
static void gf__buffer_uses_drop(gf_buffer *buf) {
    int i;
    gf__spin_lock(&buf->use_lock);
    for (i = 0; i < buf->use_count; i++) gf__event_pool_give(buf->dev->events, buf->uses[i]);
    buf->use_count = 0;
    gf__spin_unlock(&buf->use_lock);
}

/* Fills of 2- and 4-byte values: the offset is a multiple of the value's size (as the drivers
   require) and count values fit in the buffer. */
static gf_result gf__fill_wide(const char *fn, gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, int width, size_t count) {
    gf_result r;
    gf__cmd c;
    GF__CHECK_IN(fn, s, GF__T_STREAM);
    GF__CHECK_IN(fn, buf, GF__T_BUFFER);
    if (s->dev != buf->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: objects of two different devices used together", fn);
    if (count == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: count is 0", fn);
    if (count > SIZE_MAX / (size_t)width)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "%s: %llu values of %d bytes overflow a size", fn, (unsigned long long)count, width);
    if ((buf->view_offset + offset) % (size_t)width)   /* a view's offset counts: the drivers align the address */
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: offset %llu%s is not a multiple of %d", fn, (unsigned long long)(buf->view_offset + offset),
                        buf->parent ? " (in the view's parent)" : "", width);
    if ((r = gf__check_range(fn, buf, offset, count * (size_t)width)) != GF_OK) return r;
    if (!s->dev->be->fill_wide)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: the %s backend cannot fill %d-byte values", fn, s->dev->be->name, width);
    c.kind = GF__CMD_FILL;
    c.as.fill.buf = buf; c.as.fill.offset = offset; c.as.fill.bytes = count * (size_t)width;
    c.as.fill.pattern = value; c.as.fill.width = width;
    return gf__submit(s, &c);
}
static gf_result gf__call_fill16_async(gf_stream *s, gf_buffer *buf, size_t offset, uint16_t value, size_t count) {
    return gf__fill_wide("gf_fill16_async", s, buf, offset, value, 2, count);
}
static gf_result gf__call_fill32_async(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, size_t count) {
    return gf__fill_wide("gf_fill32_async", s, buf, offset, value, 4, count);
}

/* One side of a 2D copy: a buffer or host memory, a pitch no smaller than the rows, and for a
   buffer, rows that all end inside it (computed without overflow). */
static gf_result gf__check_2d_side(gf_stream *s, const char *side, gf_buffer *buf, size_t offset, const void *host,
                                   size_t pitch, size_t width, size_t height) {
    const char *fn = "gf_copy_2d_async";
    size_t extent;
    if (!buf == !host) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: give %s or %s_host, exactly one", fn, side, side);
    if (pitch < width)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: %s_pitch %llu is smaller than the width %llu", fn, side,
                        (unsigned long long)pitch, (unsigned long long)width);
    if (buf && !gf__is(buf, GF__T_BUFFER)) return gf__bad_handle(fn, side, buf, GF__T_BUFFER);
    if (buf && buf->dev != s->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: %s belongs to another device", fn, side);
    /* host rows too: their addresses are made the same way (they wrapped, and the copy ran outside host memory) */
    if (height - 1 > (SIZE_MAX - width) / pitch)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "%s: %llu rows of %s_pitch %llu overflow a size", fn, (unsigned long long)height, side,
                        (unsigned long long)pitch);
    extent = pitch * (height - 1) + width;
    /* no host object is larger than PTRDIFF_MAX (malloc refuses them); smaller spans are the program's word, as for a plain copy */
    if (!buf && (extent > (size_t)PTRDIFF_MAX || extent > UINTPTR_MAX - (uintptr_t)host))
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "%s: %llu rows of %s_pitch %llu from %p span %llu bytes: no host memory is that large", fn,
                        (unsigned long long)height, side, (unsigned long long)pitch, host, (unsigned long long)extent);
    return buf ? gf__check_range(fn, buf, offset, extent) : GF_OK;
}
/* Whether a row of one side shares a byte with a row of the other (offsets into one buffer,
   both ranges checked, pitches >= width >= 1). Row j of src starts at r + j * rp and meets the
   row at `row` when it starts within width - 1 bytes of it; starts grow with j, so the first
   one at or past the lowest such start decides. */
static int gf__rows_overlap(size_t d, size_t dp, size_t r, size_t rp, size_t width, size_t height) {
    size_t i;
    for (i = 0; i < height; i++) {
        size_t row = d + i * dp, lo = row + 1 > width ? row + 1 - width : 0, hi = row + width - 1, j;
        if (hi < r) continue;
        j = lo <= r ? 0 : (lo - r + rp - 1) / rp;
        if (j < height && r + j * rp <= hi) return 1;
    }
    return 0;
}
static gf_result gf__call_copy_2d_async(gf_stream *s, const gf_copy_2d *copy) {
    gf_result r;
    gf__cmd c;
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK_OUT(copy);
    if (copy->width == 0 || copy->height == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_copy_2d_async: width and height must be >= 1");
    if ((r = gf__check_2d_side(s, "dst", copy->dst, copy->dst_offset, copy->dst_host, copy->dst_pitch, copy->width, copy->height)) != GF_OK ||
        (r = gf__check_2d_side(s, "src", copy->src, copy->src_offset, copy->src_host, copy->src_pitch, copy->width, copy->height)) != GF_OK)
        return r;
    if (!copy->dst && !copy->src) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_copy_2d_async: host to host is not a device copy");
    if (copy->dst && copy->src && gf__buffer_root(copy->dst) == gf__buffer_root(copy->src) &&   /* one buffer, or views of one */
        gf__rows_overlap(gf__root_offset(copy->dst, copy->dst_offset), copy->dst_pitch,
                         gf__root_offset(copy->src, copy->src_offset), copy->src_pitch, copy->width, copy->height))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_copy_2d_async: a source row and a destination row share bytes (one buffer, or views of one)");
    c.kind = GF__CMD_COPY_2D;
    c.as.copy_2d = *copy;
    return gf__submit(s, &c);
}

/* ---- memory accounting, limits, trimming ---------------------------------------- >>accounting */
static gf_result gf__call_budget_create(gf_device *dev, const gf_budget_desc *desc, gf_budget **out) {
    gf_budget *b;
    float warn;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(desc);
    GF__CHECK_OUT(out);
    if (!desc->label || !*desc->label) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_budget_create: a budget needs a label");
    if (desc->limit == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_budget_create: budget '%s' has limit 0", desc->label);
    warn = desc->warn_at == 0.0f ? 0.9f : desc->warn_at;
    if (!(warn > 0.0f && warn <= 1.0f))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_budget_create: warn_at %g of budget '%s' is not in (0, 1]", (double)desc->warn_at, desc->label);
    if (!(b = (gf_budget *)gf__calloc(sizeof *b))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_budget_create: out of host memory");
    b->type = GF__T_BUDGET;
    b->dev = dev;
    b->refs = 1;
    gf__copy_str(b->label, sizeof b->label, desc->label);
    b->limit = desc->limit;
    {   /* the product in double: at limits near 2^64 it rounds up past what a uint64_t holds */
        double at = (double)desc->limit * (double)warn;
        b->warn_bytes = at >= 18446744073709551615.0 ? desc->limit : (uint64_t)at;
        if (b->warn_bytes > desc->limit) b->warn_bytes = desc->limit;
        if (b->warn_bytes == 0) b->warn_bytes = 1;
    }
    b->fn = desc->fn;
    b->user = desc->user;
    gf__spin_lock(&dev->mem_lock);
    if (!gf__grow((void **)&dev->budgets, &dev->budget_cap, dev->budget_count + 1, sizeof *dev->budgets)) {
        gf__spin_unlock(&dev->mem_lock);
        gf__free(b);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_budget_create: out of host memory");
    }
    dev->budgets[dev->budget_count++] = b;
    gf__spin_unlock(&dev->mem_lock);
    gf__live(dev, GF__T_BUDGET, 1);
    *out = b;
    return GF_OK;
}
GPUFLOW_IMPL gf_result gf_budget_get_stats(gf_budget *budget, gf_budget_stats *out) {
    GF__CHECK(budget, GF__T_BUDGET);
    GF__CHECK_OUT(out);
    gf__spin_lock(&budget->dev->mem_lock);
    gf__budget_stats_of(budget, out);
    gf__spin_unlock(&budget->dev->mem_lock);
    return GF_OK;
}
static void gf__call_budget_destroy(gf_budget *budget) {
    gf_device *dev;
    int i;
    GF__CHECK_DESTROY(budget, GF__T_BUDGET);
    dev = budget->dev;
    budget->type = GF__T_DEAD;
    gf__live(dev, GF__T_BUDGET, -1);
    gf__spin_lock(&dev->mem_lock);
    for (i = 0; i < dev->budget_count; i++)
        if (dev->budgets[i] == budget) { dev->budgets[i] = dev->budgets[--dev->budget_count]; break; }
    gf__budget_unref(budget);
    gf__spin_unlock(&dev->mem_lock);
}

GPUFLOW_IMPL gf_result gf_device_memory_stats(gf_device *dev, gf_memory_stats *out) {
    size_t driver_cached;
    int i;
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    memset(out, 0, sizeof *out);
    driver_cached = dev->be->cached_bytes ? dev->be->cached_bytes(dev) : 0;
    gf__spin_lock(&dev->mem_lock);
    memcpy(out->kind, dev->mem, sizeof out->kind);
    out->device_bytes = gf__mem_device_bytes(dev);
    out->limit = dev->mem_limit;
    out->budget_count = dev->budget_count;
    for (i = 0; i < dev->budget_count && i < GF_MEMORY_BUDGETS; i++) gf__budget_stats_of(dev->budgets[i], &out->budgets[i]);
    gf__spin_unlock(&dev->mem_lock);
    out->kind[GF_MEMORY_CACHED].bytes += driver_cached;   /* a driver pool's kept memory, as it reports it */
    return GF_OK;
}
static gf_result gf__call_device_reset_peak(gf_device *dev) {
    int k;
    GF__CHECK(dev, GF__T_DEVICE);
    gf__spin_lock(&dev->mem_lock);
    for (k = 0; k < GF_MEMORY_KIND_COUNT; k++) { dev->mem[k].peak_bytes = dev->mem[k].bytes; dev->mem[k].peak_count = dev->mem[k].count; }
    gf__spin_unlock(&dev->mem_lock);
    return GF_OK;
}
/* A limit below what the device holds is refused, after memory kept only for reuse (the
   cache's passed blocks) and destroyed buffers' passed frees went back: without waiting. */
static gf_result gf__call_device_set_memory_limit(gf_device *dev, size_t bytes) {
    uint64_t used = 0;
    int pass;
    GF__CHECK(dev, GF__T_DEVICE);
    for (pass = 0; pass < 2; pass++) {
        int fits;
        if (pass) { gf__cache_release(dev, 0, 0); gf__retired_collect(dev, 0); }
        gf__spin_lock(&dev->mem_lock);
        used = gf__mem_device_bytes(dev);
        fits = !bytes || bytes >= used;
        if (fits) dev->mem_limit = bytes;
        gf__spin_unlock(&dev->mem_lock);
        if (fits) return GF_OK;
    }
    return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_set_memory_limit: %llu bytes is below the %llu bytes in use; limit unchanged",
                    (unsigned long long)bytes, (unsigned long long)used);
}
/* Waits for the device, then gives cached stream-ordered memory back until at most keep_bytes
   stay cached; on CUDA and HIP, the driver pool's trim; on the stub, the fiber stacks it keeps. */
static gf_result gf__call_device_trim(gf_device *dev, size_t keep_bytes) {
    gf_result r;
    GF__CHECK(dev, GF__T_DEVICE);
    if ((r = gf__refuse_device_wait(GF__FN, dev)) != GF_OK) return r;
    if ((r = GF__LOST_POINT(dev, GF__FN)) != GF_OK) return r;
    if ((r = gf__hidden_wait(GF__FN, NULL, "all queued work has run (frees reach the driver's pool only when they run)")) != GF_OK) return r;
    /* frees still queued on streams reach the driver's pool only when they run */
    if ((r = gf__wait_device(dev)) != GF_OK) return r;
    gf__retired_collect(dev, 1);
    gf__cache_release(dev, keep_bytes, 1);
    if (dev->be->trim) dev->be->trim(dev, keep_bytes);
    return GF_OK;
}

/* ---- deferred releases: what a destroy lets go of, freed when queued work has passed -- >>retired */
/* A destroy never waits for the device. What the destroyed object still lends to work queued
   before the destroy (a buffer's memory, a module's code, a graph's memory) is retired: each
   stream of the device with work outstanding gets a fence (a raw driver event, outside the
   race detector's bookkeeping: passing a fence tells the host nothing about the program's
   order), and the release runs once every fence has passed. That is checked at the next
   allocation, gf_device_synchronize and gf_stream_synchronize; an allocation that would fail,
   gf_device_trim and close wait for it. A release whose driver call waits for the whole device
   (backend release_waits: a module's unload) goes, once its fences pass, to the idle releases
   below. A stream in a driver's capture gets no fence (the driver
   refuses a record there that is not captured), as gf_device_synchronize does not wait for it
   either: what it ran before the capture began is not waited for. */
typedef struct gf__retired {
    void (*release)(void *obj); void *obj;
    int kind; size_t bytes;         /* counted as GF_MEMORY_PENDING meanwhile (kind: before) */
    gf_event **fences; int fence_count;
    int hold;                       /* unfenced (the device could not be waited for): kept until a
                                       trim, an allocation that waits, or close */
    int when_idle;                  /* a release that waits for the device (backend release_waits):
                                       once its fences pass it moves to the idle releases */
} gf__retired;

static void gf__fences_free(gf_device *dev, gf_event **fences, int count) {
    int i;
    for (i = 0; i < count; i++) gf__event_pool_give(dev->events, fences[i]);
    gf__free(fences);
}
/* A fence on s if it has work outstanding (its lock held while the record is made). */
typedef struct gf__fence_list { gf_event **fences; int count, cap; } gf__fence_list;
static gf_result gf__fence_on(gf_stream *s, void *ctx) {
    gf__fence_list *list = (gf__fence_list *)ctx;
    gf_event ***fences = &list->fences;
    int *count = &list->count, *cap = &list->cap;
    const gf__backend *be = s->dev->be;
    gf_event *ev = NULL;
    gf_result r;
    gf__lock(&s->lock);
    r = be->stream_query(s);   /* a stream that fails to answer is fenced as a busy one */
    if (r != GF_OK) {
        if (!gf__grow((void **)fences, cap, *count + 1, sizeof **fences))
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: out of host memory for a deferred release");
        else if ((r = gf__event_pool_take(s->dev->events, 0, &ev)) == GF_OK) {
            if ((r = be->event_record(ev, s)) == GF_OK) (*fences)[(*count)++] = ev;
            else gf__event_pool_give(s->dev->events, ev);
        }
    }
    gf__unlock(&s->lock);
    return r;
}
/* Fences on every stream of the device with work outstanding, visited as gf_device_synchronize
   visits them. */
static gf_result gf__fences_make(gf_device *dev, gf_event ***out, int *count) {
    gf__fence_list list = { NULL, 0, 0 };
    gf_result r = gf__streams_visit(dev, gf__fence_on, &list, 1);
    if (r != GF_OK) { gf__fences_free(dev, list.fences, list.count); return r; }
    *out = list.fences;
    *count = list.count;
    return GF_OK;
}

static void gf__retired_settle(gf_device *dev, gf__retired *item) {   /* its fences back, no longer pending */
    gf__fences_free(dev, item->fences, item->fence_count);
    if (item->kind != GF__KIND_NO_MEMORY) gf__mem_count(dev, GF_MEMORY_PENDING, item->bytes, -1);
}
static void gf__retired_release(gf_device *dev, gf__retired *item) {
    gf__retired_settle(dev, item);
    item->release(item->obj);
}
/* Passed: released now, or (a release that waits for the device, by a collection that does
   not wait) handed to the idle releases. */
static void gf__retired_passed(gf_device *dev, gf__retired *item, int wait) {
    if (!item->when_idle || wait) { gf__retired_release(dev, item); return; }
    gf__retired_settle(dev, item);
    if (!gf__idle_push(dev, item->release, item->obj, 0)) item->release(item->obj);   /* no room: now */
}

/* Waits for every fence of an item (a fence that fails to answer counts as passed: the
   device is broken or closing). */
static void gf__retired_wait(gf_device *dev, const gf__retired *item) {
    int i;
    for (i = 0; i < item->fence_count; i++) (void)dev->be->event_synchronize(item->fences[i]);
}

/* obj's release, deferred until the work queued on the device before now has passed; at once
   when no stream has work outstanding. If the fences cannot be made (out of host memory, a
   driver failure) the device is waited for instead, as destroys did before; if that fails too,
   the memory is kept (and said): never a release under work that may still use it. */
static void gf__retire(gf_device *dev, void (*release)(void *obj), void *obj, int kind, size_t bytes, int when_idle) {
    gf__retired item;
    char saved[sizeof gf__error_text];
    int kept;
    item.release = release; item.obj = obj; item.kind = kind; item.bytes = bytes;
    item.fences = NULL; item.fence_count = 0; item.hold = 0; item.when_idle = when_idle;
    if (kind != GF__KIND_NO_MEMORY) {   /* pending until it goes (a view's handle too: 0 bytes) */
        gf__mem_move(dev, kind, GF_MEMORY_PENDING, bytes);
    }
    memcpy(saved, gf__error_text, sizeof saved);
    if (gf__fences_make(dev, &item.fences, &item.fence_count) != GF_OK) {
        gf__notice(GF_LOG_WARNING, "gpuflow: a destroy could not fence the device's streams (%s); waiting for the device instead", gf__error_text);
        if (gf__wait_device(dev) != GF_OK) {
            gf__notice(GF_LOG_WARNING, "gpuflow: waiting for the device failed too (%s): the memory is kept until a trim or the device's close",
                       gf__error_text);
            item.hold = 1;
        }
        /* the destroy went through (the warnings say how): a void destroy's caller reads an
           error text as a refusal, and would use the handle again */
        memcpy(gf__error_text, saved, sizeof saved);
    }
    if (item.fence_count || item.hold) {
        gf__lock(&dev->retired_lock);
        kept = gf__grow((void **)&dev->retired, &dev->retired_cap, dev->retired_count + 1, sizeof *dev->retired);
        if (kept) { dev->retired[dev->retired_count++] = item; gf__atomic_store_int(&dev->retired_pending, dev->retired_count); }
        gf__unlock(&dev->retired_lock);
        if (kept) return;
        gf__retired_wait(dev, &item);   /* no room to keep it: wait now */
    }
    gf__retired_release(dev, &item);
}

/* Releases what retired and whose fences have all passed; wait: waits for each fence first,
   and for what other threads' collections hold meanwhile (an allocation short of memory
   must not see an empty list while another thread is still releasing it). */
static void gf__retired_collect_once(gf_device *dev, int wait);
static GF__TLS int gf__collecting;   /* this thread runs a collection's releases */
static void gf__retired_collect(gf_device *dev, int wait) {
    unsigned nap = GF__WAIT_NAP_MIN_US;
    gf__retired_collect_once(dev, wait);
    if (wait && !gf__collecting) {
        while (gf__atomic_load_int(&dev->retired_busy)) {
            gf__sleep_us(nap);
            if (nap < GF__WAIT_NAP_MAX_US) nap *= 2;
        }
        gf__retired_collect_once(dev, 1);   /* what they put back, not passed yet */
    }
    gf__idle_drain(dev, wait ? GF__IDLE_NOW : GF__IDLE_OR_BOUND);   /* a collection that waits makes them all */
}
static void gf__retired_collect_once(gf_device *dev, int wait) {
    gf__retired *items;
    int count, i, j, kept = 0;
    if (!gf__atomic_load_int(&dev->retired_pending)) return;   /* the common case: one load */
    gf__lock(&dev->retired_lock);
    items = dev->retired; count = dev->retired_count;
    dev->retired = NULL; dev->retired_count = dev->retired_cap = 0;
    gf__atomic_store_int(&dev->retired_pending, 0);
    gf__atomic_add_int(&dev->retired_busy, 1);
    gf__unlock(&dev->retired_lock);
    gf__collecting++;
    for (i = 0; i < count; i++) {
        int passed = 1;
        if (wait) gf__retired_wait(dev, &items[i]);
        else for (j = 0, passed = !items[i].hold; j < items[i].fence_count && passed; j++) passed = dev->be->event_query(items[i].fences[j]) == GF_OK;
        if (passed) gf__retired_passed(dev, &items[i], wait);
        else items[kept++] = items[i];
    }
    if (kept) {   /* back, beside any retired meanwhile; without room, wait for them now */
        gf__lock(&dev->retired_lock);
        if (gf__grow((void **)&dev->retired, &dev->retired_cap, dev->retired_count + kept, sizeof *dev->retired)) {
            memcpy(dev->retired + dev->retired_count, items, sizeof *items * (size_t)kept);
            dev->retired_count += kept;
            kept = 0;
        }
        gf__atomic_store_int(&dev->retired_pending, dev->retired_count);
        gf__unlock(&dev->retired_lock);
        for (i = 0; i < kept; i++) { gf__retired_wait(dev, &items[i]); gf__retired_release(dev, &items[i]); }
    }
    gf__collecting--;
    gf__atomic_add_int(&dev->retired_busy, -1);
    gf__free(items);
}

/* Idle releases: driver calls that wait for every stream of the device (backend release_waits:
   CUDA's cuModuleUnload and cuMemFreeHost wait 280 ms behind another stream's 300 ms host
   function on an H100) are made only when none of the device's streams has work queued, so
   that a synchronize of one stream never waits for another's work. What is due waits here: a
   retired module whose fences passed, memory given to gf_host_free, surplus staging memory.
   Made by a collection that finds the device idle; by gf_device_synchronize, a collection that
   waits (trim, an allocation short of memory) and close whatever the streams do; and past
   GF__IDLE_RELEASE_KEEP bytes or GF__IDLE_RELEASE_MAX items by the next collection made outside
   the library's locks, waiting (GPUFLOW_SYNC_DEBUG names that wait; =error keeps them). Work
   the program queues outside gpuflow (a wrapped stream's, or other streams of a lent context)
   is not seen: a release made "idle" then still waits for it. */
typedef struct gf__idle_release { void (*release)(void *obj); void *obj; size_t bytes; } gf__idle_release;

/* Whether no stream of dev has work queued, by gpuflow's own count of what each stream ran,
   asking the driver where that count is behind. Not asked while this thread holds one of the
   library's locks (the walk takes the device's): then "busy". */
static gf_result gf__visit_idle(gf_stream *s, void *ctx) { (void)ctx; return !s->fence_only && gf__pending(s) ? GF_NOT_READY : GF_OK; }
static int gf__device_idle(gf_device *dev) {
    return !gf__locks_held && gf__streams_visit(dev, gf__visit_idle, NULL, 1) == GF_OK;
}
/* 0: no host memory to note it (the caller releases now). bytes: host memory it gives back. */
static int gf__idle_push(gf_device *dev, void (*release)(void *obj), void *obj, size_t bytes) {
    int kept;
    gf__lock(&dev->idle_lock);
    kept = gf__grow((void **)&dev->idle, &dev->idle_cap, dev->idle_count + 1, sizeof *dev->idle);
    if (kept) {
        dev->idle[dev->idle_count].release = release;
        dev->idle[dev->idle_count].obj = obj;
        dev->idle[dev->idle_count++].bytes = bytes;
        dev->idle_bytes += bytes;
        gf__atomic_store_int(&dev->idle_pending, dev->idle_count);
    }
    gf__unlock(&dev->idle_lock);
    return kept;
}
/* when: GF__IDLE_IF_IDLE only if the device is idle; GF__IDLE_OR_BOUND also past the bound,
   waiting; GF__IDLE_NOW whatever the streams do. */
static void gf__idle_drain(gf_device *dev, int when) {
    gf__idle_release *items;
    int count, i, over;
    if (!gf__atomic_load_int(&dev->idle_pending)) return;   /* the common case: one load */
    gf__lock(&dev->idle_lock);
    over = dev->idle_bytes > GF__IDLE_RELEASE_KEEP || dev->idle_count > GF__IDLE_RELEASE_MAX;
    gf__unlock(&dev->idle_lock);
    if (when != GF__IDLE_NOW && !gf__device_idle(dev)) {
        if (when == GF__IDLE_IF_IDLE || !over || !gf__may_wait_for_frees() || gf__sync_debug_mode() == 2) return;
        (void)gf__hidden_wait("a synchronize or allocation", NULL, "the device's streams have run (module code and pinned memory let go of, past the bound kept for an idle moment)");
    }
    gf__lock(&dev->idle_lock);
    items = dev->idle; count = dev->idle_count;
    dev->idle = NULL; dev->idle_count = dev->idle_cap = 0; dev->idle_bytes = 0;
    gf__atomic_store_int(&dev->idle_pending, 0);
    gf__unlock(&dev->idle_lock);
    for (i = 0; i < count; i++) items[i].release(items[i].obj);
    gf__free(items);
}

/* ---- events ------------------------------------------------------------------------- >>events */
static gf_result gf__event_new(gf_device *dev, unsigned flags, gf_event **out) {
    gf_event *ev = (gf_event *)gf__calloc(sizeof *ev);
    gf_result r;
    if (!ev) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_event_create: out of host memory");
    ev->type = GF__T_EVENT;
    ev->dev = dev;
    ev->flags = flags;
    if ((r = dev->be->event_create(ev)) != GF_OK) { gf__free(ev); return r; }
    *out = ev;
    return GF_OK;
}
static void gf__event_free(gf_event *ev) {
    if (gf__atomic_load_int(&gf__rec_on)) gf__rec_gone(ev);   /* one gpuflow made: its number goes with it */
    ev->dev->be->event_destroy(ev);
    gf__free(ev->race_vc);
    gf__obj_free(ev->dev, ev);
}

static gf_result gf__call_event_create(gf_device *dev, unsigned flags, gf_event **out) {
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (flags & ~GF_EVENT_TIMING) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_event_create: unknown flags 0x%x", flags);
    if ((r = GF__LOST_POINT(dev, "gf_event_create")) != GF_OK) return r;
    if ((r = gf__event_new(dev, flags, out)) == GF_OK) gf__live(dev, GF__T_EVENT, 1);
    return r;
}

static void gf__call_event_destroy(gf_event *ev) {
    gf_device *dev;
    int deferred;
    GF__CHECK_DESTROY(ev, GF__T_EVENT);
    if (ev->pool) { gf__set_error(GF_ERROR_INVALID_ARGUMENT, "gf_event_destroy: the event belongs to an event pool; release it there"); return; }
    dev = ev->dev;   /* once put off, the waiter thread may free ev at any time */
    if ((deferred = gf__after_waits_set(ev, GF__AFTER_FREE)) < 0) {
        gf__set_error(GF_ERROR_INVALID_STATE, "gf_event_destroy: the event was destroyed already (it goes when its gf_event_on_complete waits have run)");
        return;
    }
    gf__live(dev, GF__T_EVENT, -1);
    if (!deferred) gf__event_free(ev);
}

/* Records ev on s (s->lock held): the driver's record and the core's bookkeeping together,
   under the event's lock, so two threads recording one event leave the fields describing the
   record the driver kept. */
static gf_result gf__event_record_locked(gf_event *ev, gf_stream *s) {
    GF__HELD(&s->lock);
    gf_result r = GF_OK;
    uint64_t capture_id = 0;
    int capture_pos = 0;
    if (s->capture) {
        gf__lock(&s->dev->lock);
        capture_id = s->capture->id;
        capture_pos = s->capture_ops;
        gf__unlock(&s->dev->lock);
    }
    gf__spin_lock(&ev->lock);
    if (!s->capture || s->capture->by_driver) r = s->dev->be->event_record(ev, s);
    if (r == GF_OK) {
        gf__atomic_store(&ev->capture_id, capture_id);
        ev->capture_pos = capture_pos;
        if (!capture_id) ev->trace_id = s->last_trace_id;
        ev->stream = s;
        ev->stream_id = s->id;
        ev->stream_seq = gf__atomic_load(&s->submitted);
        gf__atomic_store_int(&ev->recorded, 1);
    }
    gf__spin_unlock(&ev->lock);
    if (r == GF_OK && !capture_id && GF__RACE_ON(s->dev)) gf__race_record(ev, s);
    return r;
}

/* A pooled event given back is the pool's until acquired again: a use of it (a use after
   release, as a use after free) is refused while it sits there. Not in its own
   gf_event_on_complete callbacks, which may name it (it waits for them, on no shelf); in any
   other callback it is refused as anywhere else (another thread may have it again). */
static gf_result gf__event_check_held(const char *fn, gf_event *ev) {
    if (gf__atomic_load_int(&ev->in_pool) && ev != gf__waiter_event) return gf__fail(GF_ERROR_INVALID_STATE, "%s: the event was released to its pool", fn);
    return GF_OK;
}

static gf_result gf__call_event_record(gf_event *ev, gf_stream *s) {
    gf_result r;
    GF__CHECK(ev, GF__T_EVENT);
    GF__CHECK(s, GF__T_STREAM);
    GF__SAME_DEVICE(ev->dev, s->dev);
    if ((r = gf__event_check_held("gf_event_record", ev)) != GF_OK) return r;
    gf__lock(&s->lock);
    r = s->capture ? GF_OK : GF__FAULT_POINT(s->dev, GF__FK_OP, "event record");
    if (r == GF_OK) r = gf__event_record_locked(ev, s);
    gf__unlock(&s->lock);
    return r;
}

/* s waits for ev (s->lock held). Inside a capture this is how streams fork and join. */
static gf_result gf__wait_locked(gf_stream *s, gf_event *ev) {
    GF__HELD(&s->lock);
    gf_device *dev = s->dev;
    gf__capture *c;
    gf_result r = GF_OK;
    gf__record_info rec = gf__event_latest(ev);
    if (!rec.recorded) return GF_OK;   /* as in CUDA: a never-recorded event is complete */
    gf__lock(&dev->lock);
    c = rec.capture_id ? gf__capture_find(dev, rec.capture_id) : NULL;
    if (!c && s->capture) {
        gf__unlock(&dev->lock);
        return gf__fail(GF_ERROR_CAPTURE, "gf_stream_wait_event: stream '%s' is capturing and the event was not recorded in its capture", s->label);
    }
    if (c && s->capture && s->capture != c) {
        gf__unlock(&dev->lock);
        return gf__fail(GF_ERROR_CAPTURE, "gf_stream_wait_event: the event belongs to another capture");
    }
    if (c) {
        if (!s->capture) {   /* fork: s joins the capture */
            if (!gf__grow((void **)&c->members, &c->member_cap, c->member_count + 1, sizeof *c->members)) {
                gf__unlock(&dev->lock);
                return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_wait_event: out of host memory");
            }
            c->members[c->member_count++] = s;
            s->capture = c;
            s->capture_ops = 0;
            s->capture_joined = 0;
        } else if (rec.stream != s && rec.stream->capture_joined < rec.capture_pos) {
            rec.stream->capture_joined = rec.capture_pos;   /* join: the recording stream's work so far is covered */
        }
        s->capture_ops++;
        gf__unlock(&dev->lock);
        return c->by_driver ? dev->be->stream_wait_event(s, ev) : GF_OK;
    }
    gf__unlock(&dev->lock);
    if (rec.capture_id) return GF_OK;   /* a place in an ended capture's graph: nothing to wait for (gf__event_marks_work) */
    {
        int prof = rec.stream != s ? gf__prof_begin(s, GF_OP_WAIT, NULL, 0, rec.trace_id) : -1;
        r = dev->be->stream_wait_event(s, ev);
        gf__prof_end(s, prof, r);
        if (r == GF_OK) {
            gf__note_op(s, GF_OP_WAIT, NULL, rec.stream_id)->waits_on_seq = rec.stream_seq;
            if (GF__RACE_ON(dev)) gf__race_wait(s, ev);
        }
    }
    return r;
}

static gf_result gf__call_stream_wait_event(gf_stream *s, gf_event *ev) {
    gf_result r;
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK(ev, GF__T_EVENT);
    if ((r = gf__event_check_held("gf_stream_wait_event", ev)) != GF_OK) return r;
    if (s->dev != ev->dev) {
        if (!gf__device_is_open(ev->dev)) return gf__fail(GF_ERROR_INVALID_HANDLE, "gf_stream_wait_event: the event belongs to a device that was closed");
        return gf__wait_event_across(s, ev);
    }
    gf__lock(&s->lock);
    r = s->capture ? GF_OK : GF__FAULT_POINT(s->dev, GF__FK_OP, "wait");
    if (r == GF_OK) r = gf__wait_locked(s, ev);
    gf__unlock(&s->lock);
    return r;
}

static gf_result gf__call_stream_wait_stream(gf_stream *waiter, gf_stream *other) {
    gf_event *ev;
    gf_result r;
    GF__CHECK(waiter, GF__T_STREAM);
    GF__CHECK(other, GF__T_STREAM);
    if (waiter->dev != other->dev) {
        if (!gf__device_is_open(other->dev) || !gf__device_is_open(waiter->dev))
            return gf__fail(GF_ERROR_INVALID_HANDLE, "gf_stream_wait_stream: a stream of a device that was closed");
        return gf__wait_stream_across(waiter, other);
    }
    if (waiter == other) return GF_OK;
    gf__lock(&waiter->lock);   /* one operation, a wait, as gf_stream_wait_event (faults on demand count it) */
    r = waiter->capture ? GF_OK : GF__FAULT_POINT(waiter->dev, GF__FK_OP, "wait");
    gf__unlock(&waiter->lock);
    if (r != GF_OK) return r;
    if ((r = gf__event_pool_take(waiter->dev->events, 0, &ev)) != GF_OK) return r;
    gf__lock(&other->lock);
    r = gf__event_record_locked(ev, other);
    gf__unlock(&other->lock);
    if (r == GF_OK) {
        gf__lock(&waiter->lock);
        r = gf__wait_locked(waiter, ev);
        gf__unlock(&waiter->lock);
    }
    gf__event_pool_give(waiter->dev->events, ev);   /* the wait already holds what it needs */
    return r;
}

static gf_result gf__event_check_wait(const char *fn, gf_event *ev) {
    if (gf__event_in_capture(ev))
        return gf__fail(GF_ERROR_CAPTURE, "%s: the event was recorded inside a capture in progress; it completes only when the graph runs", fn);
    return GF_OK;
}
/* ev's latest record marks work outside any graph: the host can wait for it. Never recorded,
   or last recorded inside a capture (which marked a place in the graph, not work queued
   anywhere: the replays do not record it), it is complete to waits and queries, on every
   backend (a driver's capture would refuse it as a captured event), and has no time. */
static int gf__event_marks_work(gf_event *ev) {
    return gf__atomic_load_int(&ev->recorded) && !gf__atomic_load(&ev->capture_id);
}

/* An event's wait or query answered: done means the host knows its record completed (a wait
   that failed ended too: as gf__stream_settle). */
static gf_result gf__event_settle(gf_event *ev, gf_result r, gf__race_seen *race_seen, int waited) {
    gf__race_seen_done(ev->dev, race_seen, r == GF_OK || (waited && r < 0));
    return r;
}

/* A wait from a host callback for an event that completes only once the callback returns:
   recorded after it on its own stream, or on a stream that waits behind it. Refused (a bounded
   wait could only time out). */
static gf_result gf__event_refuse_self_wait(const char *fn, gf_event *ev) {
    gf_result r = gf__refuse_forked(ev->dev, fn);
    gf__record_info rec;
    if (r != GF_OK || !gf__callback_stream || gf__callback_stream->dev != ev->dev || !gf__atomic_load_int(&ev->recorded)) return r;
    rec = gf__event_latest(ev);
    /* recorded after this callback on its stream (a record takes no place of its own: its
       place is that of the op before it): known without the driver (CUDA and HIP refuse a query
       from a callback) */
    if (rec.stream_id == gf__callback_stream->id &&
        ((gf__callback_seq && rec.stream_seq >= gf__callback_seq) || ev->dev->be->event_query(ev) == GF_NOT_READY))
        return gf__refuse_self_wait(fn, ev->dev, gf__callback_stream);
    if (ev->dev->be->event_query(ev) == GF_NOT_READY && gf__event_behind_callback(ev, &rec))
        return gf__fail(GF_ERROR_INVALID_STATE, "%s: called from a host callback of stream '%s', it would wait for an event whose stream "
                        "waits (itself or through other streams) for work queued on '%s' after that callback, and never end; wait "
                        "outside the callback (signal a thread of your own, or use gf_event_on_complete)", fn,
                        gf__callback_stream->label, gf__callback_stream->label);
    return GF_OK;
}
/* What a hang report says a wait for ev waits for; prefix: the call, or "". */
static const char *gf__event_wait_what(const char *prefix, gf_event *ev, char *what, size_t size) {
    gf__record_info rec = gf__event_latest(ev);
    char label[80];
    gf__stream_label_of(ev->dev, rec.stream_id, label, sizeof label);
    snprintf(what, size, "%.64swaiting for an event recorded on %s", prefix, label);
    return what;
}
/* What a complete event tells its program: GF_OK, or the failure of the work before it where
   the backend keeps that apart from completion (the stub; r: the backend's query or wait). */
static gf_result gf__event_outcome(gf_event *ev, gf_result r) {
    return r == GF_OK && ev->dev->be->event_failure ? ev->dev->be->event_failure(ev) : r;
}
/* A wait for ev's completion, for fn (the library's own pacing too): GF_OK once complete,
   whether its work failed or not (gf__event_outcome tells that to the program). */
static gf_result gf__event_sync_done(const char *fn, gf_event *ev) {
    gf__race_seen race_seen;
    gf_result r;
    if ((r = GF__FAULT_POINT(ev->dev, GF__FK_SYNC, fn)) != GF_OK) return r;
    if ((r = gf__event_refuse_self_wait(fn, ev)) != GF_OK) return r;
    if (!gf__event_marks_work(ev)) return GF_OK;
    race_seen = gf__race_seen_event(ev);
    if (ev->dev->hang_ms && gf__poll(gf__event_query_backend, ev, ev->dev->hang_ms) == GF_TIMEOUT) {
        char what[192];
        gf__hang_report(ev->dev, gf__event_wait_what("", ev, what, sizeof what));
    }
    return gf__event_settle(ev, ev->dev->be->event_synchronize(ev), &race_seen, 1);
}
/* Whether ev has completed, without waiting (as gf__event_sync_done). */
static gf_result gf__event_query_done(gf_event *ev) {
    gf__race_seen race_seen;
    if (!gf__event_marks_work(ev)) return GF_OK;
    race_seen = gf__race_seen_event(ev);
    return gf__event_settle(ev, ev->dev->be->event_query(ev), &race_seen, 0);
}
static gf_result gf__call_event_synchronize(gf_event *ev) {
    gf_result r;
    GF__CHECK(ev, GF__T_EVENT);
    if ((r = gf__event_check_held("gf_event_synchronize", ev)) != GF_OK) return r;
    if ((r = gf__event_check_wait("gf_event_synchronize", ev)) != GF_OK) return r;
    r = gf__event_sync_done("gf_event_synchronize", ev);
    return gf__event_marks_work(ev) ? gf__event_outcome(ev, r) : r;
}

static gf_result gf__event_query_backend(void *p) { gf_event *ev = (gf_event *)p; return ev->dev->be->event_query(ev); }

/* A bounded wait for ev on behalf of fn: GF_TIMEOUT is returned quietly (fn says what it means).
   report: a wait past GPUFLOW_HANG_MS logs the state (not for the frame waits' short slices). */
static gf_result gf__event_wait_for(const char *fn, gf_event *ev, unsigned timeout_ms, int report) {
    char what[192] = "";
    gf__race_seen race_seen;
    gf_result r;
    if ((r = gf__event_check_wait(fn, ev)) != GF_OK) return r;
    if ((r = GF__FAULT_POINT(ev->dev, GF__FK_SYNC, fn)) != GF_OK) return r;
    if ((r = gf__event_refuse_self_wait(fn, ev)) != GF_OK) return r;
    if (!gf__event_marks_work(ev)) return GF_OK;
    race_seen = gf__race_seen_event(ev);
    if (report && ev->dev->hang_ms) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s: ", fn);
        gf__event_wait_what(prefix, ev, what, sizeof what);
    }
    r = report ? gf__poll_reported(ev->dev, gf__event_query_backend, ev, timeout_ms, what) : gf__poll(gf__event_query_backend, ev, timeout_ms);
    return gf__event_settle(ev, r, &race_seen, 1);   /* a timeout frees the snapshot */
}
static gf_result gf__call_event_synchronize_timeout(gf_event *ev, unsigned timeout_ms) {
    gf_result r;
    GF__CHECK(ev, GF__T_EVENT);
    if ((r = gf__event_check_held("gf_event_synchronize_timeout", ev)) != GF_OK) return r;
    if ((r = gf__event_wait_for("gf_event_synchronize_timeout", ev, timeout_ms, 1)) == GF_TIMEOUT)
        return gf__fail(GF_TIMEOUT, "gf_event_synchronize_timeout: the event's work had not completed after %u ms", timeout_ms);
    return gf__event_marks_work(ev) ? gf__event_outcome(ev, r) : r;
}

static gf_result gf__call_event_query(gf_event *ev) {
    gf_result r;
    GF__CHECK(ev, GF__T_EVENT);
    if ((r = gf__event_check_held("gf_event_query", ev)) != GF_OK) return r;
    if ((r = gf__event_check_wait("gf_event_query", ev)) != GF_OK) return r;
    if ((r = GF__LOST_POINT(ev->dev, "gf_event_query")) != GF_OK) return r;
    r = gf__event_query_done(ev);
    return gf__event_marks_work(ev) ? gf__event_outcome(ev, r) : r;
}

static gf_result gf__call_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    gf_result r;
    GF__CHECK(start, GF__T_EVENT);
    GF__CHECK(end, GF__T_EVENT);
    GF__CHECK_OUT(ms);
    GF__SAME_DEVICE(start->dev, end->dev);
    if ((r = gf__event_check_held("gf_event_elapsed_ms", start)) != GF_OK || (r = gf__event_check_held("gf_event_elapsed_ms", end)) != GF_OK)
        return r;
    if (!(start->flags & GF_EVENT_TIMING) || !(end->flags & GF_EVENT_TIMING))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_event_elapsed_ms: %s event was created without GF_EVENT_TIMING",
                        !(start->flags & GF_EVENT_TIMING) ? "the start" : "the end");
    if (!gf__atomic_load_int(&start->recorded) || !gf__atomic_load_int(&end->recorded))
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_event_elapsed_ms: %s event has never been recorded",
                        !gf__atomic_load_int(&start->recorded) ? "the start" : "the end");
    if ((r = gf__event_check_wait("gf_event_elapsed_ms", start)) != GF_OK || (r = gf__event_check_wait("gf_event_elapsed_ms", end)) != GF_OK) return r;
    if ((r = GF__LOST_POINT(start->dev, "gf_event_elapsed_ms")) != GF_OK) return r;
    if (!gf__event_marks_work(start) || !gf__event_marks_work(end))
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_event_elapsed_ms: %s event was last recorded inside a capture, which gives it no time "
                        "(the graph's replays do not record it): record it outside the capture, around the graph's launch",
                        !gf__event_marks_work(start) ? "the start" : "the end");
    if ((r = gf__event_outcome(start, start->dev->be->event_query(start))) != GF_OK || (r = gf__event_outcome(end, end->dev->be->event_query(end))) != GF_OK) {
        if (r == GF_NOT_READY) gf__set_error(GF_NOT_READY, "gf_event_elapsed_ms: the events have not completed yet");
        return r;
    }
    return start->dev->be->event_elapsed_ms(start, end, ms);
}

/* ---- event pools ---------------------------------------------------------------- >>eventpools */
/* Acquiring and releasing a pooled event costs a lock and a pointer move instead of a driver
   create and destroy. Free events sit on shelves, one per thread (threads share them past
   GF__EVENT_SHELVES), each on cache lines of its own, so threads that cycle events never
   touch a line another thread writes; behind them, one shared free list per kind (plain,
   timing) takes what a full shelf cannot hold and feeds empty ones. A shelf is reachable from
   every thread, so events a thread leaves on its shelf when it exits are found again: an empty
   shared list collects every shelf's events before the pool makes new ones. An event goes back
   to the shelf it came from, under that shelf's lock: two releases of one event, from any
   threads, meet on one lock, and the second is refused.
   Lock order: the pool's lock, then a shelf's. */
#define GF__EVENT_SHELVES 16          /* shelves per pool; thread n uses shelf n % 16 */
#define GF__EVENT_SHELF_SIZE 8        /* free events a shelf keeps per kind */

typedef struct gf__event_shelf {
    gf__spin lock;
    int count[2];                                     /* [0] plain, [1] timing */
    gf_event *items[2][GF__EVENT_SHELF_SIZE];
} gf__event_shelf;

struct gf_event_pool {
    uint32_t type;
    gf_device *dev;
    gf__spin lock;                 /* the shared lists and the list of all events */
    gf_event **free_list[2]; int free_count[2], free_cap[2];   /* [0] plain, [1] timing */
    int created[2];                /* per kind: the shared list can hold them all */
    gf_event **all; int all_count, all_cap;
    int destroyed;                 /* the waiter's lock: gf_event_pool_destroy came while waits were pending */
    int waiting;                   /* atomic: then, its events whose waits are still pending */
    char gap[GF__CACHE_LINE];      /* keeps the fields above off shelf 0's line */
    struct { gf__event_shelf shelf; char gap[GF__CACHE_LINE]; } shelves[GF__EVENT_SHELVES];
};

/* The calling thread's shelf + 1, shelves dealt round robin in the order threads first ask (0:
   not yet asked). The count wraps (atomics wrap; unsigned arithmetic after), harmlessly. */
static GF__TLS int gf__thread_shelf_1;
static int gf__threads_numbered;   /* atomic */
static int gf__thread_shelf(void) {
    if (!gf__thread_shelf_1) gf__thread_shelf_1 = (int)((unsigned)gf__atomic_add_int(&gf__threads_numbered, 1) % GF__EVENT_SHELVES) + 1;
    return gf__thread_shelf_1 - 1;
}

static gf_result gf__event_pool_grow(gf_event_pool *pool, int timing, int n) {   /* pool->lock held */
    int k = timing ? 1 : 0;
    while (n-- > 0) {
        gf_event *ev = NULL;
        gf_result r;
        if (!gf__grow((void **)&pool->all, &pool->all_cap, pool->all_count + 1, sizeof *pool->all) ||
            !gf__grow((void **)&pool->free_list[k], &pool->free_cap[k], pool->created[k] + 1, sizeof(gf_event *)))
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_event_pool: out of host memory");
        if ((r = gf__event_new(pool->dev, timing ? GF_EVENT_TIMING : 0, &ev)) != GF_OK) return r;
        ev->pool = pool;
        ev->in_pool = 1;
        pool->all[pool->all_count++] = ev;
        pool->created[k]++;
        pool->free_list[k][pool->free_count[k]++] = ev;
    }
    return GF_OK;
}

static gf_result gf__call_event_pool_create(gf_device *dev, const gf_event_pool_desc *desc, gf_event_pool **out) {
    gf_event_pool *pool;
    gf_result r;
    int plain = desc ? desc->capacity : 0, timing = desc ? desc->timing_capacity : 0;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (plain < 0 || timing < 0 || plain > GF_EVENT_POOL_MAX || timing > GF_EVENT_POOL_MAX)   /* INT_MAX made events for minutes */
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_event_pool_create: capacities must be 0 to GF_EVENT_POOL_MAX (%d); "
                        "got %d and %d (timing)", GF_EVENT_POOL_MAX, plain, timing);
    if (!(pool = (gf_event_pool *)gf__calloc(sizeof *pool))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_event_pool_create: out of host memory");
    pool->type = GF__T_EVENT_POOL;
    pool->dev = dev;
    if ((r = gf__event_pool_grow(pool, 0, plain ? plain : GF__DEFAULT_EVENT_POOL)) != GF_OK ||
        (r = gf__event_pool_grow(pool, 1, timing ? timing : GF__DEFAULT_EVENT_POOL)) != GF_OK) {
        gf__event_pool_free(pool);
        return r;
    }
    gf__live(dev, GF__T_EVENT_POOL, 1);
    *out = pool;
    return GF_OK;
}

/* An event of kind k from the shared list (pool->lock held): when it is empty, first every
   shelf's events of that kind, then a new one. */
static gf_result gf__event_pool_take_shared(gf_event_pool *pool, int k, gf_event **out) {
    int i;
    if (pool->free_count[k] == 0)
        for (i = 0; i < GF__EVENT_SHELVES; i++) {
            gf__event_shelf *shelf = &pool->shelves[i].shelf;
            gf__spin_lock(&shelf->lock);
            while (shelf->count[k]) pool->free_list[k][pool->free_count[k]++] = shelf->items[k][--shelf->count[k]];
            gf__spin_unlock(&shelf->lock);
        }
    if (pool->free_count[k] == 0) {
        gf_result r = gf__event_pool_grow(pool, k, 1);
        if (r != GF_OK) return r;
    }
    *out = pool->free_list[k][--pool->free_count[k]];
    return GF_OK;
}

static gf_result gf__event_pool_take(gf_event_pool *pool, unsigned flags, gf_event **out) {
    int k = (flags & GF_EVENT_TIMING) ? 1 : 0, home = gf__thread_shelf();
    gf__event_shelf *shelf = &pool->shelves[home].shelf;
    gf_event *ev = NULL;
    gf__spin_lock(&shelf->lock);
    if (shelf->count[k]) ev = shelf->items[k][--shelf->count[k]];
    gf__spin_unlock(&shelf->lock);
    if (!ev) {
        gf_result r;
        gf__spin_lock(&pool->lock);
        r = gf__event_pool_take_shared(pool, k, &ev);
        gf__spin_unlock(&pool->lock);
        if (r != GF_OK) return r;
    }
    /* ours alone now: the lock it came out under ordered the last holder's writes before these.
       A thread that waited for its last record may still read it (gf_flow_wait_frames waits for a
       run's lane end with the flow let go): the fields it reads unlocked here are atomics. */
    gf__atomic_store_int(&ev->shelf, home);
    gf__atomic_store_int(&ev->in_pool, 0);
    gf__atomic_store_int(&ev->recorded, 0);
    gf__atomic_store(&ev->capture_id, (uint64_t)0);
    *out = ev;
    return GF_OK;
}

/* Back onto the shelf it came from (the shared list when that shelf is full). Returns 0, and
   changes nothing, when the event is already in the pool. marked: a release that came while
   waits were pending marked it in the pool already (gf__after_waits_set); it is shelved now. */
static int gf__event_pool_put(gf_event_pool *pool, gf_event *ev, int marked) {
    int k = (ev->flags & GF_EVENT_TIMING) ? 1 : 0, shelved = 0;
    gf__event_shelf *shelf = &pool->shelves[gf__atomic_load_int(&ev->shelf)].shelf;
    gf__spin_lock(&shelf->lock);
    if (!marked && gf__atomic_load_int(&ev->in_pool)) { gf__spin_unlock(&shelf->lock); return 0; }
    gf__atomic_store_int(&ev->in_pool, 1);
    if (shelf->count[k] < GF__EVENT_SHELF_SIZE) { shelf->items[k][shelf->count[k]++] = ev; shelved = 1; }
    gf__spin_unlock(&shelf->lock);
    if (!shelved) {
        gf__spin_lock(&pool->lock);
        pool->free_list[k][pool->free_count[k]++] = ev;   /* capacity: every event has a slot */
        gf__spin_unlock(&pool->lock);
    }
    return 1;
}
static void gf__event_pool_give(gf_event_pool *pool, gf_event *ev) {   /* the core's own events */
    int put = gf__event_pool_put(pool, ev, 0);
    GPUFLOW_ASSERT(put);   /* the core releases each of its events once */
    (void)put;
}

static gf_result gf__call_event_pool_acquire(gf_event_pool *pool, unsigned flags, gf_event **out) {
    GF__OUT_NULL(out);
    GF__CHECK(pool, GF__T_EVENT_POOL);
    GF__CHECK_OUT(out);
    if (flags & ~GF_EVENT_TIMING) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_event_pool_acquire: unknown flags 0x%x", flags);
    return gf__event_pool_take(pool, flags, out);
}

static gf_result gf__call_event_pool_release(gf_event_pool *pool, gf_event *ev) {
    int deferred;
    GF__CHECK(pool, GF__T_EVENT_POOL);
    GF__CHECK(ev, GF__T_EVENT);
    if (ev->pool != pool) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_event_pool_release: the event does not come from this pool");
    deferred = gf__after_waits_set(ev, GF__AFTER_RELEASE);   /* waits pending: it goes back when they have run */
    if (deferred < 0 || (!deferred && !gf__event_pool_put(pool, ev, 0)))
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_event_pool_release: the event was already released");
    return GF_OK;
}

/* A snapshot: events move between shelves and users while it is counted. */
GPUFLOW_IMPL gf_result gf_event_pool_get_stats(gf_event_pool *pool, gf_event_pool_stats *out) {
    int i, available;
    GF__CHECK(pool, GF__T_EVENT_POOL);
    GF__CHECK_OUT(out);
    gf__spin_lock(&pool->lock);
    available = pool->free_count[0] + pool->free_count[1];
    for (i = 0; i < GF__EVENT_SHELVES; i++) {
        gf__event_shelf *shelf = &pool->shelves[i].shelf;
        gf__spin_lock(&shelf->lock);
        available += shelf->count[0] + shelf->count[1];
        gf__spin_unlock(&shelf->lock);
    }
    out->available = available;
    out->in_use = pool->all_count - available;
    out->created = pool->all_count;
    gf__spin_unlock(&pool->lock);
    return GF_OK;
}

static void gf__event_pool_free(gf_event_pool *pool) {
    int i;
    for (i = 0; i < pool->all_count; i++) gf__event_free(pool->all[i]);
    gf__free(pool->all);
    gf__free(pool->free_list[0]);
    gf__free(pool->free_list[1]);
    gf__obj_free(pool->dev, pool);
}

/* Destroys every event the pool made, including those still acquired. While a
   gf_event_on_complete wait is pending on one of them the pool stays (the waiter thread reads
   the event): the last such wait to run or be cancelled frees it. */
static void gf__call_event_pool_destroy(gf_event_pool *pool) {
    gf_device *dev;
    int deferred;
    GF__CHECK_DESTROY(pool, GF__T_EVENT_POOL);
    dev = pool->dev;   /* once put off, the waiter thread may free the pool at any time */
    if ((deferred = gf__after_waits_pool(pool)) < 0) {
        gf__set_error(GF_ERROR_INVALID_STATE, "gf_event_pool_destroy: the pool was destroyed already (it goes when the gf_event_on_complete waits on its events have run)");
        return;
    }
    gf__live(dev, GF__T_EVENT_POOL, -1);
    if (!deferred) gf__event_pool_free(pool);
}

/* ---- stream pools -------------------------------------------------------------- >>streampools */
/* A fixed set of streams made once; acquiring picks one by strategy and costs no driver call
   (LEAST_PENDING queries the busy ones). Streams are shared, not exclusive: a lease counts
   users so that acquire_ready can find a stream nobody holds and nothing runs on. */
struct gf_stream_pool {
    uint32_t type;
    gf_device *dev;
    gf_pool_strategy strategy;
    int count;
    int measure;
    gf_stream *streams[GF_POOL_MAX_STREAMS];
    char gap[GF__CACHE_LINE];
    gf__atomic64 next;                            /* atomic round-robin cursor */
    char gap2[GF__CACHE_LINE];
    struct {                                      /* per stream, on lines of their own: atomics */
        gf__atomic64 acquisitions, releases;      /* held now = acquisitions - releases */
        char gap[GF__CACHE_LINE - 2 * sizeof(uint64_t)];
    } lease[GF_POOL_MAX_STREAMS];
    gf__mutex lock;                               /* completion statistics */
    uint64_t completions[GF_WORKLOAD_COUNT];
    double completion_ms[GF_WORKLOAD_COUNT];
    int measuring;                                /* completion waits in flight (atomic) */
    gf__completion *in_flight;                    /* those waits' completions (lock) */
};

static const gf_priority gf__pool_priorities[3] = { GF_PRIORITY_HIGH, GF_PRIORITY_NORMAL, GF_PRIORITY_LOW };

static gf_result gf__call_stream_pool_create(gf_device *dev, const gf_stream_pool_desc *desc, gf_stream_pool **out) {
    gf_stream_pool *pool;
    int count = desc && desc->count ? desc->count : GF__DEFAULT_POOL_STREAMS, i;
    gf_pool_strategy strategy = desc ? desc->strategy : GF_POOL_ROUND_ROBIN;
    const char *label = desc && desc->label ? desc->label : "pool";
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (count < 1 || count > GF_POOL_MAX_STREAMS)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_pool_create: count %d is outside 1..%d", count, GF_POOL_MAX_STREAMS);
    if (strategy < GF_POOL_ROUND_ROBIN || strategy > GF_POOL_WORKLOAD)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_pool_create: strategy %d is not a gf_pool_strategy", (int)strategy);
    if (!(pool = (gf_stream_pool *)gf__calloc(sizeof *pool))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_pool_create: out of host memory");
    pool->type = GF__T_STREAM_POOL;
    pool->dev = dev;
    pool->strategy = strategy;
    pool->measure = desc ? desc->measure_completion : 0;
    gf__mutex_init(&pool->lock);
    for (i = 0; i < count; i++) {
        char name[64];
        gf_result r;
        gf_priority prio = strategy == GF_POOL_PRIORITY && count > 1 ? gf__pool_priorities[i % 3] : GF_PRIORITY_NORMAL;   /* one stream: all work is NORMAL's */
        snprintf(name, sizeof name, "%s/%d", label, i);
        if ((r = gf__stream_new(dev, name, prio, 1, &pool->streams[i])) != GF_OK) {
            pool->count = i;
            gf_stream_pool_destroy(pool);
            return r;
        }
        pool->streams[i]->pool = pool;
        pool->streams[i]->pool_index = i;
        pool->count = i + 1;
    }
    gf__live(dev, GF__T_STREAM_POOL, 1);
    *out = pool;
    return GF_OK;
}

static uint64_t gf__pending(gf_stream *s) {
    uint64_t sub = gf__atomic_load(&s->submitted);   /* before the query: what a "done" answer covers */
    if (gf__stream_unsettled(s)) {   /* refresh: the driver may have finished since we last looked */
        gf__race_seen race_seen = gf__race_seen_stream(s);
        if (gf__stream_settle(s, s->dev->be->stream_query(s), sub, &race_seen, 0) == GF_OK) return 0;
    }
    return gf__stream_unsettled(s);
}

/* Among the streams i with i % classes == cls (all when cls < 0), the least pending one. */
static int gf__pool_least_pending(gf_stream_pool *pool, int cls, int classes) {
    int best = -1, i;
    uint64_t best_pending = 0;
    int start = (int)(gf__atomic_add(&pool->next, 1) % (uint64_t)pool->count);
    for (i = 0; i < pool->count; i++) {
        int k = (start + i) % pool->count;
        uint64_t p;
        if (cls >= 0 && k % classes != cls) continue;
        p = gf__pending(pool->streams[k]);
        if (best < 0 || p < best_pending) { best = k; best_pending = p; }
        if (p == 0) break;   /* an idle stream beats any busy one */
    }
    return best;
}

static int gf__pool_pick(gf_stream_pool *pool, const gf_acquire_hint *hint) {
    int classes = pool->count < 3 ? pool->count : 3;
    switch (pool->strategy) {
    case GF_POOL_LEAST_PENDING:
        return gf__pool_least_pending(pool, -1, 1);
    case GF_POOL_PRIORITY: {
        /* stream i has priority gf__pool_priorities[i % 3]; pick in turn among the matching */
        gf_priority want = hint ? hint->priority : GF_PRIORITY_NORMAL;
        int cls = want == GF_PRIORITY_HIGH ? 0 : want == GF_PRIORITY_NORMAL ? 1 : 2;
        int members = (pool->count - cls + 2) / 3, turn;
        if (cls >= pool->count) cls = pool->count - 1, members = 1;
        turn = (int)(gf__atomic_add(&pool->next, 1) % (uint64_t)members);
        return cls + 3 * turn;
    }
    case GF_POOL_WORKLOAD: {
        /* compute, memory and coordination each keep to their own streams, so copies overlap kernels */
        gf_workload w = hint ? hint->workload : GF_WORKLOAD_ANY;
        int cls = w == GF_WORKLOAD_COMPUTE ? 0 : w == GF_WORKLOAD_MEMORY ? 1 : w == GF_WORKLOAD_COORDINATION ? 2 : -1;
        if (cls < 0) return gf__pool_least_pending(pool, -1, 1);
        return gf__pool_least_pending(pool, cls % classes, classes);
    }
    case GF_POOL_ROUND_ROBIN:
    default:
        return (int)(gf__atomic_add(&pool->next, 1) % (uint64_t)pool->count);
    }
}

/* Completion timing starts at the acquire (measure_completion pools only). */
static void gf__pool_note_lease(gf_stream_pool *pool, int i, const gf_acquire_hint *hint) {
    gf_stream *s = pool->streams[i];
    if (pool->measure) {
        gf__lock(&s->lock);
        s->lease_t0 = gf__now_ns();
        s->lease_workload = hint ? hint->workload : GF_WORKLOAD_ANY;
        gf__unlock(&s->lock);
    }
}

static gf_result gf__check_hint(const gf_acquire_hint *hint) {
    if (hint && (hint->priority < GF_PRIORITY_NORMAL || hint->priority > GF_PRIORITY_LOW ||
                 hint->workload < GF_WORKLOAD_ANY || hint->workload > GF_WORKLOAD_COORDINATION))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_pool_acquire: the hint's priority or workload is out of range");
    return GF_OK;
}

static gf_result gf__call_stream_pool_acquire(gf_stream_pool *pool, const gf_acquire_hint *hint, gf_stream **out) {
    int i;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(pool, GF__T_STREAM_POOL);
    GF__CHECK_OUT(out);
    if ((r = gf__check_hint(hint)) != GF_OK) return r;
    i = gf__pool_pick(pool, hint);
    gf__atomic_add(&pool->lease[i].acquisitions, 1);
    gf__pool_note_lease(pool, i, hint);
    *out = pool->streams[i];
    return GF_OK;
}

static gf_result gf__call_stream_pool_acquire_ready(gf_stream_pool *pool, unsigned timeout_ms, gf_stream **out) {
    uint64_t deadline;
    unsigned nap = GF__WAIT_NAP_MIN_US;
    GF__OUT_NULL(out);
    GF__CHECK(pool, GF__T_STREAM_POOL);
    GF__CHECK_OUT(out);
    deadline = gf__now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        int i;
        for (i = 0; i < pool->count; i++) {
            gf_stream *s = pool->streams[i];
            uint64_t held = gf__atomic_load(&pool->lease[i].acquisitions);
            /* nobody holds it, nothing runs on it, and no other thread took it meanwhile */
            if (gf__atomic_load(&pool->lease[i].releases) == held && gf__pending(s) == 0 &&
                gf__atomic_cas(&pool->lease[i].acquisitions, held, held + 1)) {
                gf__pool_note_lease(pool, i, NULL);
                *out = s;
                return GF_OK;
            }
        }
        if (gf__now_ns() >= deadline) {
            int failed = 0;   /* a stream that keeps a failure is never idle again: say so, or the wait reads as load */
            for (i = 0; i < pool->count; i++) failed += gf__atomic_load_int(&pool->streams[i]->status) < 0;
            if (failed)
                return gf__fail(GF_TIMEOUT, "gf_stream_pool_acquire_ready: no stream became idle within %u ms; %d of the pool's %d streams "
                                "failed and keep their failure (gf_stream_pool_synchronize says it): make the pool anew", timeout_ms, failed, pool->count);
            return gf__fail(GF_TIMEOUT, "gf_stream_pool_acquire_ready: no stream became idle within %u ms", timeout_ms);
        }
        gf__sleep_us(nap);
        if (nap < GF__WAIT_NAP_MAX_US) nap *= 2;
    }
}

/* A lease's completion being measured: on its pool's in_flight list (pool->lock) from before its
   wait is added until it is settled, so the pool can always find and settle its own. */
struct gf__completion {
    gf_stream_pool *pool; gf_workload workload; uint64_t t0; gf_event *ev;
    uint64_t wait_id;
    gf__completion *prev, *next;
};
static void gf__completion_unlink(gf__completion *c) {
    GF__HELD(&c->pool->lock);
    if (c->prev) c->prev->next = c->next; else c->pool->in_flight = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
}
static void gf__completion_settle(gf__completion *c) {   /* off the list already */
    gf_stream_pool *pool = c->pool;
    gf__event_pool_give(pool->dev->events, c->ev);
    gf__free(c);
    gf__atomic_add_int(&pool->measuring, -1);
}

static void gf__pool_completed(void *user, gf_result status) {
    gf__completion *c = (gf__completion *)user;
    gf_stream_pool *pool = c->pool;
    (void)status;
    gf__lock(&pool->lock);
    gf__completion_unlink(c);
    pool->completions[c->workload]++;
    pool->completion_ms[c->workload] += (double)(gf__now_ns() - c->t0) / 1e6;
    gf__unlock(&pool->lock);
    gf__completion_settle(c);
}

static gf_result gf__call_stream_pool_release(gf_stream_pool *pool, gf_stream *s) {
    int i;
    GF__CHECK(pool, GF__T_STREAM_POOL);
    GF__CHECK(s, GF__T_STREAM);
    if (s->pool != pool) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_pool_release: stream '%s' does not come from this pool", s->label);
    i = s->pool_index;
    for (;;) {   /* releases first: acquisitions only rise, so a holder's release always finds one to match (read
                    the other way, another thread's acquire and release in between refused it, for good) */
        uint64_t released = gf__atomic_load(&pool->lease[i].releases), acquired = gf__atomic_load(&pool->lease[i].acquisitions);
        if (released >= acquired) return gf__fail(GF_ERROR_INVALID_STATE, "gf_stream_pool_release: stream '%s' is not acquired", s->label);
        if (gf__atomic_cas(&pool->lease[i].releases, released, released + 1)) break;
    }
    if (pool->measure && !s->capture) {   /* time until the work given under this lease completes */
        gf__completion *c = (gf__completion *)gf__calloc(sizeof *c);
        if (c && gf__event_pool_take(pool->dev->events, 0, &c->ev) == GF_OK) {
            c->pool = pool;
            gf__lock(&s->lock);
            c->t0 = s->lease_t0;
            c->workload = s->lease_workload;
            gf__unlock(&s->lock);
            gf__atomic_add_int(&pool->measuring, 1);
            gf__lock(&pool->lock);
            if ((c->next = pool->in_flight) != NULL) c->next->prev = c;
            pool->in_flight = c;
            gf__unlock(&pool->lock);
            if (gf_event_record(c->ev, s) != GF_OK || gf__waiter_add(c->ev, gf__pool_completed, c, &c->wait_id) != GF_OK) {
                gf__lock(&pool->lock);
                gf__completion_unlink(c);
                gf__unlock(&pool->lock);
                gf__completion_settle(c);
            }
        } else {
            gf__free(c);
        }
    }
    return GF_OK;
}

/* Waits for each stream in turn; the first failure ends the wait, fn's, with the stream's own
   words after its name. */
static gf_result gf__sync_streams(const char *fn, gf_stream *const *streams, int count) {
    int i;
    for (i = 0; i < count; i++) {
        gf_result r;
        gf__quiet++;   /* told once, below */
        r = gf_stream_synchronize(streams[i]);
        gf__quiet--;
        if (r != GF_OK) return gf__fail(r, "%s: %s", fn, gf__error_text);
    }
    return GF_OK;
}

static gf_result gf__call_stream_pool_synchronize(gf_stream_pool *pool) {
    GF__CHECK(pool, GF__T_STREAM_POOL);
    return gf__sync_streams("gf_stream_pool_synchronize", pool->streams, pool->count);
}

GPUFLOW_IMPL gf_result gf_stream_pool_get_stats(gf_stream_pool *pool, gf_stream_pool_stats *out) {
    int i;
    GF__CHECK(pool, GF__T_STREAM_POOL);
    GF__CHECK_OUT(out);
    memset(out, 0, sizeof *out);
    out->count = pool->count;
    for (i = 0; i < pool->count; i++) out->acquisitions[i] = gf__atomic_load(&pool->lease[i].acquisitions);
    gf__lock(&pool->lock);
    for (i = 0; i < GF_WORKLOAD_COUNT; i++) {
        out->completions[i] = pool->completions[i];
        out->avg_completion_ms[i] = pool->completions[i] ? pool->completion_ms[i] / (double)pool->completions[i] : 0.0;
    }
    gf__unlock(&pool->lock);
    return GF_OK;
}

/* Whether a destroy of a pool's or a set's streams (of owner, "pool" or "set") may drain them:
   not from a host callback of one of them or a flow's task on one (it would wait for itself),
   and GPUFLOW_SYNC_DEBUG is told of the wait for a busy one. GF_OK: go on; else the error is set. */
static gf_result gf__streams_drainable(const char *fn, const char *owner, gf_device *dev, gf_stream *const *streams, int count) {
    gf_result r;
    int i;
    for (i = 0; i < count; i++) {
        if (!streams[i]) continue;
        if ((r = gf__refuse_self_wait(fn, dev, streams[i])) != GF_OK) return r;
        if (gf__in_task_on(streams[i]))
            return gf__fail(GF_ERROR_INVALID_STATE, "%s: called from a flow's task that runs on stream '%s' of the %s; destroy it after the run",
                            fn, streams[i]->label, owner);
        if ((r = gf__destroy_capture_check(fn, streams[i])) != GF_OK) return r;
    }
    for (i = 0; i < count; i++)
        if (streams[i] && gf__stream_busy(streams[i]) && (r = gf__hidden_wait(fn, streams[i], "its queued work has run")) != GF_OK) return r;
    return GF_OK;
}

static void gf__call_stream_pool_destroy(gf_stream_pool *pool) {
    int i;
    GF__CHECK_DESTROY(pool, GF__T_STREAM_POOL);
    if (gf__streams_drainable("gf_stream_pool_destroy", "pool", pool->dev, pool->streams, pool->count) != GF_OK) return;   /* kept */
    for (i = 0; i < pool->count; i++) gf__stream_sync(pool->streams[i]);
    if (gf__waiter_self) gf__pool_drop_completions(pool);
    while (gf__atomic_load_int(&pool->measuring) > 0) gf__sleep_us(100);   /* waiters still refer to the pool */
    for (i = 0; i < pool->count; i++) gf__stream_free(pool->streams[i]);
    gf__mutex_destroy(&pool->lock);
    gf__live(pool->dev, GF__T_STREAM_POOL, -1);
    gf__obj_free(pool->dev, pool);
}

/* ---- stream sets: a ring of streams for pipelines ------------------------------- >>streamsets */
/* Frames as stream sets and flows count them: begun, known complete, and the newest completed
   one's number and time on the device. */
typedef struct gf__frames { uint64_t begun, completed, last; float last_ms; } gf__frames;
/* Frame `number` is complete; 1 if it is the newest so far (its time is then the caller's to keep). */
static int gf__frames_complete(gf__frames *f, uint64_t number) {
    int newest = f->completed++ == 0 || number >= f->last;
    if (newest) f->last = number;
    return newest;
}
static void gf__frames_info(const gf__frames *f, int open, gf_frame_info *out) {
    memset(out, 0, sizeof *out);
    out->frames = f->begun;
    out->completed = f->completed;
    out->in_flight = f->begun - f->completed;
    out->open = open;
    out->last_frame = f->last;
    out->last_gpu_ms = f->last_ms;
}
/* Milliseconds left until end (ns, gf__now_ns's clock), rounded up; 0 once it passed. */
static unsigned gf__ms_left(uint64_t end) {
    uint64_t now = gf__now_ns();
    return now < end ? (unsigned)((end - now + 999999u) / 1000000u) : 0u;
}

struct gf_stream_set {
    uint32_t type;
    gf_device *dev;
    int depth;
    gf__mutex lock;
    int last;                      /* slot handed out by the latest next(), or -1 */
    gf_stream **streams;
    gf_event **round_done;         /* recorded when a slot's round ends */
    gf_event **round_start;        /* recorded at its first operation (gf__start_now), or at its end if
                                      it has none: the frame's time on the device */
    uint64_t *round_frame;         /* the frame each slot's latest round is */
    unsigned char *pending;        /* the slot's round ended, not yet known complete */
    int open;                      /* the latest round (slot `last`) has not ended */
    gf__frames count;
};

static gf_result gf__call_stream_set_create(gf_device *dev, int depth, const char *label, gf_stream_set **out) {
    gf_stream_set *set;
    int i;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (depth < 1 || depth > GF_POOL_MAX_STREAMS)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_set_create: depth %d is outside 1..%d", depth, GF_POOL_MAX_STREAMS);
    if (!(set = (gf_stream_set *)gf__calloc(sizeof *set)) ||
        !(set->streams = (gf_stream **)gf__calloc(sizeof *set->streams * (size_t)depth)) ||
        !(set->round_done = (gf_event **)gf__calloc(sizeof *set->round_done * (size_t)depth)) ||
        !(set->round_start = (gf_event **)gf__calloc(sizeof *set->round_start * (size_t)depth)) ||
        !(set->round_frame = (uint64_t *)gf__calloc(sizeof *set->round_frame * (size_t)depth)) ||
        !(set->pending = (unsigned char *)gf__calloc((size_t)depth))) {
        if (set) { gf__free(set->streams); gf__free(set->round_done); gf__free(set->round_start); gf__free(set->round_frame); gf__free(set); }
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_set_create: out of host memory");
    }
    set->type = GF__T_STREAM_SET;
    set->dev = dev;
    set->last = -1;
    gf__mutex_init(&set->lock);
    for (i = 0; i < depth; i++) {
        char name[64];
        gf_result r;
        snprintf(name, sizeof name, "%s/%d", label && *label ? label : "set", i);
        if ((r = gf__stream_new(dev, name, GF_PRIORITY_NORMAL, 1, &set->streams[i])) != GF_OK ||
            (r = gf__event_new(dev, GF_EVENT_TIMING, &set->round_done[i])) != GF_OK ||
            (r = gf__event_new(dev, GF_EVENT_TIMING, &set->round_start[i])) != GF_OK) {
            set->depth = i + 1;
            gf_stream_set_destroy(set);
            return r;
        }
        set->depth = i + 1;
    }
    gf__live(dev, GF__T_STREAM_SET, 1);
    *out = set;
    return GF_OK;
}

static gf_stream *gf__call_stream_set_get(gf_stream_set *set, size_t i) {
    if (!gf__is(set, GF__T_STREAM_SET)) { gf__say_bad_handle("gf_stream_set_get", "set", set, GF__T_STREAM_SET); return NULL; }
    return set->streams[i % (size_t)set->depth];
}

/* The set's own records: not operations fault rules count (as a flow's frame events). */
static gf_result gf__set_record(gf_event *ev, gf_stream *s) {
    gf_result r;
    gf__faults_inside++;
    r = gf__call_event_record(ev, s);
    gf__faults_inside--;
    return r;
}
/* The open round ends: its end is recorded on its stream (set->lock held). */
static gf_result gf__set_end_round(gf_stream_set *set) {
    gf_stream *s;
    gf_result r;
    GF__HELD(&set->lock);
    if (set->last < 0 || !set->open) return GF_OK;
    s = set->streams[set->last];
    gf__lock(&s->lock);   /* a frame with no operation: its start just before its end */
    if (!s->capture) gf__start_now(s);
    gf__unlock(&s->lock);
    if ((r = gf__set_record(set->round_done[set->last], s)) != GF_OK)
        return r;   /* the frame stays open, changed in nothing: a retry ends it (counted complete, its wait would not wait) */
    set->open = 0;
    set->pending[set->last] = 1;
    return GF_OK;
}
/* A slot's ended round is complete: counted, and its time kept if it is the latest so far
   (set->lock held). */
static void gf__set_round_complete(gf_stream_set *set, int slot) {
    float ms = 0.0f;
    gf_event *a = set->round_start[slot], *b = set->round_done[slot];
    GF__HELD(&set->lock);
    set->pending[slot] = 0;
    if (gf__frames_complete(&set->count, set->round_frame[slot]))   /* timed by completion, as flows: a failed frame has a time too */
        set->count.last_ms = gf__event_marks_work(a) && gf__event_marks_work(b) && gf__event_query_done(a) == GF_OK &&
                             gf__event_query_done(b) == GF_OK && a->dev->be->event_elapsed_ms(a, b, &ms) == GF_OK ? ms : 0.0f;
}
/* Waits for a slot's ended round with set->lock let go, so that the set's queries and other
   slots do not wait behind it: for good (end NULL), or one slice of at most GF__PACE_SLICE_MS
   before *end (GF_TIMEOUT, quietly: the caller looks again, since another thread may meanwhile
   have counted the round and begun the next on its event). The slot is counted complete if it
   still holds that round. */
static gf_result gf__set_wait_round(gf_stream_set *set, int slot, const uint64_t *end) {
    gf_event *done = set->round_done[slot];
    uint64_t frame = set->round_frame[slot];
    unsigned left = end ? gf__ms_left(*end) : 0;
    gf_result r;
    GF__HELD(&set->lock);
    gf__unlock(&set->lock);
    gf__faults_inside++;   /* the set's own pacing */
    r = end ? gf__event_wait_for("gf_stream_set_wait_frames", done, left < GF__PACE_SLICE_MS ? left : GF__PACE_SLICE_MS, 0)
            : gf__event_sync_done("gf_stream_set_next", done);   /* completion: a failed frame is over too */
    gf__faults_inside--;
    gf__lock(&set->lock);
    if (r == GF_OK && set->pending[slot] && set->round_frame[slot] == frame) gf__set_round_complete(set, slot);
    return r;
}
/* Every ended round the device has finished, found without waiting (set->lock held). */
static void gf__set_collect(gf_stream_set *set) {
    int i;
    GF__HELD(&set->lock);
    for (i = 0; i < set->depth; i++)
        if (set->pending[i] && gf__event_query_done(set->round_done[i]) == GF_OK) gf__set_round_complete(set, i);
}

static gf_result gf__call_stream_set_next(gf_stream_set *set, size_t i, gf_stream **out) {
    int slot;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(set, GF__T_STREAM_SET);
    GF__CHECK_OUT(out);
    slot = (int)(i % (size_t)set->depth);
    gf__lock(&set->lock);
    /* the previous round ends here, if it is still open; then this slot's last round must have
       passed (waited for with the lock let go, so frames, end_frame and other slots go on) */
    while ((r = gf__set_end_round(set)) == GF_OK && set->pending[slot] &&
           (r = gf__event_refuse_self_wait("gf_stream_set_next", set->round_done[slot])) == GF_OK && (r = gf__set_wait_round(set, slot, NULL)) == GF_OK) {}
    if (r == GF_OK) {   /* the start is recorded at the frame's first operation (gf__start_now) */
        gf_stream *s = set->streams[slot];
        gf__lock(&s->lock);
        s->start_due = set->round_start[slot];
        gf__unlock(&s->lock);
        set->last = slot;
        set->open = 1;
        set->round_frame[slot] = set->count.begun++;
        *out = set->streams[slot];
    }
    gf__unlock(&set->lock);
    return r;
}

static gf_result gf__call_stream_set_end_frame(gf_stream_set *set) {
    gf_result r;
    GF__CHECK(set, GF__T_STREAM_SET);
    gf__lock(&set->lock);
    r = set->open ? gf__set_end_round(set) : gf__fail(GF_ERROR_INVALID_STATE, "gf_stream_set_end_frame: no frame is open "
                                                       "(gf_stream_set_next begins one)");
    gf__unlock(&set->lock);
    return r;
}

GPUFLOW_IMPL gf_result gf_stream_set_frames(gf_stream_set *set, gf_frame_info *out) {
    GF__CHECK(set, GF__T_STREAM_SET);
    GF__CHECK_OUT(out);
    gf__lock(&set->lock);
    gf__set_collect(set);
    gf__frames_info(&set->count, set->open, out);
    gf__unlock(&set->lock);
    return GF_OK;
}

static gf_result gf__call_stream_set_wait_frames(gf_stream_set *set, int max_in_flight, unsigned timeout_ms) {
    uint64_t end;
    gf_result r = GF_OK;
    GF__CHECK(set, GF__T_STREAM_SET);
    if (max_in_flight < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_set_wait_frames: max_in_flight %d is negative", max_in_flight);
    end = gf__now_ns() + (uint64_t)timeout_ms * 1000000u;
    gf__lock(&set->lock);
    gf__set_collect(set);
    if (set->open && max_in_flight == 0 && set->count.begun > set->count.completed) {   /* the open frame cannot complete */
        uint64_t open = set->count.begun - 1;   /* read under the lock */
        gf__unlock(&set->lock);
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_stream_set_wait_frames: max_in_flight 0 waits for every frame, and frame %llu is still "
                        "open (end it with gf_stream_set_end_frame first)", (unsigned long long)open);
    }
    while (r == GF_OK && set->count.begun - set->count.completed > (uint64_t)max_in_flight) {
        int i, oldest = -1;
        for (i = 0; i < set->depth; i++)
            if (set->pending[i] && (oldest < 0 || set->round_frame[i] < set->round_frame[oldest])) oldest = i;
        if (oldest < 0) {
            r = gf__fail(GF_ERROR_INVALID_STATE, "gf_stream_set_wait_frames: at most %d frames in flight needs frame %llu, "
                         "which is still open (end it with gf_stream_set_end_frame first)", max_in_flight, (unsigned long long)(set->count.begun - 1));
            break;
        }
        r = gf__set_wait_round(set, oldest, &end);
        if (r == GF_TIMEOUT && gf__ms_left(end) > 0) r = GF_OK;   /* a slice: look again */
        if (r == GF_OK) gf__set_collect(set);   /* what other threads ended meanwhile */
        else if (r == GF_TIMEOUT)
            r = gf__fail(GF_TIMEOUT, "gf_stream_set_wait_frames: %llu frames still in flight after %u ms (at most %d asked)",
                         (unsigned long long)(set->count.begun - set->count.completed), timeout_ms, max_in_flight);
    }
    gf__unlock(&set->lock);
    return r;
}

static gf_result gf__call_stream_set_synchronize(gf_stream_set *set) {
    GF__CHECK(set, GF__T_STREAM_SET);
    return gf__sync_streams("gf_stream_set_synchronize", set->streams, set->depth);
}

static void gf__call_stream_set_destroy(gf_stream_set *set) {
    int i;
    GF__CHECK_DESTROY(set, GF__T_STREAM_SET);
    if (gf__streams_drainable("gf_stream_set_destroy", "set", set->dev, set->streams, set->depth) != GF_OK) return;   /* kept */
    for (i = 0; i < set->depth; i++) {
        if (set->streams[i]) gf__stream_free(set->streams[i]);
        if (set->round_done[i]) gf__event_free(set->round_done[i]);
        if (set->round_start[i]) gf__event_free(set->round_start[i]);
    }
    gf__free(set->streams);
    gf__free(set->round_done);
    gf__free(set->round_start);
    gf__free(set->round_frame);
    gf__free(set->pending);
    gf__mutex_destroy(&set->lock);
    gf__live(set->dev, GF__T_STREAM_SET, -1);
    gf__obj_free(set->dev, set);
}

/* ---- barriers --------------------------------------------------------------------- >>barriers */
static gf_result gf__check_stream_list(const char *fn, gf_stream *const *streams, int count) {
    int i;
    if (!streams) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: streams is NULL", fn);
    if (count < 1) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: count %d must be >= 1", fn, count);
    for (i = 0; i < count; i++) {
        if (!gf__is(streams[i], GF__T_STREAM)) return gf__bad_handle(fn, "streams[i]", streams[i], GF__T_STREAM);
    }
    return GF_OK;
}

/* Each stream waits, on the device, for what every other had enqueued when the call was made. */
static gf_result gf__call_barrier(gf_stream *const *streams, int count) {
    gf_event *marks[GF_POOL_MAX_STREAMS];
    gf_result r;
    int i, j, taken = 0;
    if ((r = gf__check_stream_list("gf_barrier", streams, count)) != GF_OK) return r;
    if (count > GF_POOL_MAX_STREAMS) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_barrier: count %d exceeds %d", count, GF_POOL_MAX_STREAMS);
    for (i = 0; i < count; i++)   /* refused before any mark is recorded: a capture would keep half a barrier */
        if (streams[i]->dev != streams[0]->dev)
            for (j = 0; j < count; j++)
                if (gf__stream_capturing(streams[j]))
                    return gf__fail(GF_ERROR_CAPTURE, "gf_barrier: stream '%s' is capturing, and a wait across devices cannot be captured", streams[j]->label);
    for (i = 1; i < count; i++)   /* a wait on a captured mark pulls a stream into that capture; a captured one cannot wait on a mark made outside it */
        if (streams[i]->capture != streams[0]->capture)
            return gf__fail(GF_ERROR_CAPTURE, "gf_barrier: streams '%s' (%s) and '%s' (%s) are not in one capture: a barrier is captured whole, or not at all",
                            streams[0]->label, streams[0]->capture ? "capturing" : "not capturing",
                            streams[i]->label, streams[i]->capture ? "capturing" : "not capturing");
    for (i = 0; i < count && r == GF_OK; i++) {   /* each mark from its stream's device: they may differ */
        if ((r = gf__event_pool_take(streams[i]->dev->events, 0, &marks[i])) != GF_OK) break;
        taken++;
        r = gf_event_record(marks[i], streams[i]);
    }
    for (j = 0; j < count && r == GF_OK; j++)
        for (i = 0; i < count && r == GF_OK; i++)
            if (streams[i] != streams[j]) r = gf_stream_wait_event(streams[j], marks[i]);
    for (i = 0; i < taken; i++) gf__event_pool_give(streams[i]->dev->events, marks[i]);
    return r;
}

static gf_result gf__call_synchronize_all(gf_stream *const *streams, int count, double *elapsed_ms) {
    uint64_t t0 = gf__now_ns();
    gf_result r;
    if ((r = gf__check_stream_list("gf_synchronize_all", streams, count)) != GF_OK) return r;
    if ((r = gf__sync_streams("gf_synchronize_all", streams, count)) != GF_OK) return r;
    if (elapsed_ms) *elapsed_ms = (double)(gf__now_ns() - t0) / 1e6;
    return GF_OK;
}

/* ---- more than one device -------------------------------------------------------------- >>peers */
/* Each device's side of the work bridged to other devices runs on its peer stream, made at
   first need: an internal stream, so nothing of the program's waits behind it. */
/* One of the device's own streams (*slot: dev->peer_stream or dev->outside_stream), made at
   first need. */
static gf_result gf__own_stream(gf_device *dev, gf_stream **slot, const char *label, int fence_only, gf_stream **out) {
    gf_stream *made = NULL;
    gf_result r;
    gf__lock(&dev->lock);
    *out = *slot;
    gf__unlock(&dev->lock);
    if (*out) return GF_OK;
    if ((r = gf__stream_new(dev, label, GF_PRIORITY_NORMAL, 1, &made)) != GF_OK) return r;
    made->fence_only = fence_only;
    gf__lock(&dev->lock);
    if (!*slot) { *slot = made; made = NULL; }   /* else another thread made it first */
    *out = *slot;
    gf__unlock(&dev->lock);
    if (made) gf__stream_free(made);
    return GF_OK;
}
static gf_result gf__peer_stream(gf_device *dev, gf_stream **out) { return gf__own_stream(dev, &dev->peer_stream, "gpuflow/peer", 0, out); }

/* A mark: one of t's device's own events, recorded on t now (t->lock held). */
static gf_result gf__mark(gf_stream *t, gf_event **out) {
    GF__HELD(&t->lock);
    gf_result r;
    if ((r = gf__event_pool_take(t->dev->events, 0, out)) != GF_OK) return r;
    if ((r = t->dev->be->event_record(*out, t)) != GF_OK) { gf__event_pool_give(t->dev->events, *out); *out = NULL; }
    return r;
}

/* A bridged wait: the waiting stream's host callback blocks until the mark, an event of
   another device (or backend), completes; then the mark goes back to its pool. The mark's
   device counts it, so its close waits for the callback. */
typedef struct gf__bridge { gf_event *mark; } gf__bridge;
static void gf__bridge_run(void *user, gf_result status) {
    gf__bridge *b = (gf__bridge *)user;
    gf_device *dev = b->mark->dev;
    (void)status;
    (void)dev->be->event_synchronize(b->mark);   /* a failure there is that device's to report */
    gf__event_pool_give(dev->events, b->mark);
    gf__free(b);
    gf__atomic_add_int(&dev->bridges, -1);
}

/* t (lock held) waits for mark, a gpuflow event of another device that nobody records again:
   natively where t's backend waits across its devices, else bridged. The mark is given back. */
static gf_result gf__wait_mark(gf_stream *t, gf_event *mark) {
    GF__HELD(&t->lock);
    const gf__backend *be = t->dev->be;
    gf__bridge *b;
    gf__cmd c;
    gf_result r;
    if (mark->dev == t->dev || (mark->dev->be == be && be->stream_wait_peer)) {
        r = mark->dev == t->dev ? be->stream_wait_event(t, mark) : be->stream_wait_peer(t, mark);
        gf__event_pool_give(mark->dev->events, mark);   /* the wait saw the record: the mark may go */
        return r;
    }
    if (!(b = (gf__bridge *)gf__calloc(sizeof *b))) {
        gf__event_pool_give(mark->dev->events, mark);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: out of host memory for a wait across devices");
    }
    b->mark = mark;
    gf__atomic_add_int(&mark->dev->bridges, 1);
    c.kind = GF__CMD_CALLBACK;
    c.as.callback.fn = gf__bridge_run;
    c.as.callback.user = b;
    if ((r = gf__exec_counted(t, &c)) != GF_OK) {
        gf__atomic_add_int(&mark->dev->bridges, -1);
        gf__event_pool_give(mark->dev->events, mark);
        gf__free(b);
        return r;
    }
    gf__counter_add(&t->bridged_waits, 1);
    return GF_OK;
}

static gf_result gf__refuse_capture_across(const char *fn, gf_stream *s) {
    GF__HELD(&s->lock);
    return s->capture ? gf__fail(GF_ERROR_CAPTURE, "%s: stream '%s' is capturing; a wait across devices cannot be captured", fn, s->label) : GF_OK;
}

/* s waits for ev of another device: natively where the backend can (it sees ev's latest
   record), else ev's device's peer stream waits for ev and records a mark there, which s waits
   for (the mark is gpuflow's: the program may record ev again or destroy it at once). */
static gf_result gf__wait_event_across(gf_stream *s, gf_event *ev) {
    gf__record_info rec = gf__event_latest(ev);
    const gf__backend *be = s->dev->be;
    gf_event *mark = NULL;
    gf_stream *peer;
    gf_result r;
    char label[80];
    if (!rec.recorded) return GF_OK;   /* as in CUDA: a never-recorded event is complete */
    gf__stream_label_of(ev->dev, rec.stream_id, label, sizeof label);   /* before s->lock: ev's device's lock is not taken under it */
    if (rec.capture_id) {   /* in progress: refused; ended: a place in its graph, nothing to wait for (gf__event_marks_work) */
        if (gf__event_in_capture(ev))
            return gf__fail(GF_ERROR_CAPTURE, "gf_stream_wait_event: the event was recorded inside a capture of device %s in progress", ev->dev->tag);
        return GF_OK;
    }
    if (ev->dev->be == be && be->stream_wait_peer) {
        gf__lock(&s->lock);
        if ((r = gf__refuse_capture_across("gf_stream_wait_event", s)) == GF_OK && (r = be->stream_wait_peer(s, ev)) == GF_OK)
            gf__note_wait_across(s, label, ev->dev);
        gf__unlock(&s->lock);
        return r;
    }
    if ((r = gf__peer_stream(ev->dev, &peer)) != GF_OK) return r;
    gf__lock(&peer->lock);
    if ((r = ev->dev->be->stream_wait_event(peer, ev)) == GF_OK) r = gf__mark(peer, &mark);
    gf__unlock(&peer->lock);
    if (r != GF_OK) return r;
    gf__lock(&s->lock);
    if ((r = gf__refuse_capture_across("gf_stream_wait_event", s)) != GF_OK) gf__event_pool_give(ev->dev->events, mark);
    else if ((r = gf__wait_mark(s, mark)) == GF_OK) gf__note_wait_across(s, label, ev->dev);
    gf__unlock(&s->lock);
    return r;
}

static gf_result gf__wait_stream_across(gf_stream *waiter, gf_stream *other) {
    gf_event *mark = NULL;
    gf_result r;
    char label[80];
    snprintf(label, sizeof label, "'%s'", other->label);
    gf__lock(&other->lock);
    r = other->capture ? gf__fail(GF_ERROR_CAPTURE, "gf_stream_wait_stream: stream '%s' is capturing; a wait across devices cannot be captured", other->label)
                       : gf__mark(other, &mark);
    gf__unlock(&other->lock);
    if (r != GF_OK) return r;
    gf__lock(&waiter->lock);
    if ((r = gf__refuse_capture_across("gf_stream_wait_stream", waiter)) != GF_OK) gf__event_pool_give(other->dev->events, mark);
    else if ((r = gf__wait_mark(waiter, mark)) == GF_OK) gf__note_wait_across(waiter, label, other->dev);
    gf__unlock(&waiter->lock);
    return r;
}

/* A stage of a copy between devices goes back to its device, which then stops counting it. */
static void gf__stage_done_across(void *p) {
    gf_device *dev = ((gf__stage *)p)->dev;
    gf__stage_done(p);
    gf__atomic_add_int(&dev->bridges, -1);
}

/* t (lock held unless it is the peer stream, locked here) takes one copy. */
static gf_result gf__copy_on(gf_stream *t, gf_stream *held, const gf__copy *c) {
    gf_result r;
    if (t != held) gf__lock(&t->lock);
    r = gf__copy_exec(t, c);
    if (t != held) gf__unlock(&t->lock);
    return r;
}
/* waiter waits for a mark made on from now (each locked here unless it is held). */
static gf_result gf__order_after(gf_stream *waiter, gf_stream *from, gf_stream *held) {
    gf_event *mark = NULL;
    gf_result r;
    if (from != held) gf__lock(&from->lock);
    r = gf__mark(from, &mark);
    if (from != held) gf__unlock(&from->lock);
    if (r != GF_OK) return r;
    if (waiter != held) gf__lock(&waiter->lock);
    r = gf__wait_mark(waiter, mark);
    if (waiter != held) gf__unlock(&waiter->lock);
    return r;
}

/* A copy between buffers of two devices on s (lock held), a stream of one of them: the
   backend's peer copy where it has one for the pair, else through host memory. There the
   source's device reads a chunk into a stage, the destination's writes it on; two stages
   alternate, so one chunk is read while the last is written. The other device's part runs on
   its peer stream, ordered after what s had queued, and s goes on only after the last chunk
   is written: in order on both sides. The stages are pinned for the device whose backend
   needs pinned memory. After a backend's peer copy the other device's outside stream waits
   for it, which its releases' fences then see. */
#define GF__PEER_CHUNK ((size_t)8 << 20)
static gf_result gf__copy_between_devices(gf_stream *s, const gf__copy *c) {
    GF__HELD(&s->lock);
    gf_device *src_dev = c->src->dev, *dst_dev = c->dst->dev;
    gf_device *other = s->dev == dst_dev ? src_dev : dst_dev;
    gf_device *stage_dev = dst_dev->be->host_pinned ? dst_dev : src_dev;
    gf_stream *peer, *reader, *writer;
    gf__stage *st[2] = { NULL, NULL };
    size_t chunk = c->bytes < GF__PEER_CHUNK ? c->bytes : GF__PEER_CHUNK, done = 0;
    int k = 0, used[2] = { 0, 0 };
    gf_result r;
    if (src_dev->be == dst_dev->be && s->dev->be->copy_peer) {
        /* s reaches the other device's buffer itself: the other device's outside stream waits
           for the copy, so that a release there fences it and cannot free the memory under it
           (its fences see only its own streams); its synchronize does not wait for s. */
        gf_stream *outside;
        if ((r = s->dev->be->copy_peer(s, c)) != GF_OK) return r;
        if ((r = gf__own_stream(other, &other->outside_stream, "gpuflow/outside", 1, &outside)) != GF_OK) return r;
        return gf__order_after(outside, s, s);
    }
    if ((r = gf__peer_stream(other, &peer)) != GF_OK) return r;
    reader = s->dev == src_dev ? s : peer;
    writer = reader == s ? peer : s;
    if ((r = gf__stage_get(stage_dev, chunk, &st[0])) != GF_OK) return r;
    if (c->bytes > chunk && (r = gf__stage_get(stage_dev, chunk, &st[1])) != GF_OK) { st[0]->dst = NULL; gf__stage_done(st[0]); return r; }
    r = gf__order_after(peer, s, s);   /* the peer stream starts where s is now */
    for (; r == GF_OK && done < c->bytes; done += chunk, k ^= 1) {
        gf__copy in, out;
        size_t n = c->bytes - done < chunk ? c->bytes - done : chunk;
        if (used[k] && (r = gf__order_after(reader, writer, s)) != GF_OK) break;   /* stage k written on before it is refilled */
        in = gf__copy_desc(GF__COPY_D2H, NULL, 0, c->src, c->src_offset + done, st[k]->pinned, n);
        out = gf__copy_desc(GF__COPY_H2D, c->dst, c->dst_offset + done, NULL, 0, st[k]->pinned, n);
        if ((r = gf__copy_on(reader, s, &in)) != GF_OK || (r = gf__order_after(writer, reader, s)) != GF_OK ||
            (r = gf__copy_on(writer, s, &out)) != GF_OK) break;
        used[k] = 1;
    }
    if (r == GF_OK && writer != s) r = gf__order_after(s, writer, s);   /* s goes on once the bytes are there */
    /* The stages go back when s passes this point: s has waited for every use of them. They
       belong to stage_dev, which counts them meanwhile (its close waits, as for a bridge). If the
       callback could not be queued, both streams are waited for instead. */
    for (k = 0; k < 2; k++) {
        if (!st[k]) continue;
        st[k]->dst = NULL;
        gf__atomic_add_int(&stage_dev->bridges, 1);
        if (r != GF_OK || s->dev->be->host_callback(s, gf__stage_done_across, st[k]) != GF_OK) {
            (void)peer->dev->be->stream_synchronize(peer);
            (void)s->dev->be->stream_synchronize(s);
            gf__stage_done_across(st[k]);
        }
    }
    if (r == GF_OK) gf__counter_add(&s->staged_copies, 1);
    return r;
}

GPUFLOW_IMPL int gf_device_can_access_peer(gf_device *a, gf_device *b) {
    if (!gf__is(a, GF__T_DEVICE) || !gf__is(b, GF__T_DEVICE)) return 0;
    if (a == b) return 1;
    return a->be == b->be && a->be->peer_can_access ? a->be->peer_can_access(a, b) : 0;
}
static gf_result gf__call_device_enable_peer(gf_device *a, gf_device *b) {
    GF__CHECK(a, GF__T_DEVICE);
    GF__CHECK(b, GF__T_DEVICE);
    if (a == b) return GF_OK;
    if (a->be != b->be)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_device_enable_peer: %s and %s are of two backends: copies between them go through host memory",
                        a->tag, b->tag);
    if (!a->be->peer_enable || !gf_device_can_access_peer(a, b))
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_device_enable_peer: %s cannot reach the memory of %s directly (%s); copies between them go through host memory",
                        a->tag, b->tag, a->be->peer_enable ? "the driver says no link" : "the backend has no peer access");
    return a->be->peer_enable(a, b);
}

/* ---- async waiters: callbacks when events complete --------------------------------- >>waiters */
/* One thread per device (started on first use) polls the pending events with a backoff from
   20 us to 1 ms, so it never spins at full speed, and calls each callback once. */
typedef struct gf__wait { uint64_t id; gf_event *ev; gf_callback fn; void *user; } gf__wait;
struct gf__waiter {
    gf__mutex lock;
    gf__cond cond;
    gf__thread thread;
    int stop;
    gf__wait *waits; int count, cap;
    int *index; int slots;          /* each wait's place by its id (open addressing; 1 + the place, 0 empty): a cancel finds it at once */
    uint64_t next_id;
    uint64_t firing;               /* id of the callback running now, or 0 */
    int scan;                      /* the wait to look at next */
    int looked;                    /* waits looked at since one last fired (a round: all of them) */
    int wanted;                    /* atomic: other threads waiting for the lock (the waiter lets them in between batches) */
    int ended;                     /* atomic: the thread has delivered its last callback */
};

/* The lock, for any thread but the waiter's: counted while waited for, so that the waiter hands
   it over between batches of queries (a mutex is not fair: let go and taken back at once, it
   went to the waiter again for dozens of batches running). */
static void gf__waiter_lock(gf__waiter *w) {
    gf__atomic_add_int(&w->wanted, 1);
    gf__lock(&w->lock);
    gf__atomic_add_int(&w->wanted, -1);
}

/* The index of the waits by id (w->lock held): ids are dealt in order, so the low bits spread. */
static int gf__waiter_slot(const gf__waiter *w, uint64_t id) {   /* the slot that holds id, or the empty one it would go in */
    int h = (int)(id & (uint64_t)(w->slots - 1));
    while (w->index[h] && w->waits[w->index[h] - 1].id != id) h = (h + 1) & (w->slots - 1);
    return h;
}
static int gf__waiter_index_build(gf__waiter *w, int slots) {   /* 0: out of host memory (the old index stays) */
    int *index = (int *)gf__calloc(sizeof *index * (size_t)slots), i;
    if (!index) return 0;
    gf__free(w->index);
    w->index = index;
    w->slots = slots;
    for (i = 0; i < w->count; i++) w->index[gf__waiter_slot(w, w->waits[i].id)] = i + 1;
    return 1;
}
static void gf__waiter_unindex(gf__waiter *w, int hole) {   /* linear probing's deletion: later entries of the run move back */
    size_t mask = (size_t)w->slots - 1, i = (size_t)hole, j;
    for (j = (i + 1) & mask; w->index[j]; j = (j + 1) & mask)
        if (gf__probe_moves_back(i, j, (size_t)(w->waits[w->index[j] - 1].id & mask), mask)) { w->index[i] = w->index[j]; i = j; }
    w->index[i] = 0;
}
/* Takes wait i off the list (w->lock held); its event still counts it (gf__wait_uncount). */
static gf__wait gf__waiter_take(gf__waiter *w, int i) {
    GF__HELD(&w->lock);
    gf__wait taken = w->waits[i];
    gf__waiter_unindex(w, gf__waiter_slot(w, taken.id));
    if (i != --w->count) {   /* the last wait moves into i */
        w->waits[i] = w->waits[w->count];
        w->index[gf__waiter_slot(w, w->waits[i].id)] = i + 1;
    }
    if (w->cap > 256 && w->count < w->cap / 8) {   /* a burst's peak goes back (a shrink never fails to keep what is there) */
        gf__wait *fewer = (gf__wait *)gf__realloc(w->waits, (size_t)(w->cap / 2) * sizeof *fewer);
        if (fewer) { w->waits = fewer; w->cap /= 2; }
        if (w->slots > 512 && w->count * 4 < w->slots / 4) (void)gf__waiter_index_build(w, w->slots / 4);
    }
    return taken;
}
/* The event no longer counts a wait taken off the list (w->lock held). A release put off goes
   back to the pool here, under the lock: a gf_event_pool_destroy taking the lock next must
   find it there, not on its way. Returns what else its last wait carries out (a free, with the
   lock let go: gf__after_waits_run), else NOTHING. */
static int gf__wait_uncount(gf__waiter *w, gf_event *ev) {
    int after;
    GF__HELD(&w->lock);
    (void)w;
    if (gf__atomic_load_int(&ev->waits) != 1) {   /* not the last (the count changes only under this lock) */
        gf__atomic_add_int(&ev->waits, -1);
        return GF__AFTER_NOTHING;
    }
    after = ev->after_waits;
    ev->after_waits = GF__AFTER_NOTHING;   /* acquired anew, it starts clean */
    if (after == GF__AFTER_RELEASE) (void)gf__event_pool_put(ev->pool, ev, 1);   /* spin locks only: no driver call under this lock */
    gf__atomic_add_int(&ev->waits, -1);   /* the last look at ev: at 0 a destroy frees it at once, without this lock */
    return after == GF__AFTER_RELEASE ? GF__AFTER_NOTHING : after;
}

static gf__waiter *gf__waiter_of(gf_device *dev) {
    gf__waiter *w;
    gf__lock(&dev->lock);
    w = dev->waiter;
    gf__unlock(&dev->lock);
    return w;
}

/* A destroy or release of ev (after: FREE, RELEASE) that waits pending on it put off: marks what
   their last one carries out. 1: put off; 0: none pending, go on now; -1: ev was destroyed or
   released already. A released event is in its pool from now on (a record or a second release
   is refused), but on no shelf until then. */
static int gf__after_waits_set(gf_event *ev, int after) {
    gf__waiter *w;
    int r = 0;
    /* no wait pending: nothing to put off, and no lock taken (a release is the event pool's hot
       path). A wait is only added by a call on the event itself, so none can start meanwhile;
       one that ends meanwhile is seen under the lock below. */
    if (!gf__atomic_load_int(&ev->waits)) return 0;
    if (!(w = gf__waiter_of(ev->dev))) return 0;   /* no waiter: never a wait */
    gf__waiter_lock(w);
    if (ev->after_waits) r = -1;
    else if (gf__atomic_load_int(&ev->waits)) {
        if (after == GF__AFTER_RELEASE) {
            gf__event_shelf *shelf = &ev->pool->shelves[gf__atomic_load_int(&ev->shelf)].shelf;
            gf__spin_lock(&shelf->lock);   /* as gf__event_pool_put marks it */
            if (gf__atomic_load_int(&ev->in_pool)) r = -1;
            else gf__atomic_store_int(&ev->in_pool, 1);
            gf__spin_unlock(&shelf->lock);
        }
        if (r == 0) { ev->after_waits = after; r = 1; }
    }
    gf__unlock(&w->lock);
    return r;
}

/* The same for a pool's destroy: each of its events with waits pending marks POOL, and the last
   of them frees the pool. 1: put off; 0: go on now; -1: destroyed already. */
static int gf__after_waits_pool(gf_event_pool *pool) {
    gf__waiter *w = gf__waiter_of(pool->dev);
    int i, pending = 0, r;
    if (!w) return 0;
    gf__waiter_lock(w);
    if (pool->destroyed) r = -1;
    else {
        gf__spin_lock(&pool->lock);   /* all: another thread may be growing it */
        for (i = 0; i < pool->all_count; i++)
            if (gf__atomic_load_int(&pool->all[i]->waits)) { pool->all[i]->after_waits = GF__AFTER_POOL; pending++; }
        gf__spin_unlock(&pool->lock);
        gf__atomic_store_int(&pool->waiting, pending);
        pool->destroyed = pending > 0;
        r = pending > 0;
    }
    gf__unlock(&w->lock);
    return r;
}

/* Carries out the free an event's last wait was left (no lock held: it calls the driver); no
   one else holds the event (or the pool) any more. */
static void gf__after_waits_run(gf_event *ev, int after) {
    if (after == GF__AFTER_FREE) gf__event_free(ev);
    else if (after == GF__AFTER_POOL && gf__atomic_add_int(&ev->pool->waiting, -1) == 1) gf__event_pool_free(ev->pool);
}

/* Fires one completed wait (w->lock held, released around the callback), looking at no more
   than GF__WAIT_LOOK_BATCH waits: 1 fired; 0 none of those was done (the round goes on); -1 a
   whole round since the last one fired found none. The look goes on round the list from the wait
   after the last one looked at: a backlog of n waits whose completed ones lie late in it costs a
   query each per round, not n per callback fired. */
static int gf__waiter_fire_one(gf__waiter *w) {
    GF__HELD(&w->lock);
    int k, i;
    if (!w->count) { w->looked = 0; return -1; }
    for (k = 0; k < GF__WAIT_LOOK_BATCH && w->count; k++) {
        gf_event *ev;
        gf__race_seen race_seen;
        gf_result r;
        if (w->looked >= w->count) { w->looked = 0; return -1; }
        i = (int)((unsigned)w->scan % (unsigned)w->count);
        w->scan = i + 1;
        w->looked++;
        ev = w->waits[i].ev;
        race_seen = gf__race_seen_event(ev);
        r = gf__event_marks_work(ev) ? ev->dev->be->event_query(ev) : GF_OK;
        gf__race_seen_done(ev->dev, &race_seen, r == GF_OK);   /* what fn enqueues comes after */
        if (r == GF_OK && gf__event_marks_work(ev)) r = gf__event_outcome(ev, r);   /* fn is told the work's failure */
        if (r == GF_OK && gf__atomic_load_int(&ev->dev->lost)) r = GF_ERROR_DEVICE_LOST;   /* GPUFLOW_FAULTS' lost, as a real loss */
        if (r != GF_NOT_READY) {
            gf__wait fire;
            int after;
            fire = gf__waiter_take(w, i);   /* off the list (a cancel waits for it), still counted: a destroy
                                              or release meanwhile, by fn or another thread, is put off */
            /* on from the next: the last wait, moved into i, is looked at last in the round (looked
               at next, two callbacks that wait anew each time kept every other wait from firing) */
            w->looked = 0;
            w->firing = fire.id;
            gf__unlock(&w->lock);
            gf__waiter_event = ev;
            fire.fn(fire.user, r);
            gf__waiter_event = NULL;
            gf__lock(&w->lock);
            after = gf__wait_uncount(w, ev);   /* fn has returned: the event may go now */
            w->firing = 0;
            gf__cond_broadcast(&w->cond);
            if (after != GF__AFTER_NOTHING) {
                gf__unlock(&w->lock);
                gf__after_waits_run(ev, after);
                gf__lock(&w->lock);
            }
            return 1;
        }
    }
    return 0;
}

/* Between batches the lock is let go and the thread yields, so that a thread adding or
   cancelling a wait is held up by one batch of queries, not by a round of thousands. A round
   that fired nothing is followed by a nap of at least GF__WAIT_NAP_PER_ROUND times what it took:
   a backlog of waits that stay pending keeps this thread to a small share of a core. */
static void gf__waiter_main(void *arg) {
    gf__waiter *w = (gf__waiter *)arg;
    uint64_t nap = GF__WAIT_NAP_MIN_US, round_start = 0;
    int r;
    gf__waiter_self = w;
    gf__lock(&w->lock);
    while (!w->stop) {
        if (w->count == 0) { gf__cond_wait(&w->cond, &w->lock); nap = GF__WAIT_NAP_MIN_US; continue; }
        if (w->looked == 0) round_start = gf__now_ns();
        if ((r = gf__waiter_fire_one(w)) > 0) { nap = GF__WAIT_NAP_MIN_US; continue; }
        if (r == 0) {   /* a batch, none done: let in whoever waits for the lock (until it has it, 2 ms at most:
                           on a loaded machine its wake-up can take longer than a few yields) */
            int yields;
            if (gf__atomic_load_int(&w->wanted)) {
                uint64_t until = gf__now_ns() + 2000000u;
                gf__unlock(&w->lock);
                for (yields = 1; gf__atomic_load_int(&w->wanted) && (yields % 64 || gf__now_ns() < until); yields++) gf__yield();
                gf__lock(&w->lock);
            }
            continue;
        }
        {
            uint64_t floor_us = (gf__now_ns() - round_start) / 1000 * GF__WAIT_NAP_PER_ROUND;
            if (floor_us > GF__WAIT_NAP_ROUND_MAX_US) floor_us = GF__WAIT_NAP_ROUND_MAX_US;
            gf__cond_timedwait_us(&w->cond, &w->lock, nap > floor_us ? nap : floor_us);
        }
        if (nap < GF__WAIT_NAP_MAX_US) nap *= 2;
    }
    w->looked = 0;
    while (gf__waiter_fire_one(w) >= 0) {}   /* the device was synchronized: deliver what completed */
    gf__atomic_store_int(&w->ended, 1);
    gf__unlock(&w->lock);
}
static gf_result gf__waiter_query_ended(void *p) { return gf__atomic_load_int(&((gf__waiter *)p)->ended) ? GF_OK : GF_NOT_READY; }

static gf_result gf__waiter_add(gf_event *ev, gf_callback fn, void *user, uint64_t *wait_id) {
    gf_device *dev = ev->dev;
    gf__waiter *w;
    gf__lock(&dev->lock);
    if (!dev->waiter) {
        if (!(w = (gf__waiter *)gf__calloc(sizeof *w))) { gf__unlock(&dev->lock); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_event_on_complete: out of host memory"); }
        gf__mutex_init(&w->lock);
        gf__cond_init(&w->cond);
        if (!gf__thread_create(&w->thread, gf__waiter_main, w)) {
            gf__cond_destroy(&w->cond); gf__mutex_destroy(&w->lock); gf__free(w);
            gf__unlock(&dev->lock);
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_event_on_complete: cannot start the waiter thread (out of host memory, or of threads)");
        }
        dev->waiter = w;
    }
    w = dev->waiter;
    gf__unlock(&dev->lock);
    gf__waiter_lock(w);
    if (!gf__grow((void **)&w->waits, &w->cap, w->count + 1, sizeof *w->waits) ||
        ((w->count + 1) * 2 > w->slots && !gf__waiter_index_build(w, w->slots ? w->slots * 2 : 64))) {   /* at most half full */
        gf__unlock(&w->lock);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_event_on_complete: out of host memory");
    }
    w->waits[w->count].id = ++w->next_id;
    w->index[gf__waiter_slot(w, w->next_id)] = w->count + 1;
    w->waits[w->count].ev = ev;
    gf__atomic_add_int(&ev->waits, 1);
    w->waits[w->count].fn = fn;
    w->waits[w->count].user = user;
    if (wait_id) *wait_id = w->next_id;
    if (w->count++ == 0) gf__cond_broadcast(&w->cond);   /* it sleeps until there is a wait; with some, it looks each nap */
    gf__unlock(&w->lock);
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_event_on_complete(gf_event *ev, gf_callback fn, void *user, uint64_t *wait_id) {
    gf_result r;
    GF__CHECK(ev, GF__T_EVENT);
    if (!fn) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_event_on_complete: fn is NULL");
    if ((r = gf__event_check_held(__func__, ev)) != GF_OK || (r = gf__event_check_wait(__func__, ev)) != GF_OK) return r;
    return gf__waiter_add(ev, fn, user, wait_id);
}

/* Takes wait wait_id off the list: 1, or 0 if it is not there (fired, running, cancelled). A
   wait running right now is let finish first (unless this is the waiter thread, which runs
   it), so after a return it is not running. */
static int gf__waiter_cancel(gf_device *dev, uint64_t wait_id) {
    gf__waiter *w = gf__waiter_of(dev);
    int i, after;
    if (!w) return 0;
    gf__waiter_lock(w);
    if (w->slots && (i = w->index[gf__waiter_slot(w, wait_id)] - 1) >= 0) {
        gf_event *ev = gf__waiter_take(w, i).ev;
        after = gf__wait_uncount(w, ev);
        gf__unlock(&w->lock);
        gf__after_waits_run(ev, after);
        return 1;
    }
    while (w->firing == wait_id && wait_id && !gf__waiter_self) gf__cond_wait(&w->cond, &w->lock);
    gf__unlock(&w->lock);
    return 0;
}

GPUFLOW_IMPL gf_result gf_event_cancel_wait(gf_device *dev, uint64_t wait_id) {
    GF__CHECK(dev, GF__T_DEVICE);
    if (gf__waiter_cancel(dev, wait_id)) return GF_OK;
    return gf__fail(GF_ERROR_NOT_FOUND, "gf_event_cancel_wait: no pending wait %llu (%s)", (unsigned long long)wait_id,
                    gf__waiter_self && gf__waiter_self->firing == wait_id ? "it is the wait whose callback is running: past cancelling"
                                                                         : "already fired, cancelled or never made");
}

/* A pool destroyed from the waiter thread cannot wait for its completion callbacks, which
   that same thread would run: it cancels their waits and settles them itself. */
static void gf__pool_drop_completions(gf_stream_pool *pool) {
    for (;;) {
        gf__completion *c;
        gf__lock(&pool->lock);
        if ((c = pool->in_flight) != NULL) gf__completion_unlink(c);
        gf__unlock(&pool->lock);
        if (!c) return;
        gf__waiter_cancel(pool->dev, c->wait_id);
        gf__completion_settle(c);
    }
}

static void gf__waiter_stop(gf_device *dev) {
    gf__waiter *w = dev->waiter;
    if (!w) return;
    gf__waiter_lock(w);
    w->stop = 1;
    gf__cond_broadcast(&w->cond);
    gf__unlock(&w->lock);
    if (dev->hang_ms && gf__poll(gf__waiter_query_ended, w, dev->hang_ms) == GF_TIMEOUT)   /* a callback that does not return */
        gf__hang_report(dev, "gf_device_close: waiting for the async waiter's last callbacks");
    gf__thread_join(w->thread);
    gf__cond_destroy(&w->cond);
    gf__mutex_destroy(&w->lock);
    gf__free(w->waits);
    gf__free(w->index);
    gf__free(w);
    dev->waiter = NULL;
}

/* ---- stream-ordered allocation -------------------------------------------------- >>asyncalloc */
/* Where the driver has no stream-ordered allocator, the core caches freed buffers. A freed
   block carries an event recorded on the freeing stream: the same stream may reuse it at once
   (its later work is ordered after the free); another stream only once that event completed.
   Like CUDA's pools the cache has a release threshold: past it, completed blocks go back to
   the driver; and an allocation that fails first releases every cached block, then retries. */
static void gf__cache_init(gf_device *dev) {
    gf__mutex_init(&dev->cache.lock);
    dev->cache.keep = GF__DEFAULT_CACHE_KEEP;
}

/* The bin of a capacity: 4e + the two bits below the top one, where 2^e <= capacity < 2^(e+1)
   (under 4: the capacity). Every block of a bin is within a quarter of every other, so a fit
   is found in the first bin that has one, without looking at the blocks of other sizes. */
static int gf__cache_bin_of(size_t capacity) {
    int e = 0;
    size_t v = capacity;
    while (v >>= 1) e++;
    return e < 2 ? (int)capacity : 4 * e + (int)((capacity >> (e - 2)) & 3u);
}
static gf__block gf__cache_unbin(gf__alloc_cache *cache, gf__cache_bin *bin, int i) {   /* cache->lock held */
    gf__block b = bin->blocks[i];
    bin->blocks[i] = bin->blocks[--bin->count];
    cache->count--;
    cache->bytes -= b.capacity;
    return b;
}
static int gf__cache_bin_put(gf__alloc_cache *cache, gf__block b) {   /* cache->lock held; 0: out of host memory */
    gf__cache_bin *bin = &cache->bins[gf__cache_bin_of(b.capacity)];
    if (!gf__grow((void **)&bin->blocks, &bin->cap, bin->count + 1, sizeof *bin->blocks)) return 0;
    bin->blocks[bin->count++] = b;
    cache->count++;
    cache->bytes += b.capacity;
    return 1;
}

/* Frees cached blocks, the largest bins first, until at most keep bytes remain (cache->lock
   held), passing over those whose freeing work has not completed (gf__cache_release waits for
   them, without the lock). */
static void gf__cache_release_locked(gf_device *dev, size_t keep) {
    gf__alloc_cache *cache = &dev->cache;
    int k, i;
    GF__HELD(&cache->lock);
    for (k = GF__CACHE_BINS - 1; k >= 0 && cache->bytes > keep; k--) {
        gf__cache_bin *bin = &cache->bins[k];
        for (i = bin->count - 1; i >= 0 && cache->bytes > keep; i--) {   /* from the end: what moves into i was looked at */
            gf__block b;
            if (dev->be->event_query(bin->blocks[i].freed) != GF_OK) continue;   /* still in use (or unknowable): kept */
            b = gf__cache_unbin(cache, bin, i);
            gf__event_pool_give(dev->events, b.freed);
            gf__buffer_free(b.buf);
        }
    }
}
/* With wait, the blocks are waited for with the cache's lock let go: a stream callback that
   allocates takes that lock, and the wait may be for work behind that very callback. Blocks
   whose wait fails go back into the cache. */
static void gf__cache_release(gf_device *dev, size_t keep, int wait) {
    gf__alloc_cache *cache = &dev->cache;
    gf__block *taken;
    int n = 0, i, k;
    gf__lock(&cache->lock);
    if (!wait || !cache->count || cache->bytes <= keep ||
        !(taken = (gf__block *)gf__malloc((size_t)cache->count * sizeof *taken))) {   /* no memory: those done only */
        gf__cache_release_locked(dev, keep);
        gf__unlock(&cache->lock);
        return;
    }
    for (k = GF__CACHE_BINS - 1; k >= 0 && cache->bytes > keep; k--)
        while (cache->bins[k].count && cache->bytes > keep) taken[n++] = gf__cache_unbin(cache, &cache->bins[k], cache->bins[k].count - 1);
    gf__unlock(&cache->lock);
    for (i = 0; i < n; i++) {
        if (dev->be->event_synchronize(taken[i].freed) == GF_OK) {
            gf__event_pool_give(dev->events, taken[i].freed);
            gf__buffer_free(taken[i].buf);
            continue;
        }
        gf__lock(&cache->lock);   /* still in use, or unknowable: kept */
        if (!gf__cache_bin_put(cache, taken[i]))
            gf__notice(GF_LOG_WARNING, "gpuflow: out of host memory: a cached block of %llu bytes whose last use is unknown is "
                       "never given back", (unsigned long long)taken[i].capacity);   /* never freed under work that may use it */
        gf__unlock(&cache->lock);
    }
    gf__free(taken);
}

/* A fit for bytes: a block of bytes to 2 x bytes (no more is wasted) that s may use now (freed
   on s, or its freeing work done), the first found in the smallest bin that has one: within a
   quarter of the best fit, without looking at every block of that bin. */
static gf_buffer *gf__cache_take(gf_stream *s, size_t bytes) {
    gf__alloc_cache *cache = &s->dev->cache;
    gf_buffer *fresh, *buf = NULL;
    size_t most = bytes > SIZE_MAX / 2 ? SIZE_MAX : bytes * 2 + 1;
    int k, i, best = -1, last = gf__cache_bin_of(most);
    /* a new handle for reused memory: a stale handle to the freed buffer stays refused */
    if (!(fresh = (gf_buffer *)gf__calloc(sizeof *fresh))) return NULL;
    gf__lock(&cache->lock);
    for (k = gf__cache_bin_of(bytes); k <= last && best < 0; k++) {
        gf__cache_bin *bin = &cache->bins[k];
        for (i = 0; i < bin->count && best < 0; i++) {
            gf__block *b = &bin->blocks[i];
            if (b->capacity < bytes || b->capacity / 2 > bytes) continue;   /* too small, or wasteful */
            if (b->stream_id != s->id && s->dev->be->event_query(b->freed) != GF_OK) continue;
            best = i;
        }
        if (best >= 0) {
            gf__block b = gf__cache_unbin(cache, bin, best);
            buf = b.buf;
            gf__event_pool_give(s->dev->events, b.freed);
        }
    }
    gf__unlock(&cache->lock);
    if (!buf) { gf__free(fresh); return NULL; }
    *fresh = *buf;
    gf__obj_free(s->dev, buf);
    fresh->type = GF__T_BUFFER;
    fresh->size = bytes;
    fresh->refs = 1;
    fresh->kind = GF_MEMORY_ASYNC;
    gf__mem_move(s->dev, GF_MEMORY_CACHED, GF_MEMORY_ASYNC, fresh->capacity);
    return fresh;
}

static gf_result gf__cache_put(gf_stream *s, gf_buffer *buf) {   /* s->lock held */
    GF__HELD(&s->lock);
    gf_device *dev = s->dev;
    gf__alloc_cache *cache = &dev->cache;
    gf__block b;
    gf_result r;
    if ((r = gf__event_pool_take(dev->events, 0, &b.freed)) != GF_OK) return r;
    if ((r = gf__event_record_locked(b.freed, s)) != GF_OK) { gf__event_pool_give(dev->events, b.freed); return r; }
    b.capacity = buf->capacity;
    b.buf = buf;
    b.stream_id = s->id;
    gf__lock(&cache->lock);
    if (!gf__cache_bin_put(cache, b)) {
        gf__unlock(&cache->lock);
        gf__event_pool_give(dev->events, b.freed);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_destroy_async: out of host memory");
    }
    buf->type = GF__T_DEAD;   /* the handle is gone; the memory waits for reuse */
    gf__buffer_uses_drop(buf);
    gf__mem_move(dev, buf->kind, GF_MEMORY_CACHED, buf->capacity);
    buf->kind = GF_MEMORY_CACHED;
    gf__cache_release_locked(dev, cache->keep);
    gf__unlock(&cache->lock);
    return GF_OK;
}

static void gf__cache_trim(gf_device *dev) {   /* device close: idle */
    int k, i;
    gf__cache_release(dev, 0, 1);
    /* Blocks whose freeing event could not be waited for: the device is closing, and its
       close ends all its work, so they go too rather than leak. */
    for (k = 0; k < GF__CACHE_BINS; k++) {
        gf__cache_bin *bin = &dev->cache.bins[k];
        for (i = 0; i < bin->count; i++) {
            gf__event_pool_give(dev->events, bin->blocks[i].freed);
            gf__buffer_free(bin->blocks[i].buf);
        }
        gf__free(bin->blocks);
        bin->blocks = NULL;
        bin->count = bin->cap = 0;
    }
    dev->cache.count = 0;
    dev->cache.bytes = 0;
    gf__mutex_destroy(&dev->cache.lock);
}

static gf_result gf__call_buffer_create_async(gf_stream *s, size_t bytes, gf_buffer **out) {
    const gf__backend *be;
    gf_buffer *buf = NULL;
    gf_result r = GF_OK;
    GF__OUT_NULL(out);
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK_OUT(out);
    if (bytes == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_create_async: size is 0");
    if ((r = GF__FAULT_POINT(s->dev, GF__FK_BUFFER, "gf_buffer_create_async")) != GF_OK) return r;
    be = s->dev->be;
    gf__lock(&s->lock);
    if (s->capture && s->capture->graph->pool) {
        r = gf__pool_alloc(s->capture, bytes, &buf);
    } else if (s->capture && !s->capture->by_driver) {
        /* recorded graphs keep their memory for their whole life: allocate once, now */
        if ((r = gf__buffer_new("gf_buffer_create_async", s->dev, bytes, GF_MEMORY_DEVICE, &buf)) == GF_OK && !gf__graph_own(s->capture->graph, buf)) {
            gf__buffer_free(buf);
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_create_async: out of host memory");
        }
    } else if (be->buffer_alloc_async) {
        if ((r = gf__mem_admit(s->dev, bytes, "gf_buffer_create_async")) != GF_OK) {}
        else if (!(buf = (gf_buffer *)gf__calloc(sizeof *buf))) {
            gf__mem_unadmit(s->dev, bytes);
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_create_async: out of host memory");
        } else {
            buf->type = GF__T_BUFFER; buf->dev = s->dev; buf->size = buf->capacity = bytes;
            buf->refs = 1; buf->kind = GF_MEMORY_ASYNC;
            if ((r = be->buffer_alloc_async(s, buf)) != GF_OK) { gf__mem_unadmit(s->dev, bytes); gf__free(buf); buf = NULL; }
            else gf__mem_count_new(s->dev, GF_MEMORY_ASYNC, bytes);
        }
    } else if (!(buf = gf__cache_take(s, bytes))) {
        gf__unlock(&s->lock);   /* new memory may wait for pending frees: not holding the stream, which a
                                   host callback that allocates on it takes, and may be what is waited for */
        r = gf__buffer_new("gf_buffer_create_async", s->dev, bytes, GF_MEMORY_ASYNC, &buf);
        gf__lock(&s->lock);
    }
    gf__unlock(&s->lock);
    if (r != GF_OK) return r;
    buf->async_state = 1;
    *out = buf;
    return GF_OK;
}

static gf_result gf__call_buffer_destroy_async(gf_stream *s, gf_buffer *buf) {
    gf_result r;
    int capturing, native;
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK(buf, GF__T_BUFFER);
    GF__SAME_DEVICE(s->dev, buf->dev);
    if (buf->async_state != 1)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_destroy_async: the buffer was not made by gf_buffer_create_async");
    if (gf__atomic_load_int(&buf->views))
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_buffer_destroy_async: views of the buffer are still alive; destroy them first");
    if (buf->graph_owner) return GF_OK;   /* freed with its graph */
    if (gf__atomic_load_int(&buf->refs) > 1) {   /* a graph holds it: the handle goes now, the memory with the graph (as gf_buffer_destroy) */
        gf__lock(&s->lock);
        capturing = s->capture != NULL;
        gf__unlock(&s->lock);
        if (capturing || gf__atomic_load_int(&buf->capture_uses))
            return gf__fail(GF_ERROR_CAPTURE, "gf_buffer_destroy_async: a graph holds the buffer, and a capture cannot free it: destroy it after the capture");
        if (GF__RACE_ON(s->dev)) gf__race_free(buf, s);
        gf__buffer_handle_gone(buf);
        gf__buffer_unref(buf, 1);
        return GF_OK;
    }
    gf__lock(&s->lock);
    gf__lock(&s->dev->lock);
    capturing = s->capture != NULL;
    native = capturing && s->capture->by_driver;
    gf__unlock(&s->dev->lock);
    if (capturing && !native)
        r = gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_buffer_destroy_async: a recorded capture cannot free a buffer made outside it (its replays would use freed memory)");
    else if (!native && gf__atomic_load_int(&buf->capture_uses))
        r = gf__fail(GF_ERROR_CAPTURE, "gf_buffer_destroy_async: a capture in progress uses the buffer");
    else if ((r = gf__buffer_uses_wait(s, buf)) != GF_OK) {}
    else if (GF__RACE_ON(s->dev) && (gf__race_free(buf, s), 0)) {}
    else if (s->dev->be->buffer_free_async) {
        if ((r = s->dev->be->buffer_free_async(s, buf)) == GF_OK) {
            if (native) gf__capture_forget(s, buf);
            gf__mem_count(s->dev, buf->kind, buf->capacity, -1);
            gf__buffer_uses_drop(buf);
            gf__free(buf->uses);
            gf__obj_free(buf->dev, buf);
        }
    } else {
        r = gf__cache_put(s, buf);
    }
    gf__unlock(&s->lock);
    return r;
}

/* ---- flows: a DAG of tasks over streams ---------------------------------------------- >>flows */
/* The flows whose tasks run on this thread, innermost first (a task may run another flow): their
   own calls on any of them from inside are refused (a run holds its flow until its tasks have
   enqueued), as is destroying the pool of a stream a task runs on. */
typedef struct gf__task_frame { const gf_flow *flow; const gf_stream *s; const struct gf__task_frame *outer; } gf__task_frame;
static GF__TLS const gf__task_frame *gf__task_frames;
static int gf__in_task_of(const gf_flow *flow) {
    const gf__task_frame *f;
    for (f = gf__task_frames; f; f = f->outer) if (f->flow == flow) return 1;
    return 0;
}
static int gf__in_task_on(const gf_stream *s) {
    const gf__task_frame *f;
    for (f = gf__task_frames; f; f = f->outer) if (f->s == s) return 1;
    return 0;
}
#define GF__IN_OWN_TASK_TEXT "%s: called from a task of the same flow, which its run holds until its tasks have enqueued; call it outside them"
#define GF__NOT_IN_OWN_TASK(flow) \
    if (gf__in_task_of(flow)) return gf__fail(GF_ERROR_INVALID_STATE, GF__IN_OWN_TASK_TEXT, GF__FN)
/* A task id carries its flow's id in the high 16 bits, so an id of another live flow is refused. */
typedef struct gf__task {
    char name[64];
    gf_task_fn fn;
    void *user;
    gf_acquire_hint hint;           /* what the pool's strategy picks its stream by */
    gf_callback on_complete; void *on_complete_user;
    gf_device *dev;                 /* where it runs: the flow's or gf_task_desc.device */
    int *succ; int succ_count, succ_cap;   /* a condition task's are its picks, in gf_flow_depend order */
    gf_buffer *cond; size_t cond_offset;   /* a condition task (fn NULL): the int that picks */
} gf__task;
/* A condition task's successors are picked, not waited for: its edges are weak (Taskflow's
   word). Plain edges are strong; they alone order a plan and may not close a cycle. */
#define GF__STRONG_SUCCS(flow, i) ((flow)->tasks[i].cond ? 0 : (flow)->tasks[i].succ_count)

/* A run in flight: a timing event where each lane of the flow's device began it (recorded at
   the lane's first operation; lanes start apart when runs overlap), one where each lane ends it. */
typedef struct gf__flow_start { gf_event *ev; gf_stream *lane; } gf__flow_start;
typedef struct gf__flow_frame {
    gf__flow_start *starts; int start_count, start_cap;
    int starts_due;   /* its lanes may still hold starts to record (gf__flow_frame_settle) */
    gf_event **ends; int lanes;
    uint64_t number; int timed;
} gf__flow_frame;

struct gf_flow {
    uint32_t type;
    gf_device *dev;
    uint32_t id;
    char label[64];
    gf_workload workload;
    gf__mutex lock;
    gf__task *tasks; int count, cap;
    int *walk; int walk_cap;              /* gf_flow_depend's search: a path, and each step's next successor */
    uint32_t *seen; uint32_t seen_mark;   /* seen[i] == seen_mark: task i was searched in this call */
    int backward;                         /* strong edges to a task made earlier: while none, none closes a cycle */
    gf_stream **forks; int fork_count;    /* capture: extra streams for parallel branches */
    gf_flow_stats stats;                  /* under lock */
    double timed_ms;                      /* sum over stats.timed_runs */
    gf__flow_frame *frame; int frame_count, frame_cap;     /* runs not yet known complete, oldest first */
    gf__frames frames;                    /* gf_flow_frames: a run is a frame */
    gf__spin shown_lock;                  /* the counts as lock was last let go, which queries read while a run holds it */
    struct { gf_flow_stats stats; double timed_ms; gf__frames frames; } shown;
    char (*last_lanes)[64]; int last_lane_count;              /* the last run's streams, for DOT */
    int graph_after;                      /* gf_flow_desc.graph_after */
    uint64_t version;                     /* bumped by every change of tasks or edges */
    uint64_t counted_version; int same_runs;   /* runs since the last change (stops counting at graph_after) */
    gf_graph *graph; uint64_t graph_version;   /* the flow captured, and at which version */
    int graph_refused;                    /* its capture failed (a task that cannot be captured): runs as a flow */
    int conditions;                       /* condition tasks: runs are decided as they go (gf__flow_decide) */
};

/* Flow ids (1..0xffff, a task's top 16 bits) that live flows hold, process-wide: two live flows
   never share one, so another flow's task is refused however many flows came and went (a
   count modulo 0xffff gave a flow made 65535 flows later the id of one still alive). Ids are
   handed out round robin, so a destroyed flow's come back last. */
#define GF__FLOW_IDS 0xffffu
static struct { gf__spin lock; uint32_t last; uint64_t held[(GF__FLOW_IDS + 64) / 64]; } gf__flow_ids;
static uint32_t gf__flow_id_take(void) {   /* 0: all held */
    uint32_t k, id = 0;
    gf__spin_lock(&gf__flow_ids.lock);
    for (k = 0; k < GF__FLOW_IDS && !id; k++) {
        uint32_t c = (gf__flow_ids.last + k) % GF__FLOW_IDS + 1u;
        if (!(gf__flow_ids.held[c / 64] >> (c % 64) & 1u)) id = c;
    }
    if (id) { gf__flow_ids.held[id / 64] |= (uint64_t)1 << (id % 64); gf__flow_ids.last = id; }
    gf__spin_unlock(&gf__flow_ids.lock);
    return id;
}
static void gf__flow_id_give(uint32_t id) {
    gf__spin_lock(&gf__flow_ids.lock);
    gf__flow_ids.held[id / 64] &= ~((uint64_t)1 << (id % 64));
    gf__spin_unlock(&gf__flow_ids.lock);
}

/* Lets the flow go, its counts shown first: a query (gf_flow_get_stats, gf_flow_frames) never
   waits for a run, whose task may wait for a host callback that makes that query. */
static void gf__flow_unlock(gf_flow *flow) {
    gf__spin_lock(&flow->shown_lock);
    flow->shown.stats = flow->stats;
    flow->shown.timed_ms = flow->timed_ms;
    flow->shown.frames = flow->frames;
    gf__spin_unlock(&flow->shown_lock);
    gf__unlock(&flow->lock);
}
static void gf__flow_frames_collect(gf_flow *flow);
/* The counts for a query: fresh when no run holds the flow, else as the last one let it go. */
static void gf__flow_counts(gf_flow *flow, gf_flow_stats *stats, double *timed_ms, gf__frames *frames) {
    if (gf__trylock(&flow->lock)) {
        gf__flow_frames_collect(flow);
        gf__flow_unlock(flow);
    }
    gf__spin_lock(&flow->shown_lock);
    *stats = flow->shown.stats;
    *timed_ms = flow->shown.timed_ms;
    *frames = flow->shown.frames;
    gf__spin_unlock(&flow->shown_lock);
}

GPUFLOW_IMPL gf_result gf_flow_create(gf_device *dev, const gf_flow_desc *desc, gf_flow **out) {
    gf_flow *flow;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (desc && (desc->workload < GF_WORKLOAD_ANY || desc->workload > GF_WORKLOAD_COORDINATION))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_create: workload %d is not a gf_workload", (int)desc->workload);
    if (desc && desc->graph_after < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_create: graph_after %d is negative", desc->graph_after);
    if (!(flow = (gf_flow *)gf__calloc(sizeof *flow))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_create: out of host memory");
    if (!(flow->id = gf__flow_id_take())) {
        gf__free(flow);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_create: %u flows are alive in this process, as many as task handles can tell apart", GF__FLOW_IDS);
    }
    flow->type = GF__T_FLOW;
    flow->dev = dev;
    gf__copy_str(flow->label, sizeof flow->label, desc && desc->label ? desc->label : "flow");
    flow->workload = desc ? desc->workload : GF_WORKLOAD_ANY;
    flow->graph_after = desc ? desc->graph_after : 0;
    gf__mutex_init(&flow->lock);
    gf__live(dev, GF__T_FLOW, 1);
    *out = flow;
    return GF_OK;
}

/* Appends the task made as proto (named "task N" when it has no name). */
static gf_result gf__flow_push(gf_flow *flow, const char *fn, const gf__task *proto, const char *name, gf_task *out) {
    gf__task *t;
    gf__lock(&flow->lock);
    if (flow->count >= 0xffff || !gf__grow((void **)&flow->tasks, &flow->cap, flow->count + 1, sizeof *flow->tasks)) {
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: flow '%s' cannot hold more tasks", fn, flow->label);
    }
    t = &flow->tasks[flow->count];
    *t = *proto;
    if (name && *name) gf__copy_str(t->name, sizeof t->name, name);
    else snprintf(t->name, sizeof t->name, "task %d", flow->count);
    if (t->cond) flow->conditions++;
    *out = (gf_task)(flow->id << 16 | (uint32_t)flow->count);
    flow->count++;
    flow->version++;
    gf__flow_unlock(flow);
    return GF_OK;
}

/* gf_flow_add and gf_flow_add_desc; fn names the one the program called. */
static gf_result gf__flow_add(const char *fn, gf_flow *flow, const gf_task_desc *desc, gf_task *out) {
    gf__task t;
    GF__CHECK_IN(fn, flow, GF__T_FLOW);
    if (gf__in_task_of(flow)) return gf__fail(GF_ERROR_INVALID_STATE, GF__IN_OWN_TASK_TEXT, fn);
    if (!out) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    if (!desc) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", fn);
    if (!desc->fn) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: fn is NULL", fn);
    memset(&t, 0, sizeof t);
    t.hint.priority = desc->priority;
    t.hint.workload = desc->workload;
    if (gf__check_hint(&t.hint) != GF_OK)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: priority %d or workload %d is out of range", fn, (int)desc->priority, (int)desc->workload);
    if (desc->device && (!gf__device_is_open(desc->device) || !gf__is(desc->device, GF__T_DEVICE)))
        return gf__fail(GF_ERROR_INVALID_HANDLE, "%s: desc->device is not an open device", fn);
    t.fn = desc->fn;
    t.user = desc->user;
    t.on_complete = desc->on_complete;
    t.on_complete_user = desc->on_complete_user;
    t.dev = desc->device ? desc->device : flow->dev;
    return gf__flow_push(flow, fn, &t, desc->name, out);
}
GPUFLOW_IMPL gf_result gf_flow_add(gf_flow *flow, const char *name, gf_task_fn fn, void *user, gf_task *out) {
    gf_task_desc d;
    memset(&d, 0, sizeof d);
    d.name = name; d.fn = fn; d.user = user;
    if (gf__is(flow, GF__T_FLOW)) d.workload = flow->workload;
    return gf__flow_add(__func__, flow, &d, out);
}
GPUFLOW_IMPL gf_result gf_flow_add_desc(gf_flow *flow, const gf_task_desc *desc, gf_task *out) {
    return gf__flow_add(__func__, flow, desc, out);
}

/* The checks of a conditional's int (gf_stream_begin_while/if, gf_flow_add_condition). */
static gf_result gf__cond_int_check(const char *fn, const gf_buffer *cond, size_t offset) {
    if (offset % 4) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: offset %llu is not a multiple of 4 (the condition is a 32-bit int)", fn, (unsigned long long)offset);
    if (offset > cond->size || cond->size - offset < 4)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "%s: the int at byte %llu is past the buffer's %llu bytes", fn, (unsigned long long)offset, (unsigned long long)cond->size);
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_flow_add_condition(gf_flow *flow, const char *name, gf_buffer *cond, size_t offset, gf_task *out) {
    gf__task t;
    gf_result r;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    GF__CHECK(cond, GF__T_BUFFER);
    GF__CHECK_OUT(out);
    if ((r = gf__cond_int_check("gf_flow_add_condition", cond, offset)) != GF_OK) return r;
    memset(&t, 0, sizeof t);
    t.hint.workload = flow->workload;
    t.dev = cond->dev;   /* it reads there */
    t.cond = cond;
    t.cond_offset = offset;
    return gf__flow_push(flow, "gf_flow_add_condition", &t, name, out);
}

static int gf__task_index(const gf_flow *flow, gf_task t) {   /* flow->lock held; -1 if not ours */
    GF__HELD(&flow->lock);
    int i = (int)(t & 0xffffu);
    return (t >> 16) == flow->id && i < flow->count ? i : -1;
}

/* Depth-first search for a path of strong edges from -> to (flow->lock held), without recursion
   (a chain of 65535 tasks) and without clearing a mark per task (a flow built edge by edge
   would cost O(n^2)): a task is seen when it holds this search's mark. Returns the path's
   length (its tasks in flow->walk), 0 when there is none, -1 when out of host memory. */
static int gf__flow_path(gf_flow *flow, int from, int to) {
    int *path, *next, len = 1, i;
    GF__HELD(&flow->lock);
    if (flow->walk_cap < flow->count) {
        int *walk = (int *)gf__realloc(flow->walk, sizeof *walk * 2 * (size_t)flow->cap);
        uint32_t *seen = walk ? (uint32_t *)gf__realloc(flow->seen, sizeof *seen * (size_t)flow->cap) : NULL;
        if (walk) flow->walk = walk;
        if (!seen) return -1;
        for (i = flow->walk_cap; i < flow->cap; i++) seen[i] = 0;
        flow->seen = seen;
        flow->walk_cap = flow->cap;
    }
    if (++flow->seen_mark == 0) {   /* the marks wrapped: every task unseen again */
        for (i = 0; i < flow->walk_cap; i++) flow->seen[i] = 0;
        flow->seen_mark = 1;
    }
    path = flow->walk;
    next = flow->walk + flow->walk_cap;
    path[0] = from; next[0] = 0; flow->seen[from] = flow->seen_mark;
    while (len > 0) {
        int at = path[len - 1];
        if (at == to) return len;
        if (next[len - 1] < GF__STRONG_SUCCS(flow, at)) {
            int n = flow->tasks[at].succ[next[len - 1]++];
            if (flow->seen[n] != flow->seen_mark) { flow->seen[n] = flow->seen_mark; path[len] = n; next[len] = 0; len++; }
        } else {
            len--;
        }
    }
    return 0;
}

GPUFLOW_IMPL gf_result gf_flow_depend(gf_flow *flow, gf_task before, gf_task after) {
    gf__task *b;
    int bi, ai, k, len = 0;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    gf__lock(&flow->lock);
    bi = gf__task_index(flow, before);
    ai = gf__task_index(flow, after);
    if (bi < 0 || ai < 0) {
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_depend: task %s (0x%x) is not a task of flow '%s'",
                        bi < 0 ? "before" : "after", (unsigned)(bi < 0 ? before : after), flow->label);
    }
    if (bi == ai) {
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_CYCLE, "gf_flow_depend: flow '%s': task '%s' cannot depend on itself", flow->label, flow->tasks[ai].name);
    }
    b = &flow->tasks[bi];
    for (k = 0; !b->cond && k < b->succ_count; k++) if (b->succ[k] == ai) { gf__flow_unlock(flow); return GF_OK; }   /* a pick repeats: its index counts */
    /* no search for a pick (it may go back), nor while every edge goes to a later task */
    if (!b->cond && (bi > ai || flow->backward) && (len = gf__flow_path(flow, ai, bi)) < 0) {
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_depend: out of host memory");
    }
    if (len > 0) {   /* after already reaches before */
        char names[512];
        size_t used = 0;
        int i;
        for (i = 0; i < len && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "'%s' -> ", flow->tasks[flow->walk[i]].name);
        if (used < sizeof names) snprintf(names + used, sizeof names - used, "'%s'", flow->tasks[ai].name);
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_CYCLE, "gf_flow_depend: flow '%s': the edge would close the cycle %s (only a condition task's edge "
                        "may go back: a loop)", flow->label, names);
    }
    if (!gf__grow((void **)&b->succ, &b->succ_cap, b->succ_count + 1, sizeof *b->succ)) {
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_depend: out of host memory");
    }
    b->succ[b->succ_count++] = ai;
    if (!b->cond && bi > ai) flow->backward++;
    flow->version++;
    gf__flow_unlock(flow);
    return GF_OK;
}

/* A plan: tasks in dependency order, each on a lane. A task continues a predecessor's lane when
   that predecessor is still the lane's last task; otherwise it opens a new lane. Only edges
   between lanes need events. */
typedef struct gf__flow_plan {
    int *order, *lane, *preds, *pred_first, *pred_count;
    int *lane_first;               /* each lane's first task: its hint picks the lane's stream */
    unsigned char *signals;        /* task has a successor on another lane */
    int lanes;
} gf__flow_plan;

static void gf__plan_free(gf__flow_plan *p) {
    gf__free(p->order); gf__free(p->lane); gf__free(p->preds);
    gf__free(p->pred_first); gf__free(p->pred_count); gf__free(p->signals); gf__free(p->lane_first);
}

static gf_result gf__flow_plan_make(const char *fn, const gf_flow *flow, gf__flow_plan *p) {   /* flow->lock held */
    GF__HELD(&flow->lock);
    int n = flow->count, edges = 0, i, k, head = 0, tail = 0;
    int *indeg, *lane_tail, *fill;
    memset(p, 0, sizeof *p);
    for (i = 0; i < n; i++) edges += GF__STRONG_SUCCS(flow, i);
    p->order = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    p->lane = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    p->preds = (int *)gf__malloc(sizeof(int) * (size_t)(edges + 1));
    p->pred_first = (int *)gf__calloc(sizeof(int) * (size_t)(n + 1));
    p->pred_count = (int *)gf__calloc(sizeof(int) * (size_t)(n + 1));
    p->signals = (unsigned char *)gf__calloc((size_t)(n + 1));
    p->lane_first = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    indeg = (int *)gf__calloc(sizeof(int) * (size_t)(n + 1));
    lane_tail = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    fill = (int *)gf__calloc(sizeof(int) * (size_t)(n + 1));
    if (!p->order || !p->lane || !p->preds || !p->pred_first || !p->pred_count || !p->signals || !p->lane_first ||
        !indeg || !lane_tail || !fill) {
        gf__plan_free(p); gf__free(indeg); gf__free(lane_tail); gf__free(fill);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    for (i = 0; i < n; i++) for (k = 0; k < GF__STRONG_SUCCS(flow, i); k++) p->pred_count[flow->tasks[i].succ[k]]++;
    for (i = 1; i < n; i++) p->pred_first[i] = p->pred_first[i - 1] + p->pred_count[i - 1];
    for (i = 0; i < n; i++)
        for (k = 0; k < GF__STRONG_SUCCS(flow, i); k++) {
            int t = flow->tasks[i].succ[k];
            p->preds[p->pred_first[t] + fill[t]++] = i;
        }
    for (i = 0; i < n; i++) if ((indeg[i] = p->pred_count[i]) == 0) p->order[tail++] = i;
    while (head < tail) {   /* Kahn's order; gf_flow_depend keeps the strong edges acyclic */
        int t = p->order[head++];
        for (k = 0; k < GF__STRONG_SUCCS(flow, t); k++)
            if (--indeg[flow->tasks[t].succ[k]] == 0) p->order[tail++] = flow->tasks[t].succ[k];
    }
    for (i = 0; i < n; i++) {
        int t = p->order[i], chosen = -1;
        for (k = 0; k < p->pred_count[t] && chosen < 0; k++) {
            int pr = p->preds[p->pred_first[t] + k];
            if (lane_tail[p->lane[pr]] == pr && flow->tasks[pr].hint.priority == flow->tasks[t].hint.priority &&
                flow->tasks[pr].hint.workload == flow->tasks[t].hint.workload && flow->tasks[pr].dev == flow->tasks[t].dev)
                chosen = p->lane[pr];
        }
        if (chosen < 0) { chosen = p->lanes++; p->lane_first[chosen] = t; }
        p->lane[t] = chosen;
        lane_tail[chosen] = t;
        for (k = 0; k < p->pred_count[t]; k++) {
            int pr = p->preds[p->pred_first[t] + k];
            if (p->lane[pr] != chosen) p->signals[pr] = 1;
        }
    }
    gf__free(indeg); gf__free(lane_tail); gf__free(fill);
    return GF_OK;
}

/* A task's completion callback: fires on the waiter thread, then gives its event back. */
typedef struct gf__task_done { gf_callback fn; void *user; gf_event *ev; } gf__task_done;
static void gf__task_completed(void *p, gf_result status) {
    gf__task_done *d = (gf__task_done *)p;
    d->fn(d->user, status);
    gf__event_pool_give(d->ev->dev->events, d->ev);
    gf__free(d);
}
static gf_result gf__task_on_complete(const char *fn, gf_flow *flow, gf__task *t, gf_stream *s) {
    gf__task_done *d = (gf__task_done *)gf__calloc(sizeof *d);
    gf_result r;
    if (!d) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    d->fn = t->on_complete;
    d->user = t->on_complete_user;
    if ((r = gf__event_pool_take(s->dev->events, 0, &d->ev)) != GF_OK) { gf__free(d); return r; }
    if ((r = gf_event_record(d->ev, s)) != GF_OK || (r = gf__waiter_add(d->ev, gf__task_completed, d, NULL)) != GF_OK) {
        gf__event_pool_give(s->dev->events, d->ev);
        gf__free(d);
        return r;
    }
    flow->stats.events++;
    return GF_OK;
}

/* Runs a task's function on s, inside a range of its name (seen in the trace); a failure names
   fn, the public call that ran the task. */
static gf_result gf__task_call(const char *fn, const gf_flow *flow, const gf__task *task, gf_stream *s) {
    gf__task_frame frame;
    unsigned serial = gf__error_serial;
    int locks_held = gf__locks_held;
    gf_result r;
    gf_range_push(s, task->name);
    frame.flow = flow; frame.s = s; frame.outer = gf__task_frames;
    gf__task_frames = &frame;
    gf__locks_held = 0;   /* the program's code: what its calls log is told before they return (a logger's
                             call on this flow is refused, not a wait on the lock the run holds) */
    r = task->fn(s, task->user);
    gf__locks_held = locks_held;
    gf__task_frames = frame.outer;
    if (r != GF_OK) {
        char what[192];
        snprintf(what, sizeof what, "%s: task '%s' of flow '%s'", fn, task->name, flow->label);
        r = gf__fail_user(r, serial, what);
    }
    gf_range_pop(s);
    return r;
}
/* Enqueues the plan's tasks on the lanes' streams, with an event wait for each edge that
   crosses streams, each task inside a range of its name (seen in the trace). The host never
   blocks. run: a gf_flow_run (completion callbacks apply), not a capture. */
static gf_result gf__flow_enqueue(const char *fn, gf_flow *flow, const gf__flow_plan *p, gf_stream **lanes, int run) {
    gf_event **done = (gf_event **)gf__calloc(sizeof *done * (size_t)(flow->count + 1));
    gf_result r = GF_OK;
    int i, k;
    if (!done) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    for (i = 0; i < flow->count && r == GF_OK; i++) {
        int t = p->order[i];
        gf__task *task = &flow->tasks[t];
        gf_stream *s = lanes[p->lane[t]];
        for (k = 0; k < p->pred_count[t] && r == GF_OK; k++) {
            int pr = p->preds[p->pred_first[t] + k];
            if (lanes[p->lane[pr]] != s) { r = gf_stream_wait_event(s, done[pr]); if (run) flow->stats.cross_edges++; }
        }
        if (r == GF_OK) r = gf__task_call(fn, flow, task, s);
        if (r == GF_OK && p->signals[t] && (r = gf__event_pool_take(s->dev->events, 0, &done[t])) == GF_OK) {
            r = gf_event_record(done[t], s);
            if (run) flow->stats.events++;
        }
        if (r == GF_OK && run && task->on_complete) r = gf__task_on_complete(fn, flow, task, s);
        if (r == GF_OK && run) flow->stats.tasks_run++;
    }
    for (i = 0; i < flow->count; i++) if (done[i]) gf__event_pool_give(done[i]->dev->events, done[i]);
    gf__free(done);
    return r;
}

/* Frames: every run is one (a frame of an engine's loop). A start on every lane of the flow's
   device (recorded at the lane's first operation), an end on every lane, from the devices' event pools, read back without waiting: completed runs give
   gf_flow_frames its counts and the last one's time on the device, and the profiler's average
   when it was on. Their records are the library's own: no fault rule counts them (a recording
   has no such calls, so a replay's counts would drift from the run's). */
/* Lane s begins the run (a lane of another device is not timed: no one clock). Its start is
   recorded just before its first operation (gf__start_now), as a stream set frame's: the host's
   time in the run's tasks before that is not the device's. A stream that holds another run's
   start still due (runs from two threads sharing a pool's stream) has this one recorded now. */
static void gf__flow_frame_lane(gf_flow *flow, gf__flow_frame *fr, gf_stream *s) {
    gf_event *start = NULL;
    int kept = 0;
    if (!s || s->dev != flow->dev || !gf__grow((void **)&fr->starts, &fr->start_cap, fr->start_count + 1, sizeof *fr->starts) ||
        gf__event_pool_take(s->dev->events, GF_EVENT_TIMING, &start) != GF_OK) return;
    gf__lock(&s->lock);
    if (!s->capture && !s->start_due) {
        s->start_due = start;
        fr->starts_due = kept = 1;
    } else if (!s->capture) kept = gf__event_record_locked(start, s) == GF_OK;
    gf__unlock(&s->lock);
    if (!kept) { gf__event_pool_give(s->dev->events, start); return; }
    fr->starts[fr->start_count].ev = start;
    fr->starts[fr->start_count++].lane = s;
}
/* The starts the run's lanes still hold (a lane that queued nothing yet): recorded now, just
   before its end (record 1), or taken back (0: the run failed, its events go to the pool). Not
   after the run: its lanes may be back in their pools, and those gone. */
static void gf__flow_frame_settle(gf__flow_frame *fr, int record) {
    int i;
    if (!fr->starts_due) return;
    fr->starts_due = 0;
    for (i = 0; i < fr->start_count; i++) {
        gf_stream *s = fr->starts[i].lane;
        gf__lock(&s->lock);
        if (s->start_due == fr->starts[i].ev) {
            if (record && !s->capture) gf__start_now(s);
            else s->start_due = NULL;
        }
        gf__unlock(&s->lock);
    }
}
static void gf__flow_frame_begin(gf_flow *flow, gf_stream *first, gf__flow_frame *fr) {
    memset(fr, 0, sizeof *fr);
    fr->timed = gf__atomic_load_int(&flow->dev->profiling);
    gf__flow_frame_lane(flow, fr, first);
}
static void gf__flow_frame_release(gf__flow_frame *fr) {
    int i;
    gf__flow_frame_settle(fr, 0);
    for (i = 0; i < fr->start_count; i++) gf__event_pool_give(fr->starts[i].ev->dev->events, fr->starts[i].ev);
    gf__free(fr->starts);
    for (i = 0; i < fr->lanes; i++) if (fr->ends[i]) gf__event_pool_give(fr->ends[i]->dev->events, fr->ends[i]);
    gf__free(fr->ends);
    memset(fr, 0, sizeof *fr);
}
/* The run's work is all queued: its ends are recorded and the frame counted (flow->lock held).
   A frame that cannot be watched (out of events or memory) counts as complete at once. */
static void gf__flow_frame_end(gf_flow *flow, gf_stream **lanes, int count, gf__flow_frame *fr) {
    GF__HELD(&flow->lock);
    int i, ok = count > 0 && (fr->ends = (gf_event **)gf__calloc(sizeof *fr->ends * (size_t)count)) != NULL;
    fr->number = flow->frames.begun++;
    gf__flow_frame_settle(fr, 1);
    gf__faults_inside++;   /* the library's own records */
    for (i = 0; ok && i < count; i++) {
        fr->lanes = i + 1;
        ok = gf__event_pool_take(lanes[i]->dev->events, fr->start_count && lanes[i]->dev == flow->dev ? GF_EVENT_TIMING : 0, &fr->ends[i]) == GF_OK &&
             gf__call_event_record(fr->ends[i], lanes[i]) == GF_OK;
    }
    gf__faults_inside--;
    for (i = 0; i < count; i++) if (lanes[i]->dev != flow->dev) fr->timed = 0;   /* no one clock */
    if (ok && gf__grow((void **)&flow->frame, &flow->frame_cap, flow->frame_count + 1, sizeof *flow->frame)) {
        flow->frame[flow->frame_count++] = *fr;
        return;
    }
    gf__flow_frame_release(fr);
    if (gf__frames_complete(&flow->frames, fr->number)) flow->frames.last_ms = 0.0f;   /* its time unknown */
}
/* Frame i of the pending list is complete: counted, its time kept (flow->lock held). */
static void gf__flow_frame_done(gf_flow *flow, int i) {
    gf__flow_frame *fr = &flow->frame[i];
    float longest = 0, ms;
    int k, j;
    for (k = 0; k < fr->lanes; k++)   /* the first lane to begin to the last to end */
        for (j = 0; j < fr->start_count && fr->ends[k]->dev == flow->dev; j++)
            if (gf__event_marks_work(fr->starts[j].ev) && flow->dev->be->event_elapsed_ms(fr->starts[j].ev, fr->ends[k], &ms) == GF_OK && ms > longest)
                longest = ms;
    if (gf__frames_complete(&flow->frames, fr->number)) flow->frames.last_ms = longest;
    if (fr->timed && fr->start_count) { flow->stats.timed_runs++; flow->timed_ms += longest; }
    gf__flow_frame_release(fr);
    memmove(fr, fr + 1, sizeof *fr * (size_t)(flow->frame_count - i - 1));   /* oldest first */
    flow->frame_count--;
}
/* Whether each lane of the run has ended (its start comes before its first lane's end). A lane
   found ended is, to the race detector, a host wait for it that ended: what the run wrote is
   ordered before what the host queues next (a run paced by gf_flow_wait_frames, say). */
static int gf__flow_frame_complete(const gf__flow_frame *fr) {
    int k;
    for (k = 0; k < fr->lanes; k++) {
        gf_event *end = fr->ends[k];
        gf__race_seen race_seen = gf__race_seen_event(end);
        if (gf__event_settle(end, end->dev->be->event_query(end), &race_seen, 0) != GF_OK) return 0;
    }
    return 1;
}
/* The frames the devices have finished, oldest first, found without waiting; it stops at the
   first still running (a later one that finished first is counted once that one has), so a run
   pays for a query or two however many are in flight (flow->lock held). */
static void gf__flow_frames_collect(gf_flow *flow) {
    GF__HELD(&flow->lock);
    while (flow->frame_count > 0 && gf__flow_frame_complete(&flow->frame[0])) gf__flow_frame_done(flow, 0);
}

/* The streams of the last run or capture, by lane: what gf_flow_write_dot labels lanes with. */
static void gf__flow_remember_lanes(gf_flow *flow, gf_stream **lanes, int count) {   /* flow->lock held */
    GF__HELD(&flow->lock);
    int i;
    char (*names)[64] = (char (*)[64])gf__realloc(flow->last_lanes, sizeof *names * (size_t)(count ? count : 1));
    if (!names) return;
    flow->last_lanes = names;
    for (i = 0; i < count; i++) gf__copy_str(names[i], sizeof names[i], lanes[i]->label);
    flow->last_lane_count = count;
}

/* The pool of dev among pools, else NULL. */
static gf_stream_pool *gf__pool_of(gf_stream_pool *const *pools, int count, gf_device *dev) {
    int i;
    for (i = 0; i < count; i++) if (pools[i]->dev == dev) return pools[i];
    return NULL;
}
/* ---- condition tasks: flows that loop and branch ---- */
/* The int at buf+offset once s's work so far has passed: the host waits for s (a 4-byte read
   back), which GPUFLOW_SYNC_DEBUG reports as call's wait for what. The copy lands in a block of
   its own: when the wait fails the copy may still come, so the block is then retired (freed
   once the device's work has passed). No stream's lock held (a retire fences them all). */
static gf_result gf__int_read(const char *call, gf_stream *s, gf_buffer *buf, size_t offset, const char *what, int32_t *value) {
    int32_t *landing;
    gf_result r;
    if ((r = gf__hidden_wait(call, s, what)) != GF_OK) return r;
    if (!(landing = (int32_t *)gf__malloc(sizeof *landing))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", call);
    if ((r = gf__call_copy_to_host_async(s, landing, buf, offset, sizeof *landing)) != GF_OK) { gf__free(landing); return r; }
    if ((r = gf__call_stream_synchronize(s)) != GF_OK) { gf__retire(s->dev, gf__free, landing, GF__KIND_NO_MEMORY, 0, 0); return r; }
    *value = *landing;
    gf__free(landing);
    return GF_OK;
}

/* A run decided as it goes, by Taskflow's rules: a task is ready once each of its strong
   predecessors has run since it last ran, or when a condition task picks it (then at once);
   the tasks with no predecessor at all start. A condition reads its int where its
   predecessors' work has passed (the host waits) and its value k picks its k-th successor;
   a value with no successor picks none. Picked tasks wait until no task readied by its edges
   is left (a loop's round ends before the next begins). The run ends when no task is ready. A task continues
   the stream of the task that readied it while that stream holds nothing newer, else takes a
   stream of its device's pool; it waits, by an event, for the latest run of each strong
   predecessor on another stream. */
typedef struct gf__decide_task {
    int pending;          /* strong predecessors not yet run since it last ran */
    int picked;           /* a condition task's successor (so not a first task) */
    gf_stream *on;        /* where its latest run went (NULL: not run) */
    gf_event *done;       /* recorded after that run, once another stream may need it */
} gf__decide_task;
typedef struct gf__decide_lane { gf_stream *s; gf_stream_pool *pool; int tail; } gf__decide_lane;
typedef struct gf__decide_ring { int *items; int head, count, cap; } gf__decide_ring;   /* (task, the task that readied it) */
typedef struct gf__decide {
    const char *fn;              /* the public call running the flow, for messages */
    gf_flow *flow;
    const gf__flow_plan *plan;   /* strong predecessors by task */
    gf__flow_frame *frame;       /* begun on the first lane */
    gf__decide_task *task;
    unsigned char *ran;          /* by strong edge (the plan's preds order): its predecessor ran since */
    gf__decide_lane *lanes; int lane_count, lane_cap;
    gf__decide_ring ready;       /* readied by their plain edges: run first */
    gf__decide_ring picked;      /* picked by a condition: run once nothing else is ready, so a
                                    round of a loop ends before the next begins, as in its graph */
} gf__decide;

static gf_result gf__decide_push(gf__decide_ring *q, int t, int by) {
    if (q->count == q->cap) {   /* grow the ring, unwrapped */
        int cap = q->cap ? q->cap * 2 : 32, i;
        int *ring = (int *)gf__malloc(sizeof *ring * 2 * (size_t)cap);
        if (!ring) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_run: out of host memory");
        for (i = 0; i < q->count; i++) {
            int at = (q->head + i) % q->cap;
            ring[2 * i] = q->items[2 * at];
            ring[2 * i + 1] = q->items[2 * at + 1];
        }
        gf__free(q->items);
        q->items = ring; q->cap = cap; q->head = 0;
    }
    q->items[2 * ((q->head + q->count) % q->cap)] = t;
    q->items[2 * ((q->head + q->count) % q->cap) + 1] = by;
    q->count++;
    return GF_OK;
}
static void gf__decide_pop(gf__decide_ring *q, int *t, int *by) {
    *t = q->items[2 * q->head];
    *by = q->items[2 * q->head + 1];
    q->head = (q->head + 1) % q->cap;
    q->count--;
}
static gf__decide_lane *gf__decide_lane_of(gf__decide *d, const gf_stream *s) {   /* NULL: not a lane yet */
    int i;
    for (i = 0; i < d->lane_count; i++) if (d->lanes[i].s == s) return &d->lanes[i];
    return NULL;
}
/* p's latest run as an event (recorded now if it has none: then it covers its stream's work
   since, which only waits longer). */
static gf_result gf__decide_event(gf__decide *d, int p, gf_event **out) {
    gf__decide_task *dp = &d->task[p];
    gf_result r;
    if (!dp->done) {
        if ((r = gf__event_pool_take(dp->on->dev->events, 0, &dp->done)) != GF_OK) return r;
        if ((r = gf_event_record(dp->done, dp->on)) != GF_OK) {
            gf__event_pool_give(dp->on->dev->events, dp->done);
            dp->done = NULL;
            return r;
        }
        d->flow->stats.events++;
    }
    *out = dp->done;
    return GF_OK;
}
/* The lane t runs on: by's when t may continue it, else one of its pool's streams (one this run
   holds already is used as the lane it is). The pointer holds until the next lane is added. */
static gf_result gf__decide_stream(gf__decide *d, gf_stream_pool *const *pools, int count, int t, int by, gf__decide_lane **lane) {
    const gf__task *task = &d->flow->tasks[t];
    gf_stream *s = NULL;
    gf_stream_pool *pool;
    gf_result r;
    gf__decide_lane *at = by >= 0 && d->task[by].on ? gf__decide_lane_of(d, d->task[by].on) : NULL;
    if (at && at->tail == by && at->s->dev == task->dev &&
        d->flow->tasks[by].hint.priority == task->hint.priority && d->flow->tasks[by].hint.workload == task->hint.workload) {
        *lane = at;
        return GF_OK;
    }
    pool = gf__pool_of(pools, count, task->dev);
    if ((r = gf_stream_pool_acquire(pool, &task->hint, &s)) != GF_OK) return r;
    if ((at = gf__decide_lane_of(d, s)) != NULL) {   /* held already: one lease is enough */
        gf_stream_pool_release(pool, s);
        *lane = at;
        return GF_OK;
    }
    if (!gf__grow((void **)&d->lanes, &d->lane_cap, d->lane_count + 1, sizeof *d->lanes)) {
        gf_stream_pool_release(pool, s);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", d->fn);
    }
    if (!d->lane_count) gf__flow_frame_begin(d->flow, s, d->frame);
    else gf__flow_frame_lane(d->flow, d->frame, s);
    d->lanes[d->lane_count].s = s;
    d->lanes[d->lane_count].pool = pool;
    d->lanes[d->lane_count].tail = -1;
    *lane = &d->lanes[d->lane_count++];
    return GF_OK;
}
/* One run of task t on its lane; then what it readies. */
static gf_result gf__decide_run(gf__decide *d, gf_stream_pool *const *pools, int count, int t, int by) {
    gf_flow *flow = d->flow;
    gf__task *task = &flow->tasks[t];
    gf__decide_task *dt = &d->task[t];
    gf__decide_lane *lane = NULL;
    gf_stream *s;
    gf_result r;
    int tail, k;
    if ((r = gf__decide_stream(d, pools, count, t, by, &lane)) != GF_OK) return r;
    s = lane->s;
    tail = lane->tail;
    /* the lane's last task keeps an event if something other than t may wait for it later */
    if (tail >= 0 && !d->task[tail].done && GF__STRONG_SUCCS(flow, tail) &&
        !(flow->tasks[tail].succ_count == 1 && flow->tasks[tail].succ[0] == t) && (r = gf__decide_event(d, tail, &d->task[tail].done)) != GF_OK)
        return r;
    for (k = -1; k < d->plan->pred_count[t] && r == GF_OK; k++) {   /* its own run before, its strong predecessors' latest */
        int p = k < 0 ? t : d->plan->preds[d->plan->pred_first[t] + k];
        gf_event *ev;
        if (!d->task[p].on || d->task[p].on == s) continue;
        if ((r = gf__decide_event(d, p, &ev)) == GF_OK && (r = gf_stream_wait_event(s, ev)) == GF_OK && k >= 0) flow->stats.cross_edges++;
    }
    if (r != GF_OK) return r;
    if (dt->done) { gf__event_pool_give(dt->done->dev->events, dt->done); dt->done = NULL; }   /* of its run before */
    dt->on = s;
    lane->tail = t;
    dt->pending = d->plan->pred_count[t];   /* counts again from here */
    memset(d->ran + d->plan->pred_first[t], 0, (size_t)d->plan->pred_count[t]);
    if (task->cond) {
        int32_t value = 0;
        gf_range_push(s, task->name);
        r = gf__int_read(d->fn, s, task->cond, task->cond_offset, "a condition task's int", &value);
        gf_range_pop(s);
        if (r != GF_OK) return r;
        flow->stats.tasks_run++;
        if (value >= 0 && value < task->succ_count) return gf__decide_push(&d->picked, task->succ[value], t);
        return GF_OK;
    }
    r = gf__task_call(d->fn, flow, task, s);
    if (r == GF_OK && task->on_complete) r = gf__task_on_complete(d->fn, flow, task, s);
    if (r != GF_OK) return r;
    flow->stats.tasks_run++;
    for (k = 0; k < task->succ_count && r == GF_OK; k++) {   /* the edge from t counts once until its successor runs */
        int u = task->succ[k], j;
        for (j = 0; j < d->plan->pred_count[u] && d->plan->preds[d->plan->pred_first[u] + j] != t; j++) {}
        if (j == d->plan->pred_count[u] || d->ran[d->plan->pred_first[u] + j]) continue;
        d->ran[d->plan->pred_first[u] + j] = 1;
        if (--d->task[u].pending == 0) r = gf__decide_push(&d->ready, u, t);
    }
    return r;
}

/* gf_flow_run of a flow with condition tasks (flow->lock held). Its runs are not timed. */
static gf_result gf__flow_decide(const char *fn, gf_flow *flow, gf_stream_pool *const *pools, int count) {
    GF__HELD(&flow->lock);
    gf__flow_plan plan;
    gf__flow_frame frame;
    gf__decide d;
    gf_stream **streams;
    gf_result r;
    int i, k;
    if ((r = gf__flow_plan_make(fn, flow, &plan)) != GF_OK) return r;
    gf__flow_frames_collect(flow);   /* bounds the pending list to the frames in flight */
    memset(&d, 0, sizeof d);
    memset(&frame, 0, sizeof frame);
    d.fn = fn;
    d.flow = flow;
    d.plan = &plan;
    d.frame = &frame;
    d.task = (gf__decide_task *)gf__calloc(sizeof *d.task * (size_t)(flow->count + 1));
    d.ran = (unsigned char *)gf__calloc((size_t)(plan.pred_first[flow->count > 0 ? flow->count - 1 : 0] + plan.pred_count[flow->count > 0 ? flow->count - 1 : 0] + 1));
    if (!d.task || !d.ran) {
        gf__free(d.task); gf__free(d.ran);
        gf__plan_free(&plan);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_run: out of host memory");
    }
    for (i = 0; i < flow->count; i++) {
        d.task[i].pending = plan.pred_count[i];
        if (flow->tasks[i].cond) for (k = 0; k < flow->tasks[i].succ_count; k++) d.task[flow->tasks[i].succ[k]].picked = 1;
    }
    for (i = 0; i < flow->count && r == GF_OK; i++)
        if (!plan.pred_count[i] && !d.task[i].picked) r = gf__decide_push(&d.ready, i, -1);
    while (r == GF_OK && (d.ready.count > 0 || d.picked.count > 0)) {
        int t, by;
        gf__decide_pop(d.ready.count > 0 ? &d.ready : &d.picked, &t, &by);
        r = gf__decide_run(&d, pools, count, t, by);
    }
    if ((streams = (gf_stream **)gf__malloc(sizeof *streams * (size_t)(d.lane_count + 1))) != NULL) {
        for (i = 0; i < d.lane_count; i++) streams[i] = d.lanes[i].s;
        gf__flow_remember_lanes(flow, streams, d.lane_count);
    }
    if (r == GF_OK) {
        flow->stats.runs++;
        if (streams) gf__flow_frame_end(flow, streams, d.lane_count, &frame);
        else {   /* not watched: counted complete, its time unknown */
            if (gf__frames_complete(&flow->frames, flow->frames.begun++)) flow->frames.last_ms = 0.0f;
            gf__flow_frame_release(&frame);
        }
    } else gf__flow_frame_release(&frame);
    gf__free(streams);
    for (i = 0; i < flow->count; i++) if (d.task[i].done) gf__event_pool_give(d.task[i].done->dev->events, d.task[i].done);
    for (i = 0; i < d.lane_count; i++) gf_stream_pool_release(d.lanes[i].pool, d.lanes[i].s);
    gf__free(d.lanes);
    gf__free(d.ready.items);
    gf__free(d.picked.items);
    gf__free(d.ran);
    gf__free(d.task);
    gf__plan_free(&plan);
    return r;
}

/* ---- a flow with condition tasks as a graph ---- */
/* gf_flow_capture makes structured loops and branches of condition tasks, on one stream. A
   depth-first walk from the first tasks over plain edges and picks finds the loops: a pick of
   a task still on the walk's path is a condition's way back (index kb) to its loop's first
   task T. What runs each time round (the body) is what T reaches by plain edges and by the
   forward picks of other conditions, up to the loop's condition c; what each forward pick k of
   a condition reaches so is its branch. Emitted in plain-edge order:
   - a loop: its slot (an int of the graph's own) set to kb, then a WHILE (slot == kb) whose
     body first sets the slot to GF__SHAPE_NONE, then runs the body, c copying its int to the
     slot where c stands (so a round in which c does not run ends the loop, as in a run), then
     an IF (slot == k) per forward pick of c;
   - a branch: c copies its int to its slot where it stands, then an IF (slot == k) per pick.
   The copy makes a branch that changes the int unable to start a second one. A dry pass finds
   first what a graph cannot hold (a strong edge closing a cycle, two ways back, a task picked
   by two conditions, a task inside a loop or branch waiting for one outside it or the other way
   round, a task reached by two branches): GF_ERROR_CAPTURE, naming the tasks, before any task
   function runs. */
#define GF__SHAPE_NONE INT32_MIN   /* a slot no pick matches: the condition did not run */
static gf_result gf__cond_begin(const char *fn, gf_stream *s, gf_buffer *cond, size_t offset, int what, gf__cond_test test);
static gf_result gf__cond_end(const char *fn, gf_stream *s, int what);
typedef struct gf__shape {
    gf_flow *flow;
    const gf__flow_plan *plan;   /* strong predecessors by task */
    int *back;                   /* by condition task: the index of its way back, or -1 */
    int *picker;                 /* by task: the condition task that picks it, or -1 */
    int *slot;                   /* by condition task: its slot (an int) in scratch */
    int *stack;                  /* for the walks */
    unsigned char *stop;         /* conditions whose loop is being emitted: not crossed */
    unsigned char *live;         /* reached from the first tasks (else it never runs, nor picks) */
    int *emitted;                /* dry pass: times each task was placed */
    int dry, depth;              /* dry pass: loops and branches open */
    gf_buffer *scratch;
    gf_stream *s;
} gf__shape;

static gf_result gf__shape_refuse(const gf__shape *sh, const char *why, int a, int b) {
    const gf__task *t = sh->flow->tasks;
    return gf__fail(GF_ERROR_CAPTURE, "gf_flow_capture: flow '%s': %s ('%s', '%s'); gf_flow_run runs it as it is", sh->flow->label,
                    why, t[a].name, t[b].name);
}
/* A task's successors for the walks: a condition's picks, else its plain edges. */
#define GF__SHAPE_NEXT(flow, x) ((flow)->tasks[x].succ_count)
/* The loops, by a depth-first walk from the first tasks: back[] and picker[]. */
static gf_result gf__shape_loops(gf__shape *sh) {
    const gf_flow *flow = sh->flow;
    int n = flow->count, i, c, k;
    int *next = (int *)gf__calloc(sizeof(int) * (size_t)(n + 1));
    unsigned char *state = (unsigned char *)gf__calloc((size_t)n + 1);   /* 1 on the path, 2 done */
    gf_result r = GF_OK;
    if (!next || !state) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
    for (c = 0; c < n && r == GF_OK; c++)
        for (k = 0; flow->tasks[c].cond && k < flow->tasks[c].succ_count && r == GF_OK; k++) {
            int t = flow->tasks[c].succ[k];
            if (sh->picker[t] >= 0 && sh->picker[t] != c) r = gf__shape_refuse(sh, "a task picked by two condition tasks (the task, a condition)", t, c);
            sh->picker[t] = c;
        }
    for (i = 0; i < n && r == GF_OK; i++) {
        int top = 0;
        if (state[i] || sh->plan->pred_count[i] || sh->picker[i] >= 0) continue;   /* a first task */
        sh->stack[top++] = i;
        state[i] = 1;
        while (top > 0 && r == GF_OK) {
            int x = sh->stack[top - 1];
            if (next[x] == GF__SHAPE_NEXT(flow, x)) { state[x] = 2; top--; continue; }
            k = next[x]++;
            c = flow->tasks[x].succ[k];
            if (state[c] == 1) {   /* back to the path: a loop's way back */
                if (!flow->tasks[x].cond) r = gf__shape_refuse(sh, "a loop entered in its middle: a plain edge closes it (the task, its successor)", x, c);
                else if (sh->back[x] >= 0) r = gf__shape_refuse(sh, "a condition task with two ways back (the condition, a successor)", x, c);
                else sh->back[x] = k;
            } else if (!state[c]) { state[c] = 1; sh->stack[top++] = c; }
        }
    }
    for (i = 0; state && i < n; i++) sh->live[i] = state[i] != 0;
    gf__free(next);
    gf__free(state);
    return r;
}
/* Marks what from reaches by plain edges and by forward picks, not crossing the conditions in
   sh->stop (they are marked, their picks not followed). */
static void gf__shape_reach(const gf__shape *sh, int from, unsigned char *mark) {
    const gf_flow *flow = sh->flow;
    int top = 0, k;
    memset(mark, 0, (size_t)flow->count);
    mark[from] = 1;
    sh->stack[top++] = from;
    while (top > 0) {
        int x = sh->stack[--top];
        if (flow->tasks[x].cond && sh->stop[x]) continue;
        for (k = 0; k < flow->tasks[x].succ_count; k++) {
            int y = flow->tasks[x].succ[k];
            if (flow->tasks[x].cond && k == sh->back[x]) continue;
            if (!mark[y]) { mark[y] = 1; sh->stack[top++] = y; }
        }
    }
}

static gf_result gf__shape_emit(gf__shape *sh, const unsigned char *in, int head);
static gf_result gf__shape_cond(gf__shape *sh, int what, int c, int32_t value) {   /* a WHILE or IF on c's slot == value */
    gf__cond_test test;
    test.value = value; test.equal = 1;
    if (sh->dry && ++sh->depth > GF_COND_DEPTH)
        return gf__fail(GF_ERROR_CAPTURE, "gf_flow_capture: flow '%s': loops and branches nest deeper than %d at condition '%s'", sh->flow->label,
                        GF_COND_DEPTH, sh->flow->tasks[c].name);
    return sh->dry ? GF_OK : gf__recorded_cond_begin(sh->s, sh->scratch, (size_t)sh->slot[c] * 4, what, test);
}
static gf_result gf__shape_end(gf__shape *sh, int what) {
    if (sh->dry) { sh->depth--; return GF_OK; }
    return gf__recorded_cond_end(sh->s, what);
}
/* The capture's own work goes through the recorded calls, so that a recording has the graph's
   loops and branches (the flow itself is no recorded call: its calls are the outermost). */
static gf_result gf__shape_set(gf__shape *sh, int c, int32_t value) {   /* c's slot = value */
    return sh->dry ? GF_OK : gf_fill32_async(sh->s, sh->scratch, (size_t)sh->slot[c] * 4, (uint32_t)value, 1);
}
static gf_result gf__shape_copy(gf__shape *sh, int c) {   /* condition c where it stands: its int to its slot */
    const gf__task *ct = &sh->flow->tasks[c];
    gf_result r;
    if (sh->dry) return GF_OK;
    gf_range_push(sh->s, ct->name);
    r = gf_copy_buffer_async(sh->s, sh->scratch, (size_t)sh->slot[c] * 4, ct->cond, ct->cond_offset, 4);
    gf_range_pop(sh->s);
    return r;
}
/* An IF per forward pick of c, each over what its pick reaches. */
static gf_result gf__shape_branches(gf__shape *sh, int c) {
    const gf__task *ct = &sh->flow->tasks[c];
    unsigned char *region = (unsigned char *)gf__calloc((size_t)sh->flow->count + 1);
    gf_result r = region ? GF_OK : gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
    int k;
    for (k = 0; k < ct->succ_count && r == GF_OK; k++) {
        if (k == sh->back[c]) continue;
        gf__shape_reach(sh, ct->succ[k], region);
        if ((r = gf__shape_cond(sh, GF__COND_IF, c, k)) == GF_OK && (r = gf__shape_emit(sh, region, ct->succ[k])) == GF_OK) r = gf__shape_end(sh, GF__COND_IF);
    }
    gf__free(region);
    return r;
}
static gf_result gf__shape_loop(gf__shape *sh, int c) {
    int head = sh->flow->tasks[c].succ[sh->back[c]];
    unsigned char *body = (unsigned char *)gf__calloc((size_t)sh->flow->count + 1);
    gf_result r = body ? GF_OK : gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
    sh->stop[c] = 1;
    if (r == GF_OK) gf__shape_reach(sh, head, body);
    if (r == GF_OK && (r = gf__shape_set(sh, c, sh->back[c])) == GF_OK && (r = gf__shape_cond(sh, GF__COND_WHILE, c, sh->back[c])) == GF_OK &&
        (r = gf__shape_set(sh, c, GF__SHAPE_NONE)) == GF_OK && (r = gf__shape_emit(sh, body, head)) == GF_OK)
        r = gf__shape_end(sh, GF__COND_WHILE);
    sh->stop[c] = 0;
    gf__free(body);
    return r == GF_OK ? gf__shape_branches(sh, c) : r;
}
/* The tasks marked in `in`, from head (the task whose pick starts them; -1: the flow's first
   tasks), in plain-edge order; a loop stands where its first task does, a branch where its
   condition does. A picked task with no plain edge into it starts only when picked, as in a
   run (a loop with no task before it never starts). */
static gf_result gf__shape_emit(gf__shape *sh, const unsigned char *in, int head) {
    const gf_flow *flow = sh->flow;
    const gf__flow_plan *p = sh->plan;
    int n = flow->count, c, k, i, at = 0, tail = 0;
    unsigned char *skip = (unsigned char *)gf__calloc((size_t)n + 1), *inner = (unsigned char *)gf__calloc((size_t)n + 1);
    int *indeg = (int *)gf__calloc(sizeof(int) * (size_t)(n + 1)), *order = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    gf_result r = GF_OK;
    if (!skip || !inner || !indeg || !order) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
    for (c = 0; c < n && r == GF_OK; c++) {   /* what loops and branches here place themselves */
        if (!in[c] || !flow->tasks[c].cond || sh->stop[c] || !sh->live[c]) continue;
        for (k = 0; k < flow->tasks[c].succ_count && r == GF_OK; k++) {
            int t = flow->tasks[c].succ[k];
            if (k != sh->back[c] && sh->plan->pred_count[t])   /* it would run by its plain edges too, picked or not */
                r = gf__shape_refuse(sh, "a branch's first task also waits for a task by a plain edge (the task, what it waits for)", t,
                                     sh->plan->preds[sh->plan->pred_first[t]]);
            if (k == sh->back[c]) { sh->stop[c] = 1; gf__shape_reach(sh, t, inner); sh->stop[c] = 0; }
            else gf__shape_reach(sh, t, inner);
            for (i = 0; i < n; i++) if (inner[i] && !(k == sh->back[c] && i == t)) skip[i] = 1;
        }
    }
    for (i = 0; i < n && r == GF_OK; i++) {
        if (!in[i] || skip[i]) continue;
        for (k = 0; k < p->pred_count[i] && r == GF_OK; k++) {
            int pr = p->preds[p->pred_first[i] + k];
            if (in[pr] && !skip[pr]) indeg[i]++;
            else if (i != head)
                r = gf__shape_refuse(sh, in[pr] ? "a task waits for a task inside a loop or a branch it is not in (the task, what it waits for)"
                                                : "a task inside a loop or a branch waits for a task outside it (the task, what it waits for)", i, pr);
        }
        if (r == GF_OK && !indeg[i] && (i == head || p->pred_count[i] || sh->picker[i] < 0)) order[tail++] = i;
    }
    while (r == GF_OK && at < tail) {
        int x = order[at++], pc = sh->picker[x];
        const gf__task *task = &flow->tasks[x];
        int loop = pc >= 0 && in[pc] && !sh->stop[pc] && sh->back[pc] >= 0 && flow->tasks[pc].succ[sh->back[pc]] == x;
        if (sh->dry && !loop && ++sh->emitted[x] > 1) {   /* (a loop's first task is placed in its body) */
            r = gf__shape_refuse(sh, "a task reached by two loops or branches (the task, its picker)", x, pc >= 0 ? pc : x);
            break;
        }
        if (loop) r = gf__shape_loop(sh, pc);
        else if (task->cond && sh->stop[x]) r = gf__shape_copy(sh, x);   /* the loop's own condition: its WHILE tests the slot */
        else if (task->cond) { if ((r = gf__shape_copy(sh, x)) == GF_OK) r = gf__shape_branches(sh, x); }
        else if (!sh->dry) r = gf__task_call("gf_flow_capture", flow, task, sh->s);
        for (k = 0; r == GF_OK && k < GF__STRONG_SUCCS(flow, x); k++) {
            int y = task->succ[k];
            if (in[y] && !skip[y] && --indeg[y] == 0) order[tail++] = y;
        }
    }
    gf__free(skip); gf__free(inner); gf__free(indeg); gf__free(order);
    return r;
}

/* gf_flow_capture of a flow with condition tasks (flow->lock held), on s alone: a dry pass,
   then the capture. */
static gf_result gf__flow_capture_decided(gf_flow *flow, gf_stream *s, gf_graph **out) {
    GF__HELD(&flow->lock);
    gf__flow_plan plan;
    gf__shape sh;
    unsigned char *all = NULL;
    gf_result r;
    int n = flow->count, i, slots = 0;
    if ((r = gf__flow_plan_make("gf_flow_capture", flow, &plan)) != GF_OK) return r;
    memset(&sh, 0, sizeof sh);
    sh.flow = flow; sh.plan = &plan; sh.s = s;
    sh.back = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    sh.picker = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    sh.slot = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    sh.stack = (int *)gf__malloc(sizeof(int) * (size_t)(n + 1));
    sh.emitted = (int *)gf__calloc(sizeof(int) * (size_t)(n + 1));
    sh.stop = (unsigned char *)gf__calloc((size_t)n + 1);
    sh.live = (unsigned char *)gf__calloc((size_t)n + 1);
    all = (unsigned char *)gf__malloc((size_t)n + 1);
    if (!sh.back || !sh.picker || !sh.slot || !sh.stack || !sh.emitted || !sh.stop || !sh.live || !all)
        r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
    for (i = 0; r == GF_OK && i < n; i++) { sh.back[i] = sh.picker[i] = -1; sh.slot[i] = flow->tasks[i].cond ? slots++ : -1; }
    if (r == GF_OK) {
        memset(all, 1, (size_t)n + 1);
        sh.dry = 1;
        if ((r = gf__shape_loops(&sh)) == GF_OK) r = gf__shape_emit(&sh, all, -1);
        sh.dry = 0;
    }
    if (r == GF_OK) r = gf__buffer_new("gf_flow_capture", flow->dev, (size_t)slots * 4, GF_MEMORY_DEVICE, &sh.scratch);
    if (r == GF_OK && gf__atomic_load_int(&gf__rec_on)) gf__rec_made_buffer(sh.scratch);
    if (r == GF_OK && (r = gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL)) == GF_OK) {
        int kept;
        gf__lock(&s->lock);
        kept = s->capture && gf__graph_keep(s->capture->graph, sh.scratch);
        gf__unlock(&s->lock);
        if (!kept) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
        else r = gf__shape_emit(&sh, all, -1);
        if (r == GF_OK) r = gf_stream_end_capture(s, out);
        else gf__recorded_capture_abandon(s);
        if (r == GF_OK) gf__flow_remember_lanes(flow, &s, 1);
    }
    if (sh.scratch) {   /* the graph keeps it (a replay's stays to its device's close) */
        if (gf__atomic_load_int(&gf__rec_on)) gf__rec_gone(sh.scratch);
        gf__buffer_free(sh.scratch);
    }
    gf__free(sh.back); gf__free(sh.picker); gf__free(sh.slot); gf__free(sh.stack); gf__free(sh.emitted); gf__free(sh.stop); gf__free(sh.live); gf__free(all);
    gf__plan_free(&plan);
    return r;
}

static gf_result gf__flow_run(const char *fn, gf_flow *flow, gf_stream_pool *const *pools, int count) {
    gf__flow_plan plan;
    gf_stream **lanes;
    gf_stream_pool **lane_pool;
    gf_acquire_hint hint;
    gf_result r = GF_OK;
    int i;
    gf__lock(&flow->lock);
    for (i = 0; i < flow->count; i++)
        if (!gf__pool_of(pools, count, flow->tasks[i].dev)) {
            gf__flow_unlock(flow);
            return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: task '%s' of flow '%s' runs on device %s, which no pool given belongs to%s", fn,
                            flow->tasks[i].name, flow->label, flow->tasks[i].dev->tag,
                            count == 1 ? " (tasks on several devices: gf_flow_run_multi with one pool per device)" : "");
        }
    if (flow->conditions) {
        r = gf__flow_decide(fn, flow, pools, count);
        gf__flow_unlock(flow);
        return r;
    }
    if ((r = gf__flow_plan_make(fn, flow, &plan)) != GF_OK) { gf__flow_unlock(flow); return r; }
    lanes = (gf_stream **)gf__calloc(sizeof *lanes * (size_t)(plan.lanes + 1));
    lane_pool = (gf_stream_pool **)gf__calloc(sizeof *lane_pool * (size_t)(plan.lanes + 1));
    if (!lanes || !lane_pool) {
        gf__free(lanes);
        gf__free(lane_pool);
        gf__plan_free(&plan);
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    for (i = 0; i < plan.lanes && r == GF_OK; i++) {   /* a lane runs on its first task's device */
        hint = flow->tasks[plan.lane_first[i]].hint;
        lane_pool[i] = gf__pool_of(pools, count, flow->tasks[plan.lane_first[i]].dev);
        r = gf_stream_pool_acquire(lane_pool[i], &hint, &lanes[i]);
    }
    if (r == GF_OK) {
        gf__flow_frame frame;
        gf__flow_frames_collect(flow);   /* bounds the pending list to the frames in flight */
        gf__flow_frame_begin(flow, lanes[0], &frame);
        for (i = 1; i < plan.lanes; i++) gf__flow_frame_lane(flow, &frame, lanes[i]);
        r = gf__flow_enqueue(fn, flow, &plan, lanes, 1);
        if (r == GF_OK) gf__flow_frame_end(flow, lanes, plan.lanes, &frame);
        else gf__flow_frame_release(&frame);
        if (r == GF_OK) flow->stats.runs++;
        gf__flow_remember_lanes(flow, lanes, plan.lanes);
    }
    for (i = 0; i < plan.lanes; i++) if (lanes[i]) gf_stream_pool_release(lane_pool[i], lanes[i]);
    gf__free(lanes);
    gf__free(lane_pool);
    gf__plan_free(&plan);
    gf__flow_unlock(flow);
    return r;
}

/* graph_after: a run as the flow's graph, captured first when the flow has run that often
   unchanged. Returns 1 with *r when it ran so, 0 for a run as a flow (not yet, a change since,
   a task with on_complete, which a graph has no per-run event for, or a capture that failed). */
static int gf__flow_run_as_graph(gf_flow *flow, gf_stream_pool *pool, gf_result *r) {
    gf__flow_frame frame;
    gf_graph *stale = NULL, *g;
    gf_stream *s = NULL;
    uint64_t version;
    int i, capture, callbacks = 0;
    gf__lock(&flow->lock);
    if (flow->counted_version != flow->version) { flow->counted_version = flow->version; flow->same_runs = 0; }
    if (flow->graph && flow->graph_version != flow->version) { stale = flow->graph; flow->graph = NULL; flow->graph_refused = 0; }
    for (i = 0; i < flow->count; i++) callbacks |= flow->tasks[i].on_complete != NULL || flow->tasks[i].dev != flow->dev;
    capture = !flow->graph && !flow->graph_refused && !callbacks && flow->same_runs >= flow->graph_after;
    if (!flow->graph && !capture && flow->same_runs < flow->graph_after) flow->same_runs++;   /* this run goes as a flow */
    g = flow->graph;
    version = flow->version;
    gf__flow_unlock(flow);
    if (stale) gf_graph_destroy(stale);   /* never waits: its queued replays keep what they use */
    if (!g && !capture) return 0;
    if ((*r = gf_stream_pool_acquire(pool, NULL, &s)) != GF_OK) return 1;
    if (capture) {
        gf__error_keep keep;
        char why[sizeof gf__error_text];
        gf_result captured;
        gf__error_keep_begin(&keep);   /* the run goes on as a flow: said once, as a warning */
        captured = gf_flow_capture(flow, s, &g);
        gf__error_keep_end(&keep, why);
        if (captured != GF_OK) {
            gf__notice(GF_LOG_WARNING, "gf_flow_run: flow '%s' could not become a graph (%s); it runs as a flow", flow->label, why);
            gf__lock(&flow->lock);
            flow->graph_refused = 1;
            gf__flow_unlock(flow);
            gf_stream_pool_release(pool, s);
            return 0;
        }
        gf__lock(&flow->lock);
        if (flow->version == version && !flow->graph) { flow->graph = g; flow->graph_version = version; flow->stats.captures++; g = flow->graph; }
        gf__flow_unlock(flow);
    }
    gf__flow_frame_begin(flow, s, &frame);
    *r = gf_graph_launch(g, s);
    gf__lock(&flow->lock);
    if (*r == GF_OK) {
        flow->stats.runs++; flow->stats.graph_runs++;
        if (!flow->conditions) flow->stats.tasks_run += (uint64_t)flow->count;   /* a graph that decides runs some of them: not counted */
        gf__flow_frame_end(flow, &s, 1, &frame);
    } else gf__flow_frame_release(&frame);
    gf__flow_frames_collect(flow);   /* bounds the pending list to the frames in flight */
    gf__flow_unlock(flow);
    if (g != flow->graph) gf_graph_destroy(g);   /* changed while it was captured: this run's alone */
    gf_stream_pool_release(pool, s);
    return 1;
}

GPUFLOW_IMPL gf_result gf_flow_run(gf_flow *flow, gf_stream_pool *pool) {
    gf_result r;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    GF__CHECK(pool, GF__T_STREAM_POOL);
    GF__SAME_DEVICE(flow->dev, pool->dev);
    if (flow->graph_after && gf__flow_run_as_graph(flow, pool, &r)) return r;
    return gf__flow_run(__func__, flow, &pool, 1);
}
GPUFLOW_IMPL gf_result gf_flow_run_multi(gf_flow *flow, gf_stream_pool *const *pools, int count) {
    int i, j;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    if (!pools) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_run_multi: pools is NULL (give one pool per device the tasks use)");
    if (count < 1) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_run_multi: count %d: give one pool per device the tasks use", count);
    for (i = 0; i < count; i++) {
        if (!gf__is(pools[i], GF__T_STREAM_POOL)) return gf__bad_handle(__func__, "pools[i]", pools[i], GF__T_STREAM_POOL);
        for (j = 0; j < i; j++)
            if (pools[j]->dev == pools[i]->dev)
                return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_run_multi: pools[%d] and pools[%d] belong to one device (%s)", j, i, pools[i]->dev->tag);
    }
    return gf__flow_run(__func__, flow, pools, count);
}

/* Capture forks a stream per extra lane off s and joins them all back, so a driver with native
   graphs sees the flow's parallelism. */
GPUFLOW_IMPL gf_result gf_flow_capture(gf_flow *flow, gf_stream *s, gf_graph **out) {
    gf__flow_plan plan;
    gf_stream **lanes = NULL;
    gf_event *fork = NULL, *join = NULL;
    gf_result r;
    int i;
    GF__OUT_NULL(out);
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK_OUT(out);
    GF__SAME_DEVICE(flow->dev, s->dev);
    gf__lock(&flow->lock);
    for (i = 0; i < flow->count; i++)
        if (flow->tasks[i].dev != flow->dev) {
            gf__flow_unlock(flow);
            return gf__fail(GF_ERROR_CAPTURE, "gf_flow_capture: task '%s' runs on another device (%s): a flow over several devices is run, not captured",
                            flow->tasks[i].name, flow->tasks[i].dev->tag);
        }
    if (flow->conditions) {
        r = gf__flow_capture_decided(flow, s, out);
        gf__flow_unlock(flow);
        return r;
    }
    if ((r = gf__flow_plan_make("gf_flow_capture", flow, &plan)) != GF_OK) { gf__flow_unlock(flow); return r; }
    if (!(lanes = (gf_stream **)gf__calloc(sizeof *lanes * (size_t)(plan.lanes + 1))))
        r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
    if (r == GF_OK && plan.lanes > 1 && plan.lanes - 1 > flow->fork_count) {   /* the flow keeps its fork streams */
        gf_stream **forks = (gf_stream **)gf__realloc(flow->forks, sizeof *forks * (size_t)(plan.lanes - 1));
        if (!forks) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_flow_capture: out of host memory");
        else flow->forks = forks;
        for (i = flow->fork_count; r == GF_OK && i < plan.lanes - 1; i++) {
            char name[80];
            snprintf(name, sizeof name, "%s/fork%d", flow->label, i);
            if ((r = gf__stream_new(flow->dev, name, GF_PRIORITY_NORMAL, 1, &forks[i])) == GF_OK) flow->fork_count = i + 1;
        }
    }
    if (r == GF_OK) r = gf_stream_begin_capture(s, GF_CAPTURE_GLOBAL);
    if (r == GF_OK) {
        lanes[0] = s;
        if (plan.lanes > 1 && (r = gf__event_pool_take(flow->dev->events, 0, &fork)) == GF_OK &&
            (r = gf_event_record(fork, s)) == GF_OK)
            for (i = 1; i < plan.lanes && r == GF_OK; i++) {
                lanes[i] = flow->forks[i - 1];
                r = gf_stream_wait_event(lanes[i], fork);
            }
        if (r == GF_OK) r = gf__flow_enqueue("gf_flow_capture", flow, &plan, lanes, 0);
        if (r == GF_OK) gf__flow_remember_lanes(flow, lanes, plan.lanes);
        if (r == GF_OK && plan.lanes > 1 && (r = gf__event_pool_take(flow->dev->events, 0, &join)) == GF_OK)
            for (i = 1; i < plan.lanes && r == GF_OK; i++)
                if ((r = gf_event_record(join, lanes[i])) == GF_OK) r = gf_stream_wait_event(s, join);
        if (r == GF_OK) r = gf_stream_end_capture(s, out);
        else gf__recorded_capture_abandon(s);
    }
    if (fork) gf__event_pool_give(flow->dev->events, fork);
    if (join) gf__event_pool_give(flow->dev->events, join);
    gf__free(lanes);
    gf__plan_free(&plan);
    gf__flow_unlock(flow);
    return r;
}

GPUFLOW_IMPL void gf_flow_destroy(gf_flow *flow) {
    int i;
    GF__CHECK_DESTROY(flow, GF__T_FLOW);
    if (gf__in_task_of(flow)) { gf__set_error(GF_ERROR_INVALID_STATE, GF__IN_OWN_TASK_TEXT, "gf_flow_destroy"); return; }
    if (flow->graph) gf_graph_destroy(flow->graph);
    for (i = 0; i < flow->count; i++) gf__free(flow->tasks[i].succ);
    for (i = 0; i < flow->fork_count; i++) gf__stream_free(flow->forks[i]);
    for (i = 0; i < flow->frame_count; i++) gf__flow_frame_release(&flow->frame[i]);
    gf__free(flow->frame);
    gf__free(flow->last_lanes);
    gf__free(flow->forks);
    gf__free(flow->tasks);
    gf__free(flow->walk);
    gf__free(flow->seen);
    gf__mutex_destroy(&flow->lock);
    gf__flow_id_give(flow->id);
    gf__live(flow->dev, GF__T_FLOW, -1);
    gf__obj_free(flow->dev, flow);
}

GPUFLOW_IMPL gf_result gf_flow_get_stats(gf_flow *flow, gf_flow_stats *out) {
    gf__frames frames;
    double timed_ms;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    GF__CHECK_OUT(out);
    gf__flow_counts(flow, out, &timed_ms, &frames);
    out->avg_run_ms = out->timed_runs ? timed_ms / (double)out->timed_runs : 0.0;
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_flow_frames(gf_flow *flow, gf_frame_info *out) {
    gf_flow_stats stats;
    gf__frames frames;
    double timed_ms;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    GF__CHECK_OUT(out);
    gf__flow_counts(flow, &stats, &timed_ms, &frames);
    gf__frames_info(&frames, 0, out);
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_flow_wait_frames(gf_flow *flow, int max_in_flight, unsigned timeout_ms) {
    uint64_t end;
    gf_result r = GF_OK;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    if (max_in_flight < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_wait_frames: max_in_flight %d is negative", max_in_flight);
    end = gf__now_ns() + (uint64_t)timeout_ms * 1000000u;
    gf__lock(&flow->lock);
    gf__flow_frames_collect(flow);
    while (r == GF_OK && flow->frames.begun - flow->frames.completed > (uint64_t)max_in_flight && flow->frame_count > 0) {
        /* the oldest run's first lane still running, waited for with the lock let go (the flow's
           queries and runs go on); the events are the device pool's, never freed meanwhile */
        uint64_t number = flow->frame[0].number;
        gf_event *lane_end = NULL;
        int k;
        for (k = 0; k < flow->frame[0].lanes && !lane_end; k++)
            if (flow->frame[0].ends[k]->dev->be->event_query(flow->frame[0].ends[k]) != GF_OK) lane_end = flow->frame[0].ends[k];
        if (lane_end) {   /* in slices: another thread may count the run meanwhile, and its event go back to the pool and be recorded anew */
            unsigned left = gf__ms_left(end);
            gf__flow_unlock(flow);
            gf__faults_inside++;   /* the flow's own pacing */
            r = gf__event_wait_for("gf_flow_wait_frames", lane_end, left < GF__PACE_SLICE_MS ? left : GF__PACE_SLICE_MS, 0);
            gf__faults_inside--;
            gf__lock(&flow->lock);
            if (r != GF_OK && (!flow->frame_count || flow->frame[0].number != number)) r = GF_OK;   /* counted meanwhile: its event went back */
            else if (r == GF_TIMEOUT && gf__ms_left(end) > 0) r = GF_OK;   /* a slice: look again */
        }
        if (r == GF_OK) gf__flow_frames_collect(flow);
        else if (r == GF_TIMEOUT)
            r = gf__fail(GF_TIMEOUT, "gf_flow_wait_frames: flow '%s': %llu runs still in flight after %u ms (at most %d asked)", flow->label,
                         (unsigned long long)(flow->frames.begun - flow->frames.completed), timeout_ms, max_in_flight);
    }
    gf__flow_unlock(flow);
    return r;
}

/* DOT strings: quotes and backslashes escaped, control bytes dropped. */
static void gf__dot_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
    fputc('"', f);
}

/* Graphviz: a cluster per lane (the stream it ran on last, if it ran), an edge per dependency,
   dashed and labelled "event" where it crosses lanes (those are the only events a run uses). */
GPUFLOW_IMPL gf_result gf_flow_write_dot(gf_flow *flow, const char *path) {
    gf__flow_plan plan;
    gf_result r;
    FILE *f;
    int i, k, lane;
    GF__CHECK(flow, GF__T_FLOW);
    GF__NOT_IN_OWN_TASK(flow);
    if (!path || !*path) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_write_dot: path is %s", path ? "empty" : "NULL");
    gf__lock(&flow->lock);
    if ((r = gf__flow_plan_make("gf_flow_write_dot", flow, &plan)) != GF_OK) { gf__flow_unlock(flow); return r; }
    if (!(f = gf__fopen(path, "w"))) {
        gf__plan_free(&plan);
        gf__flow_unlock(flow);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_write_dot: cannot open '%s' for writing", path);
    }
    fputs("digraph ", f);
    gf__dot_string(f, flow->label);
    fputs(" {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n", f);
    for (lane = 0; lane < plan.lanes; lane++) {
        fprintf(f, "  subgraph cluster_lane%d {\n    label=", lane);
        if (lane < flow->last_lane_count) gf__dot_string(f, flow->last_lanes[lane]);
        else fprintf(f, "\"lane %d\"", lane);
        fputs(";\n", f);
        for (i = 0; i < flow->count; i++)
            if (plan.lane[i] == lane) {   /* a task on another device than the flow's says which */
                char label[64 + sizeof flow->dev->tag + 8];
                if (flow->tasks[i].dev != flow->dev) snprintf(label, sizeof label, "%s\non %s", flow->tasks[i].name, flow->tasks[i].dev->tag);
                else gf__copy_str(label, sizeof label, flow->tasks[i].name);
                fprintf(f, "    t%d [label=", i);
                gf__dot_string(f, label);
                fputs(flow->tasks[i].cond ? ", shape=diamond];\n" : "];\n", f);
            }
        fputs("  }\n", f);
    }
    for (i = 0; i < flow->count; i++)
        for (k = 0; k < flow->tasks[i].succ_count; k++) {
            int t = flow->tasks[i].succ[k];
            if (flow->tasks[i].cond) fprintf(f, "  t%d -> t%d [style=dotted, label=\"%d\"];\n", i, t, k);   /* the value that picks it */
            else if (plan.lane[t] != plan.lane[i]) fprintf(f, "  t%d -> t%d [style=dashed, label=\"event\"];\n", i, t);
            else fprintf(f, "  t%d -> t%d;\n", i, t);
        }
    fputs("}\n", f);
    gf__plan_free(&plan);
    gf__flow_unlock(flow);
    if (fclose(f) != 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_flow_write_dot: writing '%s' failed", path);
    return GF_OK;
}

/* ---- graphs ------------------------------------------------------------------------- >>graphs */
/* Where the driver has native capture the graph is the driver's; elsewhere the capture records
   the stream's commands and a launch re-issues them, without the per-call validation. Graph
   objects are recycled by their device rather than freed, so a destroyed graph's handle stays
   readable and is refused by its type tag instead of being read after free. */
static int gf__keep_block(gf_graph *g, void *block) {
    if (!gf__grow((void **)&g->blocks, &g->block_cap, g->block_count + 1, sizeof *g->blocks)) return 0;
    g->blocks[g->block_count++] = block;
    return 1;
}
static int gf__graph_own(gf_graph *g, gf_buffer *buf) {
    if (!gf__grow((void **)&g->owned, &g->owned_cap, g->owned_count + 1, sizeof *g->owned)) return 0;
    g->owned[g->owned_count++] = buf;
    buf->graph_owner = g;
    return 1;
}

static gf_graph *gf__graph_new(gf_device *dev, gf_capture_mode mode) {   /* a pending graph */
    gf_graph *g = NULL;
    int i;
    gf__lock(&dev->lock);
    for (i = 0; i < dev->graph_count && !g && !GF__DEBUG_SHELLS; i++)   /* debugging keeps dead shells refused */
        if (dev->graphs[i]->type == GF__T_DEAD) g = dev->graphs[i];
    if (!g && gf__grow((void **)&dev->graphs, &dev->graph_cap, dev->graph_count + 1, sizeof *dev->graphs) &&
        (g = (gf_graph *)gf__malloc(sizeof *g)) != NULL)
        dev->graphs[dev->graph_count++] = g;
    if (g) {
        memset(g, 0, sizeof *g);
        gf__mutex_init(&g->lock);
        g->type = GF__T_PENDING;
        g->dev = dev;
        g->mode = mode;
    }
    gf__unlock(&dev->lock);
    return g;
}

static void gf__cmds_free(gf__cmd *cmds, int count) {
    int i;
    for (i = 0; i < count; i++) if (cmds[i].kind == GF__CMD_LAUNCH) gf__free((void *)cmds[i].as.launch.args);
    gf__free(cmds);
}

/* The body of a graph's holds: obj joins list once, taking a reference (obj->refs) the first
   time; 1, or 0 when out of host memory. */
#define GF__HOLD_ONCE(list, count, cap, obj) \
    do { \
        int i_; \
        for (i_ = 0; i_ < (count); i_++) if ((list)[i_] == (obj)) return 1; \
        if (!gf__grow((void **)&(list), &(cap), (count) + 1, sizeof *(list))) return 0; \
        gf__atomic_add_int(&(obj)->refs, 1); \
        (list)[(count)++] = (obj); \
        return 1; \
    } while (0)
/* g holds a reference to buf (gpuflow's own memory its replays use); 0: out of host memory. */
static int gf__graph_keep(gf_graph *g, gf_buffer *buf) { GF__HOLD_ONCE(g->kept, g->kept_count, g->kept_cap, buf); }
/* g replays child's commands (a graph launched inside g's capture): it keeps what child keeps. */
static int gf__graph_keep_of(gf_graph *g, const gf_graph *child) {
    int i;
    for (i = 0; i < child->kept_count; i++) if (!gf__graph_keep(g, child->kept[i])) return 0;
    return 1;
}
/* g holds buf, a buffer of the program's that its commands use (once): destroyed meanwhile, its
   memory stays until g goes. 0: out of host memory. */
static int gf__graph_hold_buffer(gf_graph *g, gf_buffer *buf) { GF__HOLD_ONCE(g->held, g->held_count, g->held_cap, buf); }
/* g holds mod, whose kernels it launches (once): destroyed meanwhile, its code stays until g goes. */
static int gf__graph_hold_module(gf_graph *g, gf_module *mod) { GF__HOLD_ONCE(g->mods, g->mod_count, g->mod_cap, mod); }
/* g replays what from replays (a child launched inside g's capture, or an update's source): it
   holds what from holds. 0: out of host memory (what it took stays held until g goes). */
static int gf__graph_hold_all_of(gf_graph *g, const gf_graph *from) {
    int i;
    for (i = 0; i < from->held_count; i++) if (!gf__graph_hold_buffer(g, from->held[i])) return 0;
    for (i = 0; i < from->mod_count; i++) if (!gf__graph_hold_module(g, from->mods[i])) return 0;
    return 1;
}
/* Swaps what g and other hold (an update: the target takes what its new commands use). */
static void gf__graph_holds_swap(gf_graph *g, gf_graph *other) {
    gf_buffer **b = g->held; int bn = g->held_count, bc = g->held_cap;
    gf_module **m = g->mods; int mn = g->mod_count, mc = g->mod_cap;
    g->held = other->held; g->held_count = other->held_count; g->held_cap = other->held_cap;
    g->mods = other->mods; g->mod_count = other->mod_count; g->mod_cap = other->mod_cap;
    other->held = b; other->held_count = bn; other->held_cap = bc;
    other->mods = m; other->mod_count = mn; other->mod_cap = mc;
}
/* Lets go of what g holds (the memory and code go once the work queued before now has passed). */
static void gf__graph_holds_drop(gf_graph *g) {
    int i;
    for (i = 0; i < g->held_count; i++) gf__buffer_unref(g->held[i], 1);
    for (i = 0; i < g->mod_count; i++) gf__module_unref(g->mods[i]);
    gf__free(g->held);
    gf__free(g->mods);
    g->held = NULL; g->mods = NULL;
    g->held_count = g->held_cap = g->mod_count = g->mod_cap = 0;
}
/* g holds sems (each once) while it may replay a signal or wait of them; 0: out of host memory. */
static int gf__graph_hold_semaphores_of(gf_graph *g, gf_semaphore *const *sems, int count) {
    int i;
    for (i = 0; i < count; i++) if (!gf__graph_hold_semaphore(g, sems[i])) return 0;
    return 1;
}
/* g holds sem (once) while it may replay a signal or wait of it. */
static int gf__graph_hold_semaphore(gf_graph *g, gf_semaphore *sem) { GF__HOLD_ONCE(g->sems, g->sem_count, g->sem_cap, sem); }

static void gf__graph_release(gf_graph *g) {   /* back to a shell of its device; nothing runs it */
    int i;
    for (i = 0; i < g->cmd_count; i++)   /* its native first part (an emulated graph), before the blocks it refers to */
        if (g->cmds[i].kind == GF__CMD_GRAPH && g->cmds[i].as.child->part_of == g) gf__graph_release(g->cmds[i].as.child);
    for (i = 0; i < g->sem_count; i++) gf__semaphore_unref(g->sems[i]);
    gf__free(g->sems);
    if (g->by_driver && g->dev->be->graph_destroy) g->dev->be->graph_destroy(g);
    gf__cmds_free(g->cmds, g->cmd_count);
    gf__cmds_free(g->launches, g->launch_count);
    gf__free(g->launch_nodes);
    gf__free(g->race_uses);
    if (g->pool) gf__atomic_add_int(&g->pool->graphs, -1);
    for (i = 0; i < g->owned_count; i++) { g->owned[i]->graph_owner = NULL; gf__buffer_free(g->owned[i]); }
    for (i = 0; i < g->kept_count; i++) gf__buffer_unref(g->kept[i], 1);
    gf__graph_holds_drop(g);
    for (i = 0; i < g->block_count; i++) gf__free(g->blocks[i]);
    gf__free(g->kept);
    gf__free(g->owned);
    gf__free(g->blocks);
    gf__mutex_destroy(&g->lock);
    gf__lock(&g->dev->lock);
    g->type = GF__T_DEAD;
    gf__unlock(&g->dev->lock);
}

/* Copies a launch's arguments into one block the recording owns: gf_arg array, then values. */
static gf_arg *gf__args_copy(const gf_arg *args, int count, const char *name, const char **name_copy) {
    size_t bytes = sizeof(gf_arg) * (size_t)count + strlen(name) + 1, at;
    gf_arg *copy;
    unsigned char *values;
    int i;
    for (i = 0; i < count; i++) if (!args[i].buffer) bytes += (args[i].size + 15) & ~(size_t)15;
    if (!(copy = (gf_arg *)gf__malloc(bytes))) return NULL;
    values = (unsigned char *)(copy + count);
    for (i = 0, at = 0; i < count; i++) {
        copy[i] = args[i];
        if (!args[i].buffer) {
            memcpy(values + at, args[i].value, args[i].size);
            copy[i].value = values + at;
            at += (args[i].size + 15) & ~(size_t)15;
        }
    }
    *name_copy = (const char *)memcpy(values + at, name, strlen(name) + 1);
    return copy;
}
/* A command a graph keeps: a copy whose launch arguments (and kernel name) are its own
   block, so the caller's may go. 0: out of host memory (dst then holds nothing to free). */
static int gf__cmd_keep(gf__cmd *dst, const gf__cmd *src) {
    *dst = *src;
    if (src->kind != GF__CMD_LAUNCH) return 1;
    dst->as.launch.args = gf__args_copy(src->as.launch.args, src->as.launch.arg_count, src->as.launch.kernel_name,
                                        &dst->as.launch.kernel_name);
    return dst->as.launch.args != NULL;
}

/* The buffers a command touches are in use by the capture (sync copies into them refused). */
static void gf__capture_use_cmd(gf__capture *cap, const gf__cmd *c) {   /* dev->lock held */
    GF__HELD(&cap->origin->dev->lock);
    int i;
    switch (c->kind) {
    case GF__CMD_COPY: gf__capture_use(cap, c->as.copy.dst); gf__capture_use(cap, c->as.copy.src); break;
    case GF__CMD_COPY_2D: gf__capture_use(cap, c->as.copy_2d.dst); gf__capture_use(cap, c->as.copy_2d.src); break;
    case GF__CMD_FILL: gf__capture_use(cap, c->as.fill.buf); break;
    case GF__CMD_PREFETCH: gf__capture_use(cap, c->as.prefetch.buf); break;
    case GF__CMD_LAUNCH: for (i = 0; i < c->as.launch.arg_count; i++) gf__capture_use(cap, c->as.launch.args[i].buffer); break;
    case GF__CMD_COND: gf__capture_use(cap, c->as.cond.buf); break;
    case GF__CMD_CALLBACK: case GF__CMD_GRAPH: case GF__CMD_SIGNAL: case GF__CMD_SEM_WAIT: break;
    }
}

/* Appends one command to a recording, with copies of its launch arguments. */
static gf_result gf__record(gf__capture *cap, const gf__cmd *c) {   /* dev->lock held */
    GF__HELD(&cap->origin->dev->lock);
    gf_graph *g = cap->graph;
    if (!gf__grow((void **)&g->cmds, &g->cmd_cap, g->cmd_count + 1, sizeof *g->cmds))
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: capture: out of host memory");
    if (!gf__cmd_keep(&g->cmds[g->cmd_count], c)) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: capture: out of host memory");
    g->cmd_count++;
    gf__capture_use_cmd(cap, c);
    if (c->kind == GF__CMD_LAUNCH) g->recorded_launches++;
    if (GF__RACE_ON(g->dev)) gf__race_capture(g, c, c->kind == GF__CMD_LAUNCH ? g->recorded_launches - 1 : -1);
    return GF_OK;
}

/* Work on a natively capturing stream goes to the driver. A native graph also keeps, per
   launch in capture order, a copy of the launch (gf_graph_set_kernel_args checks new arguments
   against it) and the driver's node for it (the backend's captured_node hook). All that can
   fail is made before the launch reaches the driver: a launch the driver captured is noted. */
static gf_result gf__capture_native(gf_stream *s, gf_graph *g, const gf__cmd *c) {
    const gf__backend *be = s->dev->be;
    gf__cmd *kept;
    gf_result r;
    if (c->kind != GF__CMD_LAUNCH) return gf__exec(s, c, g);
    if (!gf__grow((void **)&g->launches, &g->launch_cap, g->launch_count + 1, sizeof *g->launches) ||
        !gf__grow((void **)&g->launch_nodes, &g->launch_node_cap, g->launch_count + 1, sizeof *g->launch_nodes))
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: capture: out of host memory");
    kept = &g->launches[g->launch_count];
    if (!gf__cmd_keep(kept, c)) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: capture: out of host memory");
    if ((r = gf__exec(s, c, g)) != GF_OK) { gf__free((void *)kept->as.launch.args); return r; }
    g->launch_nodes[g->launch_count] = be->captured_node ? be->captured_node(s, c->as.launch.kernel) : NULL;
    g->launch_count++;
    return GF_OK;
}

/* Work enqueued on a capturing stream (s->lock held). The device lock is held throughout, so a
   discard on another thread (a sync of a forked member, say) cannot free the capture under us.
   A recorded graph launched inside a recorded capture is copied in, command by command: the
   parent then owns all it replays, and no graph can come to contain itself. */
static gf_result gf__capture_add(gf_stream *s, const gf__cmd *c) {
    GF__HELD(&s->lock);
    gf__capture *cap;
    gf_result r = GF_OK;
    int i;
    gf__lock(&s->dev->lock);
    if (!(cap = s->capture)) {
        gf__unlock(&s->dev->lock);
        return gf__fail(GF_ERROR_CAPTURE, "gpuflow: the capture of stream '%s' was discarded by another call", s->label);
    }
    if (((c->kind == GF__CMD_SIGNAL || c->kind == GF__CMD_SEM_WAIT) && !gf__graph_hold_semaphore(cap->graph, c->as.sem.sem)) ||
        (c->kind == GF__CMD_LAUNCH && !gf__graph_hold_module(cap->graph, c->as.launch.kernel->mod))) {   /* now: a destroy in the capture waits for the graph */
        gf__unlock(&s->dev->lock);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: capture: out of host memory");
    }
    if (c->kind == GF__CMD_COPY && gf__copy_across(&c->as.copy)) {
        gf__unlock(&s->dev->lock);
        return gf__fail(GF_ERROR_CAPTURE, "gf_copy_buffer_async: a copy between two devices cannot be captured (stream '%s' is capturing)", s->label);
    }
    if (c->kind == GF__CMD_GRAPH) {   /* a graph inside this one: what it signals and waits on, held too */
        gf__lock(&c->as.child->lock);
        for (i = 0; i < c->as.child->sem_count; i++)
            if (!gf__graph_hold_semaphore(cap->graph, c->as.child->sems[i])) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gpuflow: capture: out of host memory");
        gf__unlock(&c->as.child->lock);
        if (r != GF_OK) { gf__unlock(&s->dev->lock); return r; }
    }
    if (c->kind == GF__CMD_GRAPH) {
        gf__lock(&c->as.child->lock);
        if (c->as.child->emulated)
            r = gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_launch: a graph whose loops or branches are emulated (%s) is not launched inside "
                         "another capture; launch it on its own", s->dev->be->name);
        else if (!gf__graph_keep_of(cap->graph, c->as.child) || !gf__graph_hold_all_of(cap->graph, c->as.child))
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_launch: out of host memory");
        gf__unlock(&c->as.child->lock);
        if (r != GF_OK) { gf__unlock(&s->dev->lock); return r; }
    }
    if (cap->by_driver) {
        gf__capture_use_cmd(cap, c);
        r = gf__capture_native(s, cap->graph, c);
        if (r == GF_OK && c->kind == GF__CMD_GRAPH) cap->graph->has_children = 1;
        if (r == GF_OK && GF__RACE_ON(s->dev)) {
            if (c->kind == GF__CMD_GRAPH) gf__lock(&c->as.child->lock);   /* its race_uses, against set_kernel_args */
            gf__race_capture(cap->graph, c, c->kind == GF__CMD_LAUNCH ? cap->graph->launch_count - 1 : -1);
            if (c->kind == GF__CMD_GRAPH) gf__unlock(&c->as.child->lock);
        }
    } else if (c->kind == GF__CMD_GRAPH) {
        gf__lock(&c->as.child->lock);   /* against a gf_graph_update swapping its commands */
        if (c->as.child->owned_count)
            r = gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_launch: a graph that allocated memory in its own capture cannot be launched inside another capture");
        for (i = 0; r == GF_OK && i < c->as.child->cmd_count; i++) r = gf__record(cap, &c->as.child->cmds[i]);
        gf__unlock(&c->as.child->lock);
    } else {
        r = gf__record(cap, c);
    }
    if (r == GF_OK) s->capture_ops++;
    gf__unlock(&s->dev->lock);
    return r;
}

/* Ends c without a graph: members leave it, buffers are released, the driver's capture (if
   any) is ended and thrown away. Keeps this thread's error text. */
static void gf__capture_detach(gf__capture *c) {
    gf_device *dev = c->origin->dev;
    gf__capture **link;
    int i;
    gf__lock(&dev->lock);
    for (i = 0; i < c->member_count; i++) c->members[i]->capture = NULL;
    for (i = 0; i < c->buffer_count; i++) gf__atomic_add_int(&c->buffers[i]->capture_uses, -1);
    for (link = &dev->captures; *link; link = &(*link)->next) if (*link == c) { *link = c->next; break; }
    gf__unlock(&dev->lock);
    gf__free(c->members);
    gf__free(c->buffers);
    gf__free(c->pool_taken);
    gf__free(c);
}

/* Ends capture c and throws it away (its origin's lock held). Returns its graph, which the
   caller releases with gf__discarded_release once it has let go of the stream's lock: the
   release may retire what the graph held last (a module, a buffer), and a retire fences every
   stream of the device, this one too (a stream destroyed mid-capture deadlocked so). */
static gf_graph *gf__capture_discard(gf__capture *c) {
    char why[sizeof gf__error_text];
    gf_graph *g = c->graph;
    int i;
    memcpy(why, gf__error_text, sizeof why);
    for (i = c->open_conds - 1; i >= 0 && c->by_driver; i--)   /* bodies still open: their streams enqueue on their own again */
        if (c->open_cond[i].s->cond_native) c->origin->dev->be->cond_abort(c->open_cond[i].s);
    c->open_conds = 0;
    if (c->by_driver && c->origin->dev->be->capture_end(c->origin, g) == GF_OK) g->by_driver = 1;
    gf__capture_detach(c);
    memcpy(gf__error_text, why, sizeof why);
    return g;
}
/* The release of a discarded capture's graph (no stream lock held); keeps the error text. */
static void gf__discarded_release(gf_graph *g) {
    char why[sizeof gf__error_text];
    if (!g) return;
    memcpy(why, gf__error_text, sizeof why);
    gf__graph_release(g);
    memcpy(gf__error_text, why, sizeof why);
}

static void gf__capture_abandon(gf_stream *s) {
    gf_graph *g = NULL;
    gf__lock(&s->lock);
    if (s->capture) g = gf__capture_discard(s->capture);
    gf__unlock(&s->lock);
    gf__discarded_release(g);
}

/* gf_stream_begin_capture and its _pool form; fn names the one the program called. */
static gf_result gf__stream_begin_capture(const char *fn, gf_stream *s, gf_capture_mode mode, gf_graph_pool *pool) {
    gf__capture *c;
    gf_result r = GF_OK;
    GF__CHECK_IN(fn, s, GF__T_STREAM);
    if (pool) {
        GF__CHECK_IN(fn, pool, GF__T_GRAPH_POOL);
        if (s->dev != pool->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: objects of two different devices used together", fn);
    }
    if (mode < GF_CAPTURE_GLOBAL || mode > GF_CAPTURE_RELAXED)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: mode %d is not a gf_capture_mode", fn, (int)mode);
    if (s == s->dev->sync_stream) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: the device's own stream cannot capture", fn);
    if ((r = GF__LOST_POINT(s->dev, fn)) != GF_OK) return r;
    if (!(c = (gf__capture *)gf__calloc(sizeof *c)) || !(c->graph = gf__graph_new(s->dev, mode))) {
        gf__free(c);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    c->origin = s;
    c->mode = mode;
    c->thread = mode == GF_CAPTURE_RELAXED ? 0 : gf__thread_id();
    c->by_driver = s->dev->be->capture_begin != NULL;
    if (pool) { c->graph->pool = pool; gf__atomic_add_int(&pool->graphs, 1); }   /* released with the graph */
    gf__lock(&s->lock);
    if (s->capture)
        r = gf__fail(GF_ERROR_CAPTURE, "%s: stream '%s' is already %s", fn, s->label,
                     s->capture->origin == s ? "capturing (captures do not nest)" : "part of another stream's capture");
    else if (!gf__grow((void **)&c->members, &c->member_cap, 1, sizeof *c->members))
        r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    else if (c->by_driver)
        r = s->dev->be->capture_begin(s, mode);
    if (r != GF_OK) {
        gf__unlock(&s->lock);
        gf__free(c->members);
        gf__graph_release(c->graph);
        gf__free(c);
        return r;
    }
    c->members[c->member_count++] = s;
    gf__lock(&s->dev->lock);
    c->id = gf__atomic_add(&s->dev->next_id, 1) + 1;
    c->next = s->dev->captures;
    s->dev->captures = c;
    s->capture = c;
    s->capture_ops = s->capture_joined = 0;
    gf__unlock(&s->dev->lock);
    gf__unlock(&s->lock);
    return GF_OK;
}
static gf_result gf__call_stream_begin_capture(gf_stream *s, gf_capture_mode mode) {
    return gf__stream_begin_capture("gf_stream_begin_capture", s, mode, NULL);
}
static gf_result gf__call_stream_begin_capture_pool(gf_stream *s, gf_capture_mode mode, gf_graph_pool *pool) {
    return gf__stream_begin_capture("gf_stream_begin_capture_pool", s, mode, pool);
}

static gf_result gf__call_stream_end_capture(gf_stream *s, gf_graph **out) {
    gf__capture *c;
    gf_graph *g;
    gf_result r = GF_OK;
    int i;
    GF__OUT_NULL(out);
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK_OUT(out);
    gf__lock(&s->lock);
    if (!(c = s->capture)) { gf__unlock(&s->lock); return gf__fail(GF_ERROR_CAPTURE, "gf_stream_end_capture: stream '%s' is not capturing "
                                                                      "(gf_stream_begin_capture starts a capture)", s->label); }
    if (c->origin != s) {
        gf__unlock(&s->lock);
        return gf__fail(GF_ERROR_CAPTURE, "gf_stream_end_capture: stream '%s' joined a capture; end it on the stream that began it", s->label);
    }
    if ((r = gf__capture_thread_check("gf_stream_end_capture", c)) != GF_OK) { gf__unlock(&s->lock); return r; }
    gf__lock(&s->dev->lock);
    for (i = 1; i < c->member_count && r == GF_OK; i++)
        if (c->members[i]->capture_ops != c->members[i]->capture_joined)
            r = gf__fail(GF_ERROR_CAPTURE, "gf_stream_end_capture: stream '%s' forked into the capture and was not joined back; the capture was discarded",
                         c->members[i]->label);
    if (r == GF_OK && c->open_conds)
        r = gf__fail(GF_ERROR_CAPTURE, "gf_stream_end_capture: %s begun on stream '%s' was not ended; the capture was discarded",
                     c->open_cond[c->open_conds - 1].what == GF__COND_WHILE ? "a loop (gf_stream_begin_while)" : "a branch (gf_stream_begin_if)", c->open_cond[c->open_conds - 1].s->label);
    for (i = 0; r == GF_OK && i < c->buffer_count; i++)   /* what the program destroys stays until the graph goes */
        if (!c->buffers[i]->graph_owner && !gf__graph_hold_buffer(c->graph, c->buffers[i]))
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_stream_end_capture: out of host memory; the capture was discarded");

    gf__unlock(&s->dev->lock);
    if (r != GF_OK) {
        g = gf__capture_discard(c);
        gf__unlock(&s->lock);
        gf__discarded_release(g);
        return r;
    }
    g = c->graph;
    if (c->by_driver) r = s->dev->be->capture_end(s, g);
    else g->nodes = g->cmd_count;
    g->by_driver = c->by_driver && r == GF_OK;
    gf__capture_detach(c);
    gf__unlock(&s->lock);
    if (r != GF_OK) { gf__graph_release(g); return r; }
    gf__lock(&s->dev->lock);
    g->type = GF__T_GRAPH;
    gf__unlock(&s->dev->lock);
    *out = g;
    return GF_OK;
}

/* 1 if replaying g waits for its stream: a recorded graph with a loop or branch, or one that
   replays such a graph. */
static int gf__graph_reads_back(const gf_graph *g) {
    int i;
    if (g->by_driver) return 0;
    for (i = 0; i < g->cmd_count; i++)
        if (g->cmds[i].kind == GF__CMD_COND || (g->cmds[i].kind == GF__CMD_GRAPH && gf__graph_reads_back(g->cmds[i].as.child))) return 1;
    return 0;
}
/* A recorded conditional's int, when the stream reaches it: the stream's work so far has
   passed (a 4-byte read back and a wait: what emulating a device-side branch costs). */
/* The int lands in a block of the graph's own (its release waits for the work a launch
   queued), so a copy that outlives a failed wait lands in live memory. s->lock and g->lock held
   (a replay): nothing here may wait for s's lock, as a retire would. */
static gf_result gf__cond_read(gf_graph *g, gf_stream *s, const gf__cmd_cond *c, int32_t *value) {
    gf__copy copy;
    gf_result r;
    if ((r = gf__hidden_wait("gf_graph_launch", s, "a recorded graph's loop or branch condition")) != GF_OK) return r;
    if (!g->landing) {
        int32_t *block = (int32_t *)gf__malloc(sizeof *block);
        if (!block || !gf__keep_block(g, block)) { gf__free(block); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_launch: out of host memory"); }
        g->landing = block;
    }
    memset(&copy, 0, sizeof copy);
    copy.kind = GF__COPY_D2H;
    copy.src = c->buf;
    copy.src_offset = c->offset;
    copy.host = g->landing;
    copy.bytes = sizeof *g->landing;
    if ((r = gf__copy_exec(s, &copy)) != GF_OK || (r = s->dev->be->stream_synchronize(s)) != GF_OK) return r;
    *value = *g->landing;
    return GF_OK;
}
/* A recording runs in order on s; a conditional's begin reads its int and enters the body or
   jumps past its end, a while's end goes back to its begin (which reads again). */
static gf_result gf__graph_replay(gf_graph *g, gf_stream *s) {
    gf_result r = GF_OK;
    int i;
    gf__lock(&g->lock);
    if (g->by_driver) r = s->dev->be->graph_launch(g, s);
    for (i = 0; !g->by_driver && i < g->cmd_count; i++) {   /* every launch checked before any command runs: never half a replay */
        const gf__cmd *c = &g->cmds[i];
        if (c->kind == GF__CMD_LAUNCH && c->as.launch.kernel->param_count && c->as.launch.kernel->param_count != c->as.launch.arg_count) {
            r = gf__fail(GF_ERROR_INVALID_STATE, "gf_graph_launch: kernel '%s' takes %d arguments since its module's reload; the graph "
                         "captured %d: capture it again", c->as.launch.kernel->name, c->as.launch.kernel->param_count, c->as.launch.arg_count);
            break;
        }
    }
    for (i = 0; !g->by_driver && r == GF_OK && i < g->cmd_count; ) {
        const gf__cmd *c = &g->cmds[i];
        int32_t value = 0;
        if (c->kind != GF__CMD_COND) { r = gf__exec(s, c, NULL); i++; }
        else if (c->as.cond.what == GF__COND_END_WHILE) i += c->as.cond.jump;
        else if (c->as.cond.what == GF__COND_END_IF) i++;
        else if ((r = gf__cond_read(g, s, &c->as.cond, &value)) == GF_OK) i += GF__COND_TRUE(c->as.cond.test, value) ? 1 : c->as.cond.jump + 1;
    }
    gf__unlock(&g->lock);
    return r;
}

/* ---- graphs that decide: while and if in a capture ---- */
/* Loops and branches where the driver captures but makes no conditional nodes (HIP, CUDA
   before 12.3): at the first begin the driver's capture ends, what it holds becomes a native
   graph of its own (the capture's first part, replayed as one step and released with the
   graph), and the capture goes on as a recording, whose replay evaluates the conditions as the
   stub's do. Only from the stream that began the capture, every stream that forked into it
   joined back, and no memory allocated in it; else GF_ERROR_NOT_SUPPORTED and the capture goes
   on as it was. A failed end of the driver's capture discards it (*discard). s->lock held. */
#define GF__EMULATED_NO_CHANGE "gf_graph_update and gf_graph_set_kernel_args: a graph whose loops or branches are emulated (no conditional nodes in the driver) is not changed; capture it again"
static gf_result gf__capture_emulate(const char *fn, gf_stream *s, gf__capture *cap, int *discard) {
    GF__HELD(&s->lock);
    gf_graph *part, *g = cap->graph;
    gf__cmd c;
    gf_result r;
    int i;
    if (cap->origin != s)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: the %s backend makes no conditional nodes; gpuflow emulates them from a capture's first loop or "
                        "branch when it begins on the stream that began the capture ('%s', not '%s'); the capture goes on", fn, s->dev->be->name,
                        cap->origin->label, s->label);
    for (i = 1; i < cap->member_count; i++)
        if (cap->members[i]->capture_ops != cap->members[i]->capture_joined)
            return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: the %s backend makes no conditional nodes; gpuflow emulates them once every stream forked "
                            "into the capture has joined back ('%s' has not); the capture goes on", fn, s->dev->be->name, cap->members[i]->label);
    if (g->owned_count || g->pool)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: the %s backend makes no conditional nodes, and a capture that allocated memory cannot switch "
                        "to gpuflow's emulation of them; the capture goes on", fn, s->dev->be->name);
    if (!(part = gf__graph_new(s->dev, g->mode))) return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: out of host memory; the capture goes on", fn);
    if ((r = s->dev->be->capture_end(s, part)) != GF_OK) {   /* the driver's capture is gone with it */
        gf__graph_release(part);
        cap->by_driver = 0;
        *discard = 1;
        return r;
    }
    part->by_driver = 1;
    part->part_of = g;
    part->launches = g->launches; part->launch_count = g->launch_count; part->launch_cap = g->launch_cap;   /* its launches are the part's */
    part->launch_nodes = g->launch_nodes; part->launch_node_cap = g->launch_node_cap;
    part->has_children = g->has_children;
    g->launches = NULL; g->launch_count = g->launch_cap = 0;
    g->launch_nodes = NULL; g->launch_node_cap = 0;
    g->has_children = 0;
    g->emulated = 1;
    cap->by_driver = 0;
    memset(&c, 0, sizeof c);
    c.kind = GF__CMD_GRAPH;
    c.as.child = part;
    gf__lock(&s->dev->lock);
    part->type = GF__T_GRAPH;
    r = gf__record(cap, &c);
    gf__unlock(&s->dev->lock);
    if (r != GF_OK) { gf__graph_release(part); *discard = 1; }
    return r;
}

/* A recorded conditional's begin (dev->lock held). */
static gf_result gf__cond_record(gf__capture *cap, gf_stream *s, int what, gf_buffer *cond, size_t offset, gf__cond_test test) {
    gf__cmd c;
    gf_result r;
    memset(&c, 0, sizeof c);
    c.kind = GF__CMD_COND;
    c.as.cond.what = what; c.as.cond.buf = cond; c.as.cond.offset = offset; c.as.cond.test = test;
    if ((r = gf__record(cap, &c)) != GF_OK) return r;
    cap->open_cond[cap->open_conds].at = cap->graph->cmd_count - 1;
    cap->open_cond[cap->open_conds].s = s;
    cap->open_cond[cap->open_conds].what = what;
    cap->open_conds++;
    s->capture_ops++;
    return GF_OK;
}
static gf_result gf__cond_begin(const char *fn, gf_stream *s, gf_buffer *cond, size_t offset, int what, gf__cond_test test) {
    gf__capture *cap;
    gf_graph *discarded;
    gf_result r = GF_OK;
    int discard = 0;
    if (!s || !gf__is(s, GF__T_STREAM)) return gf__bad_handle(fn, "s", s, GF__T_STREAM);   /* named as the caller's call */
    if (!cond || !gf__is(cond, GF__T_BUFFER)) return gf__bad_handle(fn, "cond", cond, GF__T_BUFFER);
    if ((r = gf__cond_int_check(fn, cond, offset)) != GF_OK) return r;
    if (cond->dev != s->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: the condition's buffer belongs to another device than the stream", fn);
    gf__lock(&s->lock);
    if (!(cap = s->capture)) {
        gf__unlock(&s->lock);
        return gf__fail(GF_ERROR_CAPTURE, "%s: stream '%s' is not capturing: a loop or a branch is part of a graph (gf_stream_begin_capture first)", fn, s->label);
    }
    if (cap->by_driver && !s->dev->be->cond_begin) r = gf__capture_emulate(fn, s, cap, &discard);
    gf__lock(&s->dev->lock);
    if (s->capture != cap) {   /* discarded by another thread (a synchronize of a forked member) meanwhile */
        gf__unlock(&s->dev->lock);
        gf__unlock(&s->lock);
        return gf__fail(GF_ERROR_CAPTURE, "%s: the capture of stream '%s' was discarded by another call", fn, s->label);
    }
    if (r != GF_OK) {}
    else if (cap->open_conds == GF_COND_DEPTH) {
        r = gf__fail(GF_ERROR_CAPTURE, "%s: more than %d loops and branches nested; the capture was discarded", fn, GF_COND_DEPTH);
        discard = 1;
    } else if (cap->by_driver) {   /* the driver's conditional node; its body takes s's work from now on */
        if ((r = s->dev->be->cond_begin(s, what, cond, offset, test)) == GF_OK) {
            cap->open_cond[cap->open_conds].at = -1;
            cap->open_cond[cap->open_conds].s = s;
            cap->open_cond[cap->open_conds].what = what;
            cap->open_conds++;
            gf__capture_use(cap, cond);
        } else if (r == GF_ERROR_NOT_SUPPORTED && !cap->open_conds) {   /* this driver has no conditional nodes (CUDA before 12.3): emulated */
            gf__unlock(&s->dev->lock);
            r = gf__capture_emulate(fn, s, cap, &discard);
            gf__lock(&s->dev->lock);
            if (s->capture != cap) {   /* discarded meanwhile, as above */
                gf__unlock(&s->dev->lock);
                gf__unlock(&s->lock);
                return gf__fail(GF_ERROR_CAPTURE, "%s: the capture of stream '%s' was discarded by another call", fn, s->label);
            }
            if (r == GF_OK) r = gf__cond_record(cap, s, what, cond, offset, test);
        } else discard = r != GF_ERROR_NOT_SUPPORTED;   /* the capture may hold half a node */
    } else {
        r = gf__cond_record(cap, s, what, cond, offset, test);
    }
    gf__unlock(&s->dev->lock);
    discarded = discard ? gf__capture_discard(cap) : NULL;
    gf__unlock(&s->lock);
    gf__discarded_release(discarded);
    return r;
}
static gf_result gf__cond_end(const char *fn, gf_stream *s, int what) {
    static const char *const names[2] = { "while", "if" };
    gf__capture *cap;
    gf_graph *discarded;
    gf__cmd c;
    gf_result r = GF_OK;
    GF__CHECK_IN(fn, s, GF__T_STREAM);
    gf__lock(&s->lock);
    if (!(cap = s->capture)) {
        gf__unlock(&s->lock);
        return gf__fail(GF_ERROR_CAPTURE, "%s: stream '%s' is not capturing (a loop or a branch ends inside the capture that began it)", fn, s->label);
    }
    gf__lock(&s->dev->lock);
    if (!cap->open_conds)
        r = gf__fail(GF_ERROR_CAPTURE, "%s: no %s is open (an end without its begin); the capture was discarded", fn, names[what]);
    else if (cap->open_cond[cap->open_conds - 1].what != what)
        r = gf__fail(GF_ERROR_CAPTURE, "%s: the innermost open conditional is a%s %s; the capture was discarded", fn,
                     what == GF__COND_WHILE ? "n" : "", names[cap->open_cond[cap->open_conds - 1].what]);
    else if (cap->open_cond[cap->open_conds - 1].s != s)
        r = gf__fail(GF_ERROR_CAPTURE, "%s: the %s began on stream '%s', not '%s' (a body ends on its begin's stream); the capture was discarded",
                     fn, names[what], cap->open_cond[cap->open_conds - 1].s->label, s->label);
    else if (cap->by_driver) {
        cap->open_conds--;   /* the backend closed the body, whatever it says */
        r = s->dev->be->cond_end(s);
    } else {
        int begin = cap->open_cond[cap->open_conds - 1].at;
        memset(&c, 0, sizeof c);
        c.kind = GF__CMD_COND;
        c.as.cond.what = what == GF__COND_WHILE ? GF__COND_END_WHILE : GF__COND_END_IF;
        c.as.cond.jump = begin - cap->graph->cmd_count;   /* back to the begin */
        if ((r = gf__record(cap, &c)) == GF_OK) {
            cap->graph->cmds[begin].as.cond.jump = cap->graph->cmd_count - 1 - begin;   /* the begin's way past the body */
            cap->open_conds--;
            s->capture_ops++;
        }
    }
    gf__unlock(&s->dev->lock);
    discarded = r != GF_OK && (r != GF_ERROR_OUT_OF_MEMORY || cap->by_driver) ? gf__capture_discard(cap) : NULL;
    gf__unlock(&s->lock);
    gf__discarded_release(discarded);
    return r;
}

static gf_result gf__call_graph_launch(gf_graph *g, gf_stream *s) {
    gf_graph_pool *pool;
    gf__cmd c;
    gf_result r = GF_OK;
    GF__CHECK(g, GF__T_GRAPH);
    GF__CHECK(s, GF__T_STREAM);
    GF__SAME_DEVICE(g->dev, s->dev);
    if (gf__atomic_load_int(&g->stale_flag))
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_graph_launch: the graph is stale: %s; capture it again (or gf_graph_update it from a new capture)", g->stale);
    if (gf__callback_stream == s && gf__graph_reads_back(g))   /* before any of it runs: never half a replay */
        return gf__refuse_self_wait("gf_graph_launch (a recorded graph that reads its loop or branch conditions back)", s->dev, s);
    c.kind = GF__CMD_GRAPH;
    c.as.child = g;
    gf__atomic_store_int(&g->launched, 1);
    if (!(pool = g->owned_count ? g->pool : NULL)) return gf__submit(s, &c);
    if ((r = GF__FAULT_POINT(s->dev, GF__FK_OP, "graph")) != GF_OK) return r;   /* gf__submit's check, for the pooled path */
    /* graphs sharing a pool's memory run one at a time: after the pool's previous launch
       (locks in the order a pooled allocation takes them: stream, then pool) */
    gf__lock(&s->lock);
    gf__lock(&pool->lock);
    if (s->capture) r = gf__fail(GF_ERROR_CAPTURE, "gf_graph_launch: a graph using a graph pool's memory cannot be launched inside a capture");
    else if (pool->last_recorded) r = gf__wait_locked(s, pool->last);
    if (r == GF_OK) r = gf__exec_counted(s, &c);
    if (r == GF_OK && (r = gf__event_record_locked(pool->last, s)) == GF_OK) pool->last_recorded = 1;
    gf__unlock(&pool->lock);
    gf__unlock(&s->lock);
    return r;
}

/* ---- graph pools: memory shared by the graphs captured into one ----------------- >>graphpools */
static gf_result gf__call_graph_pool_create(gf_device *dev, gf_graph_pool **out) {
    gf_graph_pool *pool;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (!(pool = (gf_graph_pool *)gf__calloc(sizeof *pool))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_pool_create: out of host memory");
    if ((r = gf__event_new(dev, 0, &pool->last)) != GF_OK) { gf__free(pool); return r; }
    pool->type = GF__T_GRAPH_POOL;
    pool->dev = dev;
    gf__mutex_init(&pool->lock);
    gf__live(dev, GF__T_GRAPH_POOL, 1);
    *out = pool;
    return GF_OK;
}

static void gf__call_graph_pool_destroy(gf_graph_pool *pool) {
    int i;
    GF__CHECK_DESTROY(pool, GF__T_GRAPH_POOL);
    if (gf__atomic_load_int(&pool->graphs)) {
        gf__set_error(GF_ERROR_INVALID_STATE, "gf_graph_pool_destroy: %d graph%s captured in the pool %s alive; destroy them first (the pool was kept)",
                 gf__atomic_load_int(&pool->graphs), gf__atomic_load_int(&pool->graphs) == 1 ? "" : "s",
                 gf__atomic_load_int(&pool->graphs) == 1 ? "is" : "are");
        return;
    }
    if (pool->block_count && gf__refuse_self_wait("gf_graph_pool_destroy", pool->dev, NULL) != GF_OK) return;   /* kept: fencing calls the driver */
    for (i = 0; i < pool->block_count; i++) {   /* each block's memory once replays queued before now have passed */
        pool->blocks[i]->type = GF__T_DEAD;
        gf__buffer_unref(pool->blocks[i], 1);
    }
    gf__free(pool->blocks);
    gf__event_free(pool->last);
    gf__mutex_destroy(&pool->lock);
    gf__live(pool->dev, GF__T_GRAPH_POOL, -1);
    gf__obj_free(pool->dev, pool);
}

/* An allocation inside a capture of a pool (s->lock held): a view of the smallest pool block
   this capture has not taken yet that is large enough, or of a new block. The graph owns the
   view; the pool keeps the block. */
static gf_result gf__pool_alloc(gf__capture *cap, size_t bytes, gf_buffer **out) {
    gf_graph_pool *pool = cap->graph->pool;
    gf_result r = GF_OK;
    int i, best = -1;
    gf__lock(&pool->lock);
    for (i = 0; i < pool->block_count; i++) {
        if (i < cap->pool_taken_cap && cap->pool_taken[i]) continue;
        if (pool->blocks[i]->capacity < bytes) continue;
        if (best < 0 || pool->blocks[i]->capacity < pool->blocks[best]->capacity) best = i;
    }
    if (best < 0) {
        gf_buffer *block = NULL;
        if (!gf__grow((void **)&pool->blocks, &pool->block_cap, pool->block_count + 1, sizeof *pool->blocks))
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_create_async: out of host memory");
        else if ((r = gf__buffer_new("gf_buffer_create_async", pool->dev, bytes, GF_MEMORY_DEVICE, &block)) == GF_OK)
            pool->blocks[best = pool->block_count++] = block;
    }
    if (r == GF_OK && best >= cap->pool_taken_cap) {
        int old = cap->pool_taken_cap;
        if (!gf__grow((void **)&cap->pool_taken, &cap->pool_taken_cap, best + 1, 1))
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_create_async: out of host memory");
        else memset(cap->pool_taken + old, 0, (size_t)(cap->pool_taken_cap - old));
    }
    if (r == GF_OK && (r = gf_buffer_view(pool->blocks[best], 0, bytes, out)) == GF_OK) cap->pool_taken[best] = 1;
    gf__unlock(&pool->lock);
    if (r == GF_OK && !gf__graph_own(cap->graph, *out)) {
        gf__buffer_free(*out);
        *out = NULL;
        r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_create_async: out of host memory");
    }
    return r;
}

/* New arguments for the launch_index-th launch of a graph (in capture order), checked against
   the captured launch: same count, and each argument the same kind and size. */
static gf_result gf__call_graph_set_kernel_args(gf_graph *g, int launch_index, const gf_arg *args, int count) {
    gf__cmd *cmd = NULL;
    gf__cmd_launch *launch;
    gf_arg *copy = NULL;   /* set before use; gcc -Og cannot tell */
    const char *name = NULL;   /* the kernel's name, kept in copy */
    gf_result r = GF_OK;
    int i, seen = 0;
    GF__CHECK(g, GF__T_GRAPH);
    if (count < 0 || (count > 0 && !args)) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_set_kernel_args: %d arguments but args is %s", count, args ? "set" : "NULL");
    if (g->emulated) return gf__fail(GF_ERROR_NOT_SUPPORTED, GF__EMULATED_NO_CHANGE);
    gf__lock(&g->lock);
    if (g->by_driver) cmd = launch_index >= 0 && launch_index < g->launch_count ? &g->launches[launch_index] : NULL;
    else for (i = 0; i < g->cmd_count && !cmd; i++)
        if (g->cmds[i].kind == GF__CMD_LAUNCH && seen++ == launch_index) cmd = &g->cmds[i];
    if (!cmd) {
        int launches = g->by_driver ? g->launch_count : seen;
        gf__unlock(&g->lock);
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_graph_set_kernel_args: launch %d is not in the graph (it has %d launch%s)",
                        launch_index, launches, launches == 1 ? "" : "es");
    }
    launch = &cmd->as.launch;
    if (count != launch->arg_count)
        r = gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_set_kernel_args: launch %d of kernel '%s' was captured with %d arguments, not %d",
                     launch_index, launch->kernel_name, launch->arg_count, count);
    for (i = 0; r == GF_OK && i < count; i++) {
        const gf_arg *was = &launch->args[i];
        if (!args[i].buffer != !was->buffer || (!args[i].buffer && (args[i].size != was->size || !args[i].value)))
            r = gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_set_kernel_args: args[%d] must be %s, as captured", i,
                         was->buffer ? "a buffer" : "a value of the captured size");
        else if (args[i].buffer && !gf__is(args[i].buffer, GF__T_BUFFER))
            r = gf__fail(GF_ERROR_INVALID_HANDLE, "gf_graph_set_kernel_args: args[%d].buffer is not a live gf_buffer", i);
        else if (args[i].buffer && args[i].buffer->dev != g->dev)
            r = gf__fail(GF_ERROR_WRONG_DEVICE, "gf_graph_set_kernel_args: args[%d].buffer belongs to another device", i);
    }
    if (r == GF_OK && g->by_driver && !g->dev->be->graph_set_kernel_args)
        r = gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_set_kernel_args: the %s backend cannot change a native graph's launch", g->dev->be->name);
    for (i = 0; r == GF_OK && i < count; i++)   /* held as the captured ones are (a refusal below leaves an extra hold: harmless) */
        if (args[i].buffer && !gf__graph_hold_buffer(g, args[i].buffer)) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_set_kernel_args: out of host memory");
    if (r == GF_OK && !(copy = gf__args_copy(args, count, launch->kernel_name, &name))) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_set_kernel_args: out of host memory");
    if (r == GF_OK && g->by_driver && (r = g->dev->be->graph_set_kernel_args(g, launch_index, launch->kernel, copy, count)) != GF_OK)
        gf__free(copy);
    if (r == GF_OK) {
        gf__free((void *)launch->args);
        launch->args = copy;
        launch->kernel_name = name;
        if (g->race_use_count) gf__race_retarget(g, launch_index, cmd);
    }
    gf__unlock(&g->lock);
    return r;
}

static int gf__same_shape(const gf__cmd *a, int a_count, const gf__cmd *b, int b_count) {
    int i;
    if (a_count != b_count) return 0;
    for (i = 0; i < a_count; i++) {
        const gf__cmd *x = &a[i], *y = &b[i];
        if (x->kind != y->kind) return 0;
        if (x->kind == GF__CMD_COPY && x->as.copy.kind != y->as.copy.kind) return 0;
        if (x->kind == GF__CMD_FILL && x->as.fill.width != y->as.fill.width) return 0;
        if (x->kind == GF__CMD_LAUNCH && (x->as.launch.kernel != y->as.launch.kernel || x->as.launch.arg_count != y->as.launch.arg_count)) return 0;
        if (x->kind == GF__CMD_COND && (x->as.cond.what != y->as.cond.what || x->as.cond.jump != y->as.cond.jump ||
                                        x->as.cond.test.value != y->as.cond.test.value || x->as.cond.test.equal != y->as.cond.test.equal)) return 0;
    }
    return 1;
}

/* Copies of from's commands, or NULL (out of memory). */
static gf__cmd *gf__cmds_copy(const gf_graph *from) {
    gf__cmd *cmds = (gf__cmd *)gf__malloc(sizeof *cmds * (size_t)(from->cmd_count + 1));
    int i;
    if (!cmds) return NULL;
    for (i = 0; i < from->cmd_count; i++)
        if (!gf__cmd_keep(&cmds[i], &from->cmds[i])) { gf__cmds_free(cmds, i); return NULL; }
    return cmds;
}

/* Copies of the first count of a native graph's launches (their arguments included), or NULL. */
static gf__cmd *gf__launches_copy(const gf_graph *from, int count) {
    gf__cmd *cmds;
    int i;
    if (count <= 0 || !(cmds = (gf__cmd *)gf__malloc(sizeof *cmds * (size_t)count))) return NULL;
    for (i = 0; i < count; i++)
        if (!gf__cmd_keep(&cmds[i], &from->launches[i])) { gf__cmds_free(cmds, i); return NULL; }
    return cmds;
}

/* Each graph is read or changed under its own lock: a replay (or a capture copying it in)
   never sees a half-swapped command list. A native update holds both, in address order, so
   update(a, b) racing update(b, a) cannot deadlock. */
#define GF__KEPT_NO_UPDATE "gf_graph_update: a captured flow with condition tasks keeps its own memory for them and is not updated (capture it again); target unchanged"
static gf_result gf__call_graph_update(gf_graph *target, gf_graph *from) {
    gf__cmd *cmds = NULL;
    gf__race_use *race_uses = NULL;
    gf_result r = GF_OK;
    int count = 0, from_owns, race_count = 0, sem_count = 0;
    gf_semaphore **sems = NULL;       /* recordings: from's semaphores, held while the locks change hands */
    gf_graph carry;                   /* from's buffers and modules, held while the locks change hands; after a
                                         success the target's old ones (its held and mods alone) */
    memset(&carry, 0, sizeof carry);
    GF__CHECK(target, GF__T_GRAPH);
    GF__CHECK(from, GF__T_GRAPH);
    GF__SAME_DEVICE(target->dev, from->dev);
    if (target == from) return GF_OK;
    if (target->emulated || from->emulated) return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s; target unchanged", GF__EMULATED_NO_CHANGE);
    if (target->by_driver != from->by_driver)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_update: one graph is native and the other recorded; target unchanged");
    if (target->by_driver) {
        gf_graph *first = target < from ? target : from, *second = target < from ? from : target;
        int launches;
        gf__lock(&first->lock);
        gf__lock(&second->lock);
        launches = from->launch_count;   /* both graphs hold still from here on */
        if (target->owned_count || from->owned_count)   /* as in CUDA: memory nodes do not update */
            r = gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_update: a graph that allocated memory in its capture cannot be updated; target unchanged");
        else if (target->kept_count || from->kept_count)
            r = gf__fail(GF_ERROR_NOT_SUPPORTED, GF__KEPT_NO_UPDATE);
        else if (target->launch_count != launches)
            r = gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_update: the graphs differ in shape (%d and %d launches); target unchanged",
                         target->launch_count, launches);
        else if ((cmds = gf__launches_copy(from, launches)) == NULL && launches)
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
        else if (!gf__graph_hold_semaphores_of(target, from->sems, from->sem_count) ||   /* the exec replays from's from now on */
                 !gf__graph_hold_all_of(&carry, from))
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
        else if ((r = target->dev->be->graph_update(target, from)) == GF_OK) {
            gf__graph_holds_swap(target, &carry);   /* from's buffers and modules; its own old ones go below */
            /* the exec now runs from's arguments: what gf_graph_set_kernel_args checks follows */
            gf__cmds_free(target->launches, launches);
            target->launches = cmds;
            target->launch_count = target->launch_cap = launches;
            cmds = NULL;
            gf__race_take(target, from);
            gf__atomic_store_int(&target->stale_flag, 0);   /* its launches are from's now */
        }
        if (cmds) gf__cmds_free(cmds, launches);
        gf__unlock(&second->lock);
        gf__unlock(&first->lock);
        gf__graph_holds_drop(&carry);
        return r;
    }
    gf__lock(&from->lock);
    from_owns = from->owned_count;
    if (from->kept_count) r = gf__fail(GF_ERROR_NOT_SUPPORTED, GF__KEPT_NO_UPDATE);
    if (from->sem_count && (sems = (gf_semaphore **)gf__malloc(sizeof *sems * (size_t)from->sem_count)) != NULL) {
        for (sem_count = 0; sem_count < from->sem_count; sem_count++) {   /* held across the unlocked gap */
            sems[sem_count] = from->sems[sem_count];
            gf__atomic_add_int(&sems[sem_count]->refs, 1);
        }
    } else if (from->sem_count) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
    if (r == GF_OK && !gf__graph_hold_all_of(&carry, from)) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
    if (!from_owns && !(cmds = gf__cmds_copy(from))) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
    count = from->cmd_count;
    if (r == GF_OK && from->race_use_count && (race_uses = (gf__race_use *)gf__malloc(sizeof *race_uses * (size_t)from->race_use_count)) != NULL) {
        memcpy(race_uses, from->race_uses, sizeof *race_uses * (size_t)from->race_use_count);
        race_count = from->race_use_count;
    }
    gf__unlock(&from->lock);
    if (r == GF_OK) {   /* else only the copies go (below) */
        gf__lock(&target->lock);
        if (target->owned_count || from_owns)
            r = gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_graph_update: a graph that allocated memory in its capture cannot be updated; target unchanged");
        else if (target->kept_count)
            r = gf__fail(GF_ERROR_NOT_SUPPORTED, GF__KEPT_NO_UPDATE);
        else if (!gf__same_shape(target->cmds, target->cmd_count, cmds, count))
            r = gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_update: the graphs differ in shape (%d and %d nodes, or other kinds); target unchanged",
                         target->cmd_count, count);
        else if (!gf__graph_hold_semaphores_of(target, sems, sem_count))
            r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_graph_update: out of host memory");
        else {
            gf__cmd *old = target->cmds;
            gf__graph_holds_swap(target, &carry);   /* from's buffers and modules; its own old ones go below */
            int old_count = target->cmd_count;
            gf__atomic_store_int(&target->stale_flag, 0);
            target->cmds = cmds;
            target->cmd_count = count;
            target->cmd_cap = count + 1;
            cmds = old;
            count = old_count;
            gf__free(target->race_uses);   /* from's accesses, copied with its commands */
            target->race_uses = race_uses;
            target->race_use_count = target->race_use_cap = race_count;
            race_uses = NULL;
        }
        gf__unlock(&target->lock);
    }
    if (cmds) gf__cmds_free(cmds, count);   /* the old list, or the unused copy */
    gf__free(race_uses);
    while (sem_count > 0) gf__semaphore_unref(sems[--sem_count]);
    gf__free(sems);
    gf__graph_holds_drop(&carry);
    return r;
}

/* gf_graph_capture and gf_graph_capture_desc; fn names the one the user called. */
static gf_result gf__graph_capture(const char *fn, gf_stream *s, const gf_capture_desc *desc, gf_capture_fn capture, void *user, gf_graph **out) {
    char what[96];
    gf_result r;
    int i, warmup_runs;
    GF__OUT_NULL(out);
    GF__CHECK_IN(fn, s, GF__T_STREAM);
    if (!out) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    warmup_runs = desc->warmup_runs;
    if (!capture) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: fn is NULL", fn);
    if (warmup_runs < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: warmup_runs %d is negative", fn, warmup_runs);
    /* everything checked before the warm-up runs: a refusal changes nothing */
    if (desc->mode < GF_CAPTURE_GLOBAL || desc->mode > GF_CAPTURE_RELAXED)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: mode %d is not a gf_capture_mode", fn, (int)desc->mode);
    if (desc->pool) {
        GF__CHECK_IN(fn, desc->pool, GF__T_GRAPH_POOL);
        if (desc->pool->dev != s->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: objects of two different devices used together", fn);
    }
    if (gf__stream_capturing(s))   /* the warm-up would run into that capture, and its synchronize discard it */
        return gf__fail(GF_ERROR_CAPTURE, "%s: stream '%s' is capturing already; end that capture first", fn, s->label);
    if (warmup_runs && (r = gf__refuse_self_wait(fn, s->dev, s)) != GF_OK) return r;   /* before any run: its wait could not end */
    snprintf(what, sizeof what, "%s: the capture function (warm-up run)", fn);
    for (i = 0; i < warmup_runs; i++) {
        unsigned serial = gf__error_serial;
        if ((r = capture(s, user)) != GF_OK) return gf__fail_user(r, serial, what);
    }
    if (warmup_runs && (r = gf__hidden_wait(fn, s, "its warm-up runs have run")) != GF_OK) return r;
    if (warmup_runs) {
        gf__faults_inside++;
        r = gf_stream_synchronize(s);
        gf__faults_inside--;
        if (r != GF_OK) return r;
    }
    if ((r = gf_stream_begin_capture_pool(s, desc->mode, desc->pool)) != GF_OK) return r;
    {
        unsigned serial = gf__error_serial;
        if ((r = capture(s, user)) != GF_OK) {
            snprintf(what, sizeof what, "%s: the capture function", fn);
            r = gf__fail_user(r, serial, what);
            gf__recorded_capture_abandon(s);
            return r;
        }
    }
    return gf_stream_end_capture(s, out);
}
GPUFLOW_IMPL gf_result gf_graph_capture(gf_stream *s, int warmup_runs, gf_capture_fn fn, void *user, gf_graph **out) {
    gf_capture_desc d;
    memset(&d, 0, sizeof d);
    d.warmup_runs = warmup_runs;
    return gf__graph_capture(__func__, s, &d, fn, user, out);
}
GPUFLOW_IMPL gf_result gf_graph_capture_desc(gf_stream *s, const gf_capture_desc *desc, gf_capture_fn fn, void *user, gf_graph **out) {
    gf_capture_desc defaults;
    memset(&defaults, 0, sizeof defaults);   /* NULL: every field's default, as everywhere */
    return gf__graph_capture(__func__, s, desc ? desc : &defaults, fn, user, out);
}

/* Graphviz of a graph: the driver's own description where it has one (CUDA), else the
   recording: one node per command, in replay order. */
GPUFLOW_IMPL gf_result gf_graph_write_dot(gf_graph *g, const char *path) {
    static const char *copy_names[3] = { "copy to device", "copy to host", "copy buffer" };
    gf_result r = GF_OK;
    FILE *f;
    int i;
    GF__CHECK(g, GF__T_GRAPH);
    if (!path || !*path) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_write_dot: path is %s", path ? "empty" : "NULL");
    gf__lock(&g->lock);
    if (g->by_driver && g->dev->be->graph_write_dot && (r = g->dev->be->graph_write_dot(g, path)) != GF_ERROR_NOT_SUPPORTED) {
        gf__unlock(&g->lock);
        return r;
    }
    if (!(f = gf__fopen(path, "w"))) { gf__unlock(&g->lock); return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_write_dot: cannot open '%s' for writing", path); }
    fprintf(f, "digraph gpuflow_graph {\n  node [shape=box, style=rounded];\n  label=\"%s graph, %d node%s\";\n",
            g->by_driver ? "native" : "recorded", g->by_driver ? g->launch_count : g->cmd_count,
            (g->by_driver ? g->launch_count : g->cmd_count) == 1 ? "" : "s");
    for (i = 0; i < (g->by_driver ? g->launch_count : g->cmd_count); i++) {
        const gf__cmd *c = g->by_driver ? &g->launches[i] : &g->cmds[i];
        char label[160];
        switch (c->kind) {
        case GF__CMD_COPY: snprintf(label, sizeof label, "%s\\n%llu bytes", copy_names[c->as.copy.kind], (unsigned long long)c->as.copy.bytes); break;
        case GF__CMD_COPY_2D: snprintf(label, sizeof label, "2D copy\\n%llu x %llu", (unsigned long long)c->as.copy_2d.width, (unsigned long long)c->as.copy_2d.height); break;
        case GF__CMD_FILL: snprintf(label, sizeof label, "fill\\n%llu bytes", (unsigned long long)c->as.fill.bytes); break;
        case GF__CMD_PREFETCH: snprintf(label, sizeof label, "prefetch"); break;
        case GF__CMD_LAUNCH: snprintf(label, sizeof label, "launch %s\\n%d args", c->as.launch.kernel_name, c->as.launch.arg_count); break;
        case GF__CMD_CALLBACK: snprintf(label, sizeof label, "host callback"); break;
        case GF__CMD_GRAPH: snprintf(label, sizeof label, "graph"); break;
        case GF__CMD_SIGNAL: snprintf(label, sizeof label, "signal %s\\nto %llu", c->as.sem.sem->label, (unsigned long long)c->as.sem.value); break;
        case GF__CMD_SEM_WAIT: snprintf(label, sizeof label, "wait %s\\nfor %llu", c->as.sem.sem->label, (unsigned long long)c->as.sem.value); break;
        case GF__CMD_COND:
            if (c->as.cond.what <= GF__COND_IF)
                snprintf(label, sizeof label, "%s int at byte %llu\\nof a %llu-byte buffer %s %d", c->as.cond.what == GF__COND_WHILE ? "while" : "if",
                         (unsigned long long)c->as.cond.offset, (unsigned long long)c->as.cond.buf->size, c->as.cond.test.equal ? "==" : "!=",
                         (int)c->as.cond.test.value);
            else snprintf(label, sizeof label, "end %s", c->as.cond.what == GF__COND_END_WHILE ? "while" : "if");
            break;
        }
        fprintf(f, "  n%d [label=\"%s\"%s];\n", i, label, c->kind == GF__CMD_COND ? ", shape=diamond" : "");
        if (i) fprintf(f, "  n%d -> n%d;\n", i - 1, i);
        if (!g->by_driver && c->kind == GF__CMD_COND) {   /* a while's loop back, and a skipped body */
            if (c->as.cond.what == GF__COND_END_WHILE) fprintf(f, "  n%d -> n%d [label=\"again\", style=dashed];\n", i, i + c->as.cond.jump);
            if (c->as.cond.what <= GF__COND_IF) fprintf(f, "  n%d -> n%d [label=\"else\", style=dashed];\n", i, i + c->as.cond.jump);
        }
    }
    fputs("}\n", f);
    gf__unlock(&g->lock);
    if (fclose(f) != 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_graph_write_dot: writing '%s' failed", path);
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_graph_get_info(gf_graph *g, gf_graph_info *out) {
    GF__CHECK(g, GF__T_GRAPH);
    GF__CHECK_OUT(out);
    out->nodes = g->nodes;
    out->native = g->by_driver;
    out->mode = g->mode;
    gf__lock(&g->lock);
    if (g->by_driver) out->launches = g->launch_count;
    else {   /* an emulated graph's native first part counts its own */
        int i;
        for (out->launches = 0, i = 0; i < g->cmd_count; i++)
            out->launches += g->cmds[i].kind == GF__CMD_LAUNCH ? 1 : g->cmds[i].kind == GF__CMD_GRAPH && g->cmds[i].as.child->part_of == g ? g->cmds[i].as.child->launch_count : 0;
    }
    gf__unlock(&g->lock);
    return GF_OK;
}

/* The callback contexts a destroyed graph's replays may still run, freed once they have passed. */
typedef struct gf__blocks { void **blocks; int count; } gf__blocks;
static void gf__blocks_release(void *p) {
    gf__blocks *b = (gf__blocks *)p;
    int i;
    for (i = 0; i < b->count; i++) gf__free(b->blocks[i]);
    gf__free(b->blocks);
    gf__free(b);
}
/* Never waits: replays launched before the destroy may still use the memory and callback
   contexts the graph owns, so those are retired (see "deferred releases"); the rest goes now. */
static void gf__call_graph_destroy(gf_graph *g) {
    int i;
    GF__CHECK_DESTROY(g, GF__T_GRAPH);
    if (gf__atomic_load_int(&g->launched) && (g->owned_count || g->block_count)) {
        gf__blocks *b = NULL;
        if (gf__refuse_self_wait("gf_graph_destroy", g->dev, NULL) != GF_OK) return;   /* kept: fencing calls the driver */
        if (g->block_count && !(b = (gf__blocks *)gf__calloc(sizeof *b))) {
            if (gf__settle_for_destroy(g->dev, "gf_graph_destroy", "graph") != GF_OK) return;   /* no room to defer: wait */
        } else {
            for (i = 0; i < g->owned_count; i++) { g->owned[i]->graph_owner = NULL; gf__buffer_handle_gone(g->owned[i]); gf__buffer_unref(g->owned[i], 1); }
            g->owned_count = 0;
            if (b) {
                b->blocks = g->blocks; b->count = g->block_count;
                g->blocks = NULL; g->block_count = g->block_cap = 0;
                gf__retire(g->dev, gf__blocks_release, b, GF_MEMORY_KIND_COUNT, 0, 0);
            }
        }
    }
    gf__graph_release(g);
}

/* ---- kernels from one source: preludes, run-time compiles, the disk cache ---------- >>dialect */
/* What the dialect's words mean to a device compiler, one prelude per kernel language; a
   backend names its own in its table (kernel_prelude). The C++ one serves NVRTC and hiprtc
   (the same CUDA-style builtins), the OpenCL C one clBuildProgram. */
/* The stub's GF_ATOMIC_INT32_ONLY, for the device compilers (a float atomic compiled on CUDA and
   summed bits as an integer on the stub). */
#define GF__ATOMIC_INT32_ONLY_TEXT "#define GF_ATOMIC_INT32_ONLY(p) ((void)sizeof(char[sizeof(*(p)) == 4 ? 1 : -1]), (void)sizeof((0 ? *(p) : 0) % 1))\n"
static const char gf__kernel_prelude_cxx[] GF__UNUSED_DECL =
    "#define GF_KERNELS(...) __VA_ARGS__\n"   /* a .gfk file read as it is (gf_module_desc.source_path) */
    "#define GF_PARAM(type, name) type name\n"
    "#define GF_GLOBAL\n"
    "#define GF_DEVICE __device__ static\n"
    "#define GF_SHARED __shared__\n"
    "#define GF_KERNEL(name, ...) extern \"C\" __global__ void name(__VA_ARGS__)\n"
    "#define GF_KERNEL0(name) extern \"C\" __global__ void name(void)\n"
    "#define GF_BLOCK_KERNEL GF_KERNEL\n"
    "#define GF_BLOCK_KERNEL0 GF_KERNEL0\n"
    "#define GF_EACH_THREAD for (int gf__once = 1; gf__once; __syncthreads(), gf__once = 0)\n"   /* every thread runs the region, then the block meets */
    "__device__ static __forceinline__ unsigned gf__dim(int d, unsigned x, unsigned y, unsigned z) { return d == 0 ? x : d == 1 ? y : z; }\n"
    "#define gf_local_id(d) gf__dim((d), threadIdx.x, threadIdx.y, threadIdx.z)\n"
    "#define gf_group_id(d) gf__dim((d), blockIdx.x, blockIdx.y, blockIdx.z)\n"
    "#define gf_local_size(d) gf__dim((d), blockDim.x, blockDim.y, blockDim.z)\n"
    "#define gf_num_groups(d) gf__dim((d), gridDim.x, gridDim.y, gridDim.z)\n"
    "#define gf_global_id(d) (gf_group_id(d) * gf_local_size(d) + gf_local_id(d))\n"
    "#define gf_global_size(d) (gf_num_groups(d) * gf_local_size(d))\n"
    "#define gf_block_sync() __syncthreads()\n"
    GF__ATOMIC_INT32_ONLY_TEXT
    "#define gf_atomic_add(p, v) (GF_ATOMIC_INT32_ONLY(p), atomicAdd((p), (v)))\n"
    "#define gf_atomic_min(p, v) (GF_ATOMIC_INT32_ONLY(p), atomicMin((p), (v)))\n"
    "#define gf_atomic_max(p, v) (GF_ATOMIC_INT32_ONLY(p), atomicMax((p), (v)))\n"
    "#define gf_atomic_xchg(p, v) (GF_ATOMIC_INT32_ONLY(p), atomicExch((p), (v)))\n"
    "#define gf_atomic_cas(p, e, d) (GF_ATOMIC_INT32_ONLY(p), atomicCAS((p), (e), (d)))\n";
static const char gf__kernel_prelude_clc[] GF__UNUSED_DECL =
    "#define GF_KERNELS(...) __VA_ARGS__\n"   /* a .gfk file read as it is (gf_module_desc.source_path) */
    "#define GF_PARAM(type, name) type name\n"
    "#define GF_GLOBAL __global\n"
    "#define GF_DEVICE\n"
    "#define GF_SHARED __local\n"
    "#define GF_KERNEL(name, ...) __kernel void name(__VA_ARGS__)\n"
    "#define GF_KERNEL0(name) __kernel void name(void)\n"
    "#define GF_BLOCK_KERNEL GF_KERNEL\n"
    "#define GF_BLOCK_KERNEL0 GF_KERNEL0\n"
    "#define GF_EACH_THREAD for (int gf__once = 1; gf__once; barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE), gf__once = 0)\n"
    "#define gf_global_id(d) ((unsigned)get_global_id(d))\n"
    "#define gf_local_id(d) ((unsigned)get_local_id(d))\n"
    "#define gf_group_id(d) ((unsigned)get_group_id(d))\n"
    "#define gf_local_size(d) ((unsigned)get_local_size(d))\n"
    "#define gf_num_groups(d) ((unsigned)get_num_groups(d))\n"
    "#define gf_global_size(d) ((unsigned)get_global_size(d))\n"
    "#define gf_block_sync() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)\n"
    GF__ATOMIC_INT32_ONLY_TEXT
    "#define gf_atomic_add(p, v) (GF_ATOMIC_INT32_ONLY(p), atomic_add((p), (v)))\n"
    "#define gf_atomic_min(p, v) (GF_ATOMIC_INT32_ONLY(p), atomic_min((p), (v)))\n"
    "#define gf_atomic_max(p, v) (GF_ATOMIC_INT32_ONLY(p), atomic_max((p), (v)))\n"
    "#define gf_atomic_xchg(p, v) (GF_ATOMIC_INT32_ONLY(p), atomic_xchg((p), (v)))\n"
    "#define gf_atomic_cas(p, e, d) (GF_ATOMIC_INT32_ONLY(p), atomic_cmpxchg((p), (e), (d)))\n"
    /* C's float functions take a float: an int argument is converted, a double rounded first (the
       overloads alone refused an int as ambiguous and computed a double in double) */
    "#define sqrtf(x) sqrt((float)(x))\n#define rsqrtf(x) rsqrt((float)(x))\n#define expf(x) exp((float)(x))\n"
    "#define logf(x) log((float)(x))\n#define powf(x, y) pow((float)(x), (float)(y))\n#define sinf(x) sin((float)(x))\n"
    "#define cosf(x) cos((float)(x))\n#define tanhf(x) tanh((float)(x))\n#define fabsf(x) fabs((float)(x))\n"
    "#define fminf(x, y) fmin((float)(x), (float)(y))\n#define fmaxf(x, y) fmax((float)(x), (float)(y))\n"
    "#define floorf(x) floor((float)(x))\n#define ceilf(x) ceil((float)(x))\n";


/* The disk cache: one file per compiled module, named by a 128-bit key over everything the
   binary depends on. A name is only a hint: the file repeats the whole identity (prelude and
   source as compiled, build options, the compiler's id: device, compiler and driver versions)
   and a checksum, and an entry is used only when every byte of the identity matches. An entry
   that is there but does not match is named in a warning and rebuilt.
   On disk it is treated as a security-conscious tool would: the directory must be a directory
   owned by this user (or root, for a cache installed read-only) that no one else can write
   (one that is missing is made, 0700); an entry is opened without following a symlink and
   used only if it is a regular file; a new entry is written to a file of its own (exclusive
   create, 0600) in the same directory and renamed over the old name, so a reader never sees
   half an entry. Any failure of the file system costs a compile, never the load. */
typedef struct gf__cache_header {
    char magic[8];
    uint64_t key[2];
    uint32_t backend, identity_size;/* whose compiler made it (gf_backend); the identity's bytes
                                       follow the header, then the binary */
    uint64_t size, sum;             /* the binary's size; checksum of identity, binary, backend */
} gf__cache_header;
#define GF__CACHE_MAGIC "gpuflow3"
static uint64_t gf__hash(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
    return h;
}

/* What an entry is for, byte for byte: "<text>\0<options>\0<compiler id>\0", and its key. */
typedef struct gf__cache_identity { char *bytes; size_t size; uint64_t key[2]; } gf__cache_identity;
static gf_result gf__cache_identity_make(gf__cache_identity *id, const char *text, const char *options, const char *compiler) {
    size_t t = strlen(text) + 1, o = strlen(options ? options : "") + 1, c = strlen(compiler) + 1;
    if (t + o + c > 0xffffffffu) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_module_load: the source is larger than 4 GiB");
    if (!(id->bytes = (char *)gf__malloc(t + o + c))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_module_load: out of host memory");
    memcpy(id->bytes, text, t);
    memcpy(id->bytes + t, options ? options : "", o);
    memcpy(id->bytes + t + o, compiler, c);
    id->size = t + o + c;
    id->key[0] = gf__hash(1469598103934665603u, id->bytes, id->size);
    id->key[1] = gf__hash(gf__hash(0x84222325cbf29ce4u, compiler, c), id->bytes, t + o);   /* another order: another function */
    return GF_OK;
}

/* The entry's path, allocated to fit: a long directory (PATH_MAX is 4096 on Linux) is never
   cut short, which would put the entry somewhere else. NULL: out of host memory. */
static char *gf__cache_path(const char *dir, const uint64_t key[2]) {
    size_t n = strlen(dir) + 64;
    char *path = (char *)gf__malloc(n);
    if (path) snprintf(path, n, "%s/gpuflow-%016llx%016llx.bin", dir, (unsigned long long)key[0], (unsigned long long)key[1]);
    return path;
}

/* The cache directory, made if missing; 0 (with a warning) when it must not be used. */
static int gf__cache_dir_usable(const char *dir) {
    gf__stat_t st;
    if (gf__stat(dir, &st) != 0) {
        if (!gf__mkdir_parents(dir) || gf__stat(dir, &st) != 0) {
            gf__notice(GF_LOG_WARNING, "gf_module_load: the kernel cache directory '%s' does not exist and cannot be made: kernels are compiled without it", dir);
            return 0;
        }
        gf__notice(GF_LOG_INFO, "gf_module_load: made the kernel cache directory '%s'", dir);
    }
    if (!S_ISDIR(st.st_mode)) {
        gf__notice(GF_LOG_WARNING, "gf_module_load: the kernel cache '%s' is not a directory: kernels are compiled without it", dir);
        return 0;
    }
#if !defined(_WIN32)
    if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        gf__notice(GF_LOG_WARNING, "gf_module_load: the kernel cache directory '%s' is %s: kernels are compiled without it "
                   "(a cache must be yours and writable by you alone: chmod 700 it)", dir,
                   st.st_uid != geteuid() && st.st_uid != 0 ? "owned by another user" : "writable by other users");
        return 0;
    }
#endif
    return 1;
}

/* One read or write's share: Windows' take an int's worth at most. */
static size_t gf__io_chunk(size_t n) { return n < ((size_t)1 << 30) ? n : (size_t)1 << 30; }
/* Every byte, or 0 (errno set; EIO for an early end); a signal's EINTR is retried. */
static int gf__fd_read_all(int fd, void *data, size_t n) {
    size_t at = 0;
    while (at < n) {
        long got = GF__FAULT("read") ? (errno = EIO, -1) : (long)gf__fd_read(fd, (char *)data + at, gf__io_chunk(n - at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) { if (!got) errno = EIO; return 0; }
        at += (size_t)got;
    }
    return 1;
}

/* GF_OK with the binary; GF_ERROR_NOT_FOUND for a miss, and for an entry that is not the one
   asked for (named in a warning: it is then rebuilt over). */
static gf_result gf__cache_read(const char *path, const gf__cache_identity *id, gf_backend backend, void **binary, size_t *size) {
    gf__cache_header h;
    gf__stat_t st;
    char *data = NULL;
    const char *why = NULL;
    int fd = GF__FAULT("open") ? (errno = EIO, -1) : gf__fd_open(path, GF__O_CACHE_READ, 0);
    if (fd < 0) {
        if (errno != ENOENT) gf__notice(GF_LOG_WARNING, "gf_module_load: kernel cache entry '%s' cannot be opened (%s); rebuilding it", path,
                                        errno == ELOOP ? "a symbolic link" : strerror(errno));
        return GF_ERROR_NOT_FOUND;
    }
    /* The sizes must be what the file holds before anything is allocated for them: forged ones
       would otherwise allocate gigabytes for a file of a few bytes. */
    if (gf__fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) why = "not a regular file";
#if !defined(_WIN32)
    else if (st.st_uid != geteuid() && st.st_uid != 0) why = "owned by another user";
#endif
    else if ((uint64_t)st.st_size < sizeof h || !gf__fd_read_all(fd, &h, sizeof h)) why = "truncated";
    else if (memcmp(h.magic, GF__CACHE_MAGIC, 8)) why = "not a gpuflow kernel cache entry";
    else if (h.backend != (uint32_t)backend) why = "made by another backend's compiler";
    else if (h.key[0] != id->key[0] || h.key[1] != id->key[1] || h.identity_size != id->size)
        why = "made for other source, options, device or compiler";
    else if (h.size == 0 || (uint64_t)st.st_size - sizeof h < h.identity_size ||   /* else the difference below wraps */
             h.size != (uint64_t)st.st_size - sizeof h - h.identity_size) why = "truncated";
    else if (!(data = (char *)gf__malloc(id->size + (size_t)h.size))) why = "too large for the host memory left";
    else if (!gf__fd_read_all(fd, data, id->size + (size_t)h.size)) why = "unreadable";
    else if (memcmp(data, id->bytes, id->size)) why = "made for other source, options, device or compiler";
    else if (gf__hash(gf__hash(1469598103934665603u, data, id->size + (size_t)h.size), &h.backend, sizeof h.backend) != h.sum)
        why = "corrupt (its checksum does not match)";
    if (!why) (void)gf__fd_touch(fd, path);   /* used now: gf__cache_dir_trim removes the least recently used first */
    gf__fd_close(fd);
    if (why) {
        gf__notice(GF_LOG_WARNING, "gf_module_load: kernel cache entry '%s' is %s; rebuilding it", path, why);
        gf__free(data);
        return GF_ERROR_NOT_FOUND;
    }
    memmove(data, data + id->size, (size_t)h.size);   /* the caller gets the binary alone */
    *binary = data;
    *size = (size_t)h.size;
    return GF_OK;
}

/* As gf__fd_read_all. faultable: faults on demand may fail it ("write"); the recorder's writes
   are not, so that recording changes no fault count. */
static int gf__fd_write_all(int fd, const void *data, size_t n, int faultable) {
    size_t at = 0;
    while (at < n) {
        long put = faultable && GF__FAULT("write") ? (errno = EIO, -1) : (long)gf__fd_write(fd, (const char *)data + at, gf__io_chunk(n - at));
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) { if (!put) errno = EIO; return 0; }
        at += (size_t)put;
    }
    return 1;
}
static void gf__cache_write(const char *path, const gf__cache_identity *id, gf_backend backend, const void *binary, size_t size) {
    static int serial;   /* with the pid: a temporary name no other writer picks */
    gf__cache_header h;
    size_t n = strlen(path) + 64;
    char *tmp = (char *)gf__malloc(n);
    int fd, ok;
    if (!tmp) { gf__notice(GF_LOG_WARNING, "gf_module_load: out of host memory: '%s' is not cached", path); return; }
    memset(&h, 0, sizeof h);
    memcpy(h.magic, GF__CACHE_MAGIC, 8);
    h.key[0] = id->key[0]; h.key[1] = id->key[1];
    h.backend = (uint32_t)backend;
    h.identity_size = (uint32_t)id->size;
    h.size = size;
    h.sum = gf__hash(gf__hash(gf__hash(1469598103934665603u, id->bytes, id->size), binary, size), &h.backend, sizeof h.backend);
    snprintf(tmp, n, "%s.%lu.%d.tmp", path, gf__getpid(), gf__atomic_add_int(&serial, 1));
    fd = GF__FAULT("open") ? (errno = EIO, -1) : gf__fd_open(tmp, GF__O_CACHE_NEW, 0600);
    if (fd < 0) {
        gf__notice(GF_LOG_WARNING, "gf_module_load: cannot write the kernel cache entry '%s' (%s)", tmp, strerror(errno));
        gf__free(tmp);
        return;
    }
    ok = gf__fd_write_all(fd, &h, sizeof h, 1) && gf__fd_write_all(fd, id->bytes, id->size, 1) && gf__fd_write_all(fd, binary, size, 1);
    ok = gf__fd_close(fd) == 0 && ok;
    if (!ok || GF__FAULT("rename") || gf__rename_over(tmp, path) != 0) {
        gf__remove(tmp);
        gf__notice(GF_LOG_WARNING, "gf_module_load: cannot write the kernel cache entry '%s'", path);
    }
    gf__free(tmp);
}

/* A kernel cache directory over its limit (GPUFLOW_CACHE_LIMIT, bytes of entries): the least
   recently used entries go (a hit touches its entry), never keep (the one just written); so do
   the temporary files of writers that died (older than GF__CACHE_TMP_STALE_S). Run after each
   write, so a cold compile pays for it. A file that cannot be removed (a read-only cache) stays. */
typedef struct gf__cache_file { char name[64]; uint64_t bytes; int64_t age; } gf__cache_file;
typedef struct gf__cache_files { gf__cache_file *at; int count, cap, failed; } gf__cache_files;
/* 1: an entry, gpuflow-<32 hex digits>.bin; 2: a writer's temporary file (entry.pid.n.tmp); 0: neither */
static int gf__cache_file_kind(const char *name) {
    size_t n = strlen(name), i;
    if (n < 44 || strncmp(name, "gpuflow-", 8) || strncmp(name + 40, ".bin", 4)) return 0;
    for (i = 8; i < 40; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    return n == 44 ? 1 : n > 48 && !strcmp(name + n - 4, ".tmp") ? 2 : 0;
}
static void gf__cache_file_add(void *user, const char *name, uint64_t bytes, int64_t age) {
    gf__cache_files *l = (gf__cache_files *)user;
    if (strlen(name) >= sizeof l->at->name || !gf__cache_file_kind(name)) return;
    if (!gf__grow((void **)&l->at, &l->cap, l->count + 1, sizeof *l->at)) { l->failed = 1; return; }
    gf__copy_str(l->at[l->count].name, sizeof l->at->name, name);
    l->at[l->count].bytes = bytes;
    l->at[l->count++].age = age;
}
/* Oldest first. A time more than a minute ahead of now (a clock set wrong, a restored copy) is
   not believed: such an entry counts as the oldest, or it would outlive every other for good. */
static int64_t gf__cache_file_age(const gf__cache_file *f) { return f->age < -60 ? INT64_MAX : f->age; }
static int gf__cache_file_older(const void *a, const void *b) {
    int64_t x = gf__cache_file_age((const gf__cache_file *)a), y = gf__cache_file_age((const gf__cache_file *)b);
    return x > y ? -1 : x < y;
}
static void gf__cache_dir_trim(const char *dir, const char *keep) {
    static int warned;   /* a value not understood is said once, not at every write */
    uint64_t limit = gf__env_bytes("GPUFLOW_CACHE_LIMIT", GF__DEFAULT_CACHE_LIMIT, &warned), total = 0, freed = 0;
    const char *kept = strrchr(keep, '/') ? strrchr(keep, '/') + 1 : keep;   /* gf__cache_path's dir/name */
    size_t n = strlen(dir) + sizeof ((gf__cache_file *)0)->name + 2;
    char *path = (char *)gf__malloc(n);
    gf__cache_files l;
    int i, removed = 0;
    memset(&l, 0, sizeof l);
    if (path && !gf__dir_each(dir, "gpuflow-", gf__cache_file_add, &l))
        gf__notice(GF_LOG_INFO, "gf_module_load: the kernel cache '%s' cannot be listed (%s): it is not trimmed", dir, strerror(errno));
    if (!path || l.failed || !l.count) { gf__free(path); gf__free(l.at); return; }
    for (i = 0; i < l.count; i++) if (gf__cache_file_kind(l.at[i].name) == 1) total += l.at[i].bytes;
    if (l.count > 1) qsort(l.at, (size_t)l.count, sizeof *l.at, gf__cache_file_older);
    for (i = 0; i < l.count; i++) {
        int entry = gf__cache_file_kind(l.at[i].name) == 1;
        if (entry ? total <= limit || !strcmp(l.at[i].name, kept) : gf__cache_file_age(&l.at[i]) < GF__CACHE_TMP_STALE_S) continue;
        snprintf(path, n, "%s/%s", dir, l.at[i].name);
        if (GF__FAULT("remove") || gf__remove(path) != 0) {
            if (errno != ENOENT || !entry) continue;
            total -= l.at[i].bytes;   /* another process's trim took it: gone all the same (else each trimmer went its whole share further) */
            continue;
        }
        if (!entry) continue;
        total -= l.at[i].bytes; freed += l.at[i].bytes; removed++;
    }
    if (removed)
        gf__notice(GF_LOG_INFO, "gf_module_load: the kernel cache '%s' was over its limit of %llu bytes (GPUFLOW_CACHE_LIMIT): "
                   "its %d least recently used entries (%llu bytes) were removed", dir, (unsigned long long)limit, removed, (unsigned long long)freed);
    gf__free(path);
    gf__free(l.at);
}

/* The text a device compiler gets: the prelude, then the source under #line. Stringified, a
   kernel file is one line, so every error would be reported on line 1: before each GF_KERNEL
   a #line gives the line it stands on in the user's file (the C form's GF_STUB_KERNEL table
   knows it), or else names the kernel. Returns the length; writes only when out is set. */
static int gf__ident_char(char c) {   /* C's, without <ctype.h>'s locale */
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
static size_t gf__dialect_text(char *out, size_t cap, const char *prelude, const char *name, const gf_module_desc *desc) {
    const char *src = desc->source, *p, *from = src;
    size_t n = 0;
    gf__text t;
    char scratch[1];
    int i, j, lines_known = 1, one_line = !strchr(src, '\n');   /* once: not at every word found */
    /* gcc gives every kernel the line of GF_KERNELS when that is an object-like macro
       (#define GF_KERNELS GF_KERNELS_AS_C): lines shared by two kernels are not trusted */
    for (i = 0; i < desc->stub_kernel_count && lines_known; i++)
        for (j = 0; j < i; j++)
            if (desc->stub_kernels[i].line && desc->stub_kernels[i].line == desc->stub_kernels[j].line) lines_known = 0;
    t.p = out ? out : scratch; t.cap = out ? cap : 1; t.used = 0;
    if (strpbrk(name, "\"\\\n")) {   /* no name a #line could carry */
        gf__say(&t, "%s\n%s", prelude, src);
        return strlen(prelude) + 1 + strlen(src);
    }
    n += (size_t)snprintf(NULL, 0, "%s\n#line 1 \"%s\"\n", prelude, name);
    gf__say(&t, "%s\n#line 1 \"%s\"\n", prelude, name);
    for (p = one_line ? src : NULL; p && (p = strstr(p, "KERNEL")) != NULL; p += 6) {   /* GF_KERNEL, GF_BLOCK_KERNEL */
        const char *q = p + 6, *word, *id;
        char kernel[128];
        int line = 0, len;
        if (p - src >= 9 && !strncmp(p - 9, "GF_BLOCK_", 9)) word = p - 9;
        else if (p - src >= 3 && !strncmp(p - 3, "GF_", 3)) word = p - 3;
        else continue;
        if (word > src && gf__ident_char(word[-1])) continue;
        if (*q == '0') q++;
        while (*q == ' ') q++;
        if (*q++ != '(') continue;
        while (*q == ' ') q++;
        for (id = q; gf__ident_char(*q); q++) {}
        if (q == id || (size_t)(q - id) >= sizeof kernel) continue;
        memcpy(kernel, id, (size_t)(q - id));
        kernel[q - id] = 0;
        for (i = 0; lines_known && i < desc->stub_kernel_count; i++)
            if (desc->stub_kernels[i].name && !strcmp(desc->stub_kernels[i].name, kernel)) line = desc->stub_kernels[i].line;
        /* said straight into the text, as long as the name is (a mark of fixed size cut a long
           name's #line short, and the kernel after it went into the directive) */
        if (line > 0) {
            len = snprintf(NULL, 0, "\n#line %d \"%s\"\n", line, name);
            gf__say(&t, "%.*s\n#line %d \"%s\"\n", (int)(word - from), from, line, name);
        } else {
            len = snprintf(NULL, 0, "\n#line 1 \"%s, kernel %s\"\n", name, kernel);
            gf__say(&t, "%.*s\n#line 1 \"%s, kernel %s\"\n", (int)(word - from), from, name, kernel);
        }
        n += (size_t)(word - from) + (size_t)len;
        from = word;
    }
    gf__say(&t, "%s", from);
    return n + strlen(from);
}

/* Line `line` of text as its own #line directives number it: "file:N", or 0 if none covers it. */
static int gf__say_text_line(gf__text *t, const char *text, unsigned long line) {
    unsigned long at = 1, base = 0, directive_at = 0;
    char file[256] = "";
    const char *p = text;
    while (at < line) {
        if (!strncmp(p, "#line ", 6)) {
            char *end;
            const char *q;
            size_t n;
            base = strtoul(p + 6, &end, 10);
            if ((q = strchr(end, '"')) != NULL && (n = strcspn(q + 1, "\"\n")) < sizeof file) { memcpy(file, q + 1, n); file[n] = 0; }
            directive_at = at;
        }
        if (!(p = strchr(p, '\n'))) return 0;
        p++, at++;
    }
    if (!file[0] || !directive_at) return 0;
    gf__say(t, "%s:%lu", file, base + (line - directive_at - 1));
    return 1;
}
/* Where a build log longer than fits (a message's share) is read from: its first error's line
   when warnings come before it (compilers list diagnostics in the source's order, so a kernel
   with a page of warnings ahead of its error showed warnings alone). */
static const char *gf__build_log_start(const char *log, size_t fits) GF__UNUSED_DECL;
static const char *gf__build_log_start(const char *log, size_t fits) {
    const char *e = strstr(log, "error");
    if (!e || strlen(log) < fits || (size_t)(e - log) < fits / 2) return log;
    while (e > log && e[-1] != '\n') e--;
    return e;
}
/* A compiler that ignores #line (NVIDIA's OpenCL reports "<kernel>:38:80: error") gets its
   line numbers mapped through the text's own directives, as they would have been read. A
   backend helper: unused in a build without OpenCL. */
static void gf__build_log_lines(const char *text, const char *log, char *out, size_t cap) GF__UNUSED_DECL;
static void gf__build_log_lines(const char *text, const char *log, char *out, size_t cap) {
    static const char mark[] = "<kernel>:";
    const char *p = log, *q;
    gf__text t;
    t.p = out; t.cap = cap; t.used = 0;
    out[0] = 0;
    while ((q = strstr(p, mark)) != NULL) {
        char *end;
        unsigned long line = strtoul(q + sizeof mark - 1, &end, 10);
        gf__say(&t, "%.*s", (int)(q - p), p);
        if (end != q + sizeof mark - 1 && *end == ':' && gf__say_text_line(&t, text, line)) p = end;
        else { gf__say(&t, "%s", mark); p = q + sizeof mark - 1; }
    }
    gf__say(&t, "%s", p);
}

/* A module from dialect source, on a backend with a compiler: its prelude and the source
   compiled for this device (through the disk cache when one is named), then loaded as the
   binary the compiler made. */
static gf_result gf__module_load_source(gf_module *mod, const gf_module_desc *desc) {
    gf_device *dev = mod->dev;
    const gf__backend *be = dev->be;
    const char *name = desc->source_name ? desc->source_name : "kernels";
    char *env_dir = desc->cache_dir ? NULL : gf__env_path("GPUFLOW_CACHE_DIR");
    const char *dir = desc->cache_dir ? desc->cache_dir : env_dir;
    size_t n = gf__dialect_text(NULL, 0, be->kernel_prelude, name, desc) + 1;
    char *text = (char *)gf__malloc(n), *path = NULL;
    gf__cache_identity id = { NULL, 0, { 0, 0 } };
    gf_result r = GF_OK;
    int attempt;
    if (!text) { gf__free(env_dir); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_module_load: out of host memory"); }
    gf__dialect_text(text, n, be->kernel_prelude, name, desc);
    if (dir && *dir && gf__cache_dir_usable(dir)) {
        char compiler[512] = "";
        if (be->compiler_id) be->compiler_id(dev, compiler, sizeof compiler);
        if (!compiler[0])
            gf__notice(GF_LOG_WARNING, "gf_module_load: the %s driver did not say its versions, which a cached binary must match: '%s' is compiled without the cache", be->name, name);
        else if ((r = gf__cache_identity_make(&id, text, desc->build_options, compiler)) != GF_OK) { gf__free(text); gf__free(env_dir); return r; }
        else if (!(path = gf__cache_path(dir, id.key))) {
            gf__free(text); gf__free(id.bytes); gf__free(env_dir);
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_module_load: out of host memory");
        }
    }
    /* At most two attempts: the cached binary, then (if the driver refuses it) a fresh compile
       that does not read the cache again, whether or not the bad entry could be removed. */
    for (attempt = 0; attempt < 2; attempt++) {
        void *binary = NULL;
        size_t size = 0;
        int cached = attempt == 0 && path && gf__cache_read(path, &id, be->kind, &binary, &size) == GF_OK;
        if (!cached && (r = be->compile(dev, name, text, desc->build_options, &binary, &size)) != GF_OK) break;
        if (cached) gf__notice(GF_LOG_INFO, "gf_module_load: '%s' from the kernel cache (%s)", name, path);
        else if (path) { gf__cache_write(path, &id, be->kind, binary, size); gf__cache_dir_trim(dir, path); }
        r = be->module_load_compiled(mod, binary, size);
        gf__free(binary);
        if (r == GF_OK || !cached) break;
        if (GF__FAULT("remove") || gf__remove(path) != 0)   /* a read-only cache shipped with an application */
            gf__notice(GF_LOG_WARNING, "gf_module_load: the cached '%s' did not load and cannot be removed (%s); compiling it afresh", name, path);
        else
            gf__notice(GF_LOG_WARNING, "gf_module_load: the cached '%s' did not load; rebuilding it", name);
    }
    gf__free(text);
    gf__free(path);
    gf__free(id.bytes);
    gf__free(env_dir);
    return r;
}

/* ---- kernels ----------------------------------------------------------------------- >>kernels */
/* ---- modules from a file, and hot reload ---- */
static void gf__module_origin_free(gf_module *mod) {
    gf__free(mod->path); gf__free(mod->options); gf__free(mod->source_name); gf__free(mod->cache_dir);
    mod->path = mod->options = mod->source_name = mod->cache_dir = NULL;
}
/* A file's modification time (in nanoseconds where the platform keeps them: two saves of the
   same length within a second were one to a poll of whole seconds) and size (0: it cannot be
   read). Windows: _stat keeps seconds, its file times 100 ns, read through the file's handle. */
static int gf__file_version_of(const char *path, gf__file_version *v) {   /* 0: no such file */
    gf__stat_t st;
    if (gf__stat(path, &st) != 0) return 0;
    memset(v, 0, sizeof *v);
    v->size = (long long)st.st_size;
#if defined(_WIN32)
    {
        wchar_t *w = gf__path_wide(path);
        HANDLE h = w ? CreateFileW(w, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL)
                     : INVALID_HANDLE_VALUE;
        BY_HANDLE_FILE_INFORMATION info;
        gf__free(w);
        v->mtime = (long long)st.st_mtime * 1000000000;
        if (h != INVALID_HANDLE_VALUE) {   /* 100 ns write and creation times, the file's index on its volume */
            if (GetFileInformationByHandle(h, &info)) {
                v->mtime = (long long)(((uint64_t)info.ftLastWriteTime.dwHighDateTime << 32) | info.ftLastWriteTime.dwLowDateTime);
                v->ctime = (long long)(((uint64_t)info.ftCreationTime.dwHighDateTime << 32) | info.ftCreationTime.dwLowDateTime);
                v->ino = ((uint64_t)info.nFileIndexHigh << 32) | info.nFileIndexLow;
                v->dev = info.dwVolumeSerialNumber;
            }
            CloseHandle(h);
        }
    }
#else
#  if defined(__APPLE__)
    v->mtime = (long long)st.st_mtimespec.tv_sec * 1000000000 + st.st_mtimespec.tv_nsec;
    v->ctime = (long long)st.st_ctimespec.tv_sec * 1000000000 + st.st_ctimespec.tv_nsec;
#  else
    v->mtime = (long long)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    v->ctime = (long long)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
#  endif
    v->ino = (uint64_t)st.st_ino;
    v->dev = (uint64_t)st.st_dev;
#endif
    return 1;
}
static int gf__file_version_same(const gf__file_version *a, const gf__file_version *b) {
    return a->mtime == b->mtime && a->ctime == b->ctime && a->size == b->size && a->ino == b->ino && a->dev == b->dev;
}
/* path opened to be read whole, *size its length; NULL unless it is a regular file that opens
   (a directory's length reads as LONG_MAX, and opening a FIFO waits for a writer). */
static FILE *gf__open_whole(const char *path, size_t *size) {
    gf__stat_t st;
    FILE *f;
    if (gf__stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size >= (uint64_t)(SIZE_MAX / 2)) return NULL;
    if (!(f = gf__fopen(path, "rb"))) return NULL;
    *size = (size_t)st.st_size;
    return f;
}
/* The whole text of path, NUL-terminated, in *out (the caller frees it). */
static gf_result gf__file_text(const char *fn, const char *path, char **out) {
    size_t n = 0;
    FILE *f = gf__open_whole(path, &n);
    char *text;
    *out = NULL;
    if (!f) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: cannot open source_path '%s' (a regular file it can read)", fn, path);
    if (!(text = (char *)gf__malloc(n + 1))) { fclose(f); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn); }
    if (fread(text, 1, n, f) != n) {
        fclose(f);
        gf__free(text);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: cannot read source_path '%s'", fn, path);
    }
    fclose(f);
    text[n] = 0;
    *out = text;
    return GF_OK;
}
/* The module's code from desc, into mod (new): dialect source to the device's compiler (read
   from source_path when source is NULL), else the backend's own forms; the stub runs
   stub_kernels, its C form. What a reload needs of desc is kept in mod. */
static gf_result gf__module_build(gf_module *mod, const gf_module_desc *desc) {
    gf_module_desc d = *desc;
    gf_device *dev = mod->dev;
    char *text = NULL;
    gf_result r;
    if (desc->source_path && !desc->source) {
        if (!gf__file_version_of(desc->source_path, &mod->path_version))
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_module_load: cannot read source_path '%s'", desc->source_path);
        if ((r = gf__file_text("gf_module_load", desc->source_path, &text)) != GF_OK) return r;
        d.source = text;
        if (!d.source_name) d.source_name = desc->source_path;
    }
    r = d.source && dev->be->compile ? gf__module_load_source(mod, &d) : dev->be->module_load(mod, &d);
    gf__free(text);
    if (r != GF_OK) return r;
    if (desc->source_path && !desc->source &&
        (!(mod->path = gf__strdup(desc->source_path)) || (desc->build_options && !(mod->options = gf__strdup(desc->build_options))) ||
         (desc->source_name && !(mod->source_name = gf__strdup(desc->source_name))) || (desc->cache_dir && !(mod->cache_dir = gf__strdup(desc->cache_dir))))) {
        dev->be->module_unload(mod);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_module_load: out of host memory");
    }
    mod->given_stub = desc->stub_kernels;
    mod->given_stub_count = desc->stub_kernel_count;
    return GF_OK;
}

static gf_result gf__call_module_load(gf_device *dev, const gf_module_desc *desc, gf_module **out) {
    gf_module *mod;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    GF__CHECK_OUT(desc);
    if (desc->stub_kernel_count < 0 || (desc->stub_kernel_count > 0 && !desc->stub_kernels))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_module_load: stub_kernels and stub_kernel_count disagree");
    if (!(mod = (gf_module *)gf__calloc(sizeof *mod))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_module_load: out of host memory");
    mod->type = GF__T_MODULE;
    mod->refs = 1;
    mod->dev = dev;
    mod->id = gf__atomic_add(&dev->next_id, 1) + 1;
    gf__mutex_init(&mod->lock);
    gf__mutex_init(&mod->reload_lock);
    if ((r = gf__module_build(mod, desc)) != GF_OK) {
        gf__module_origin_free(mod);
        gf__mutex_destroy(&mod->lock);
        gf__mutex_destroy(&mod->reload_lock);
        gf__free(mod);
        return r;
    }
    gf__live(dev, GF__T_MODULE, 1);
    *out = mod;
    return GF_OK;
}

/* Which parameters are pointers, read once from the types as written. */
static uint32_t gf__buffer_params(const gf_stub_param *params, int count) {
    uint32_t mask = 0;
    int i;
    for (i = 0; params && i < count && i < 32; i++)
        if (params[i].type && strchr(params[i].type, '*')) mask |= (uint32_t)1 << i;
    return mask;
}
/* A device backend's kernel takes its parameter list from the module's stub_kernels entry of
   the same name, where the program gave one, so that launches are checked against it on every
   backend (the stub's kernel_get sets its own). Not after a reload from the module's file:
   the program's table describes the code it was built with, and the file may have changed. */
static void gf__kernel_params_given(gf_kernel *k, const gf_stub_kernel *given, int count) {
    int i;
    for (i = 0; given && i < count; i++)
        if (given[i].name && !strcmp(given[i].name, k->name)) {
            k->param_count = given[i].param_count;
            k->params = given[i].params;
            k->buffer_params = gf__buffer_params(k->params, k->param_count);
            return;
        }
}
static gf_result gf__call_kernel_get(gf_module *mod, const char *name, gf_kernel **out) {
    gf_kernel *k;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(mod, GF__T_MODULE);
    GF__CHECK_OUT(out);
    if (!name || !*name) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_kernel_get: name is empty");
    if (strlen(name) >= sizeof k->name) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_kernel_get: name is too long");
    gf__lock(&mod->lock);
    for (k = mod->kernels; k; k = k->next)
        if (!strcmp(k->name, name)) { gf__unlock(&mod->lock); *out = k; return GF_OK; }
    if (!(k = (gf_kernel *)gf__calloc(sizeof *k))) { gf__unlock(&mod->lock); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_kernel_get: out of host memory"); }
    k->type = GF__T_KERNEL;
    k->mod = mod;
    gf__copy_str(k->name, sizeof k->name, name);
    gf__mutex_init(&k->lock);
    if ((r = mod->dev->be->kernel_get(k)) != GF_OK) {
        if (r == GF_ERROR_NOT_FOUND) r = gf__fail(r, "gf_kernel_get: the module has no kernel named '%s' (%s)", name, gf__error_text);
        gf__unlock(&mod->lock);
        gf__mutex_destroy(&k->lock);
        gf__free(k);
        return r;
    }
    if (!k->params && !mod->given_stale) gf__kernel_params_given(k, mod->given_stub, mod->given_stub_count);
    k->next = mod->kernels;
    mod->kernels = k;
    gf__unlock(&mod->lock);
    *out = k;
    return GF_OK;
}

/* Native graphs with launches of mod's kernels follow a reload: each such launch gets the
   kernel's new code through the backend's argument update (its function is read from the
   kernel); a graph whose backend cannot, whose driver refuses, or whose kernel's parameters
   changed is marked stale, and holds old (the module that now has the old code), which then
   goes with the last such graph. 1: every graph followed or holds old; 0: out of host memory
   for a hold. The graphs are listed under dev->lock, then updated one at a time under their
   own lock (the program does not destroy graphs of the device meanwhile: gf_module_reload's rule). */
static GF__TLS int gf__following_reload;   /* graph_set_kernel_args: the launch takes its kernel's code now (a reload) */
static int gf__graphs_follow_reload(gf_module *mod, const int *changed_params, gf_module *old) {
    gf_device *dev = mod->dev;
    gf_graph **list = NULL;
    int n = 0, i, j, all, held = 1;
    gf__lock(&dev->lock);
    if (dev->graph_count && (list = (gf_graph **)gf__malloc(sizeof *list * (size_t)dev->graph_count)) != NULL)
        for (i = 0; i < dev->graph_count; i++)
            if (dev->graphs[i]->type == GF__T_GRAPH && dev->graphs[i]->by_driver) list[n++] = dev->graphs[i];
    gf__unlock(&dev->lock);
    if (dev->graph_count && !list) return 0;   /* out of host memory: assume none followed */
    for (i = 0; i < n; i++) {
        gf_graph *g = list[i];
        gf__lock(&g->lock);
        all = 1;
        if (g->has_children) {   /* graphs launched inside its capture: their nodes are copies gpuflow cannot reach */
            snprintf(g->stale, sizeof g->stale, "it holds graphs launched inside its capture, which a module's reload cannot reach");
            gf__atomic_store_int(&g->stale_flag, 1);
            all = 0;
        }
        for (j = 0; j < g->launch_count && !g->has_children; j++) {
            gf__cmd_launch *l = &g->launches[j].as.launch;
            gf_kernel *k;
            int ki = 0, changed;
            gf_result r;
            if (l->module_id != mod->id) continue;   /* only then is l->kernel known alive: it is mod's */
            for (k = mod->kernels; k && k != l->kernel; k = k->next) ki++;
            changed = k && changed_params && changed_params[ki];   /* NULL: the module had no kernels to change */
            r = GF_ERROR_NOT_SUPPORTED;
            if (g->dev->be->graph_set_kernel_args && !changed) {
                gf__following_reload = 1;
                r = g->dev->be->graph_set_kernel_args(g, j, l->kernel, l->args, l->arg_count);
                gf__following_reload = 0;
            }
            if (r != GF_OK) {
                gf__text t;
                t.p = g->stale; t.cap = sizeof g->stale; t.used = 0;
                gf__say(&t, "its launch %d of kernel '%s' could not follow the module's reload%s%s", j, l->kernel->name,
                        changed ? " (its parameters changed)" : ": ", changed ? "" : gf__error_text);
                gf__atomic_store_int(&g->stale_flag, 1);
                all = 0;
                break;
            }
        }
        if (!all && !gf__graph_hold_module(g, old)) held = 0;   /* it runs the old code on */
        gf__unlock(&g->lock);
    }
    gf__free(list);
    return held;
}

/* Swaps what the backend made for k with what it made for t (the same kernel, other code). */
static void gf__kernel_swap_code(gf_kernel *k, gf_kernel *t) {
    gf_kernel tmp = *k;
    k->native = t->native; k->stub_fn = t->stub_fn; k->stub_threads = t->stub_threads; k->stub_per_block = t->stub_per_block;
    k->param_count = t->param_count; k->params = t->params; k->buffer_params = t->buffer_params;
    k->static_shared = t->static_shared;
    t->native = tmp.native; t->stub_fn = tmp.stub_fn; t->stub_threads = tmp.stub_threads; t->stub_per_block = tmp.stub_per_block;
    t->param_count = tmp.param_count; t->params = tmp.params; t->buffer_params = tmp.buffer_params;
    t->static_shared = tmp.static_shared;
}

/* What a reload with no desc reloads from: the module's file, with the options it was loaded with. */
static void gf__module_file_desc(const gf_module *mod, gf_module_desc *d) {
    memset(d, 0, sizeof *d);
    d->source_path = mod->path; d->build_options = mod->options; d->source_name = mod->source_name;
    d->cache_dir = mod->cache_dir; d->stub_kernels = mod->given_stub; d->stub_kernel_count = mod->given_stub_count;
}
static gf_result gf__module_reload_locked(gf_module *mod, const gf_module_desc *desc);
static gf_result gf__call_module_reload(gf_module *mod, const gf_module_desc *desc) {
    gf_result r;
    GF__CHECK(mod, GF__T_MODULE);
    gf__lock(&mod->reload_lock);
    r = gf__module_reload_locked(mod, desc);
    gf__unlock(&mod->reload_lock);
    return r;
}
static gf_result gf__module_reload_locked(gf_module *mod, const gf_module_desc *desc) {
    gf_module_desc d;
    gf_module *fresh = NULL;
    gf_kernel *k, **found = NULL;
    int count = 0, i, *changed = NULL, old_held;
    gf_result r;
    if (desc) d = *desc;
    else {
        if (!mod->path) return gf__fail(GF_ERROR_INVALID_STATE, "gf_module_reload: the module was not loaded from a file "
                                        "(gf_module_desc.source_path): give the new code in a desc");
        gf__module_file_desc(mod, &d);
        if (mod->dev->be->compile) { d.stub_kernels = NULL; d.stub_kernel_count = 0; }   /* describes the program's code, not the file's */
    }
    if (!mod->dev->be->compile && d.stub_kernels == mod->given_stub && d.stub_kernel_count == mod->given_stub_count)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_module_reload: the stub runs the C form compiled into the program, which a file "
                        "cannot change: give a desc with the new stub_kernels (from a library the program reloaded, say)");
    if (!desc) {   /* seen now, built or not (a poll reads the version under the module's lock) */
        gf__file_version seen;
        if (gf__file_version_of(mod->path, &seen)) {
            gf__lock(&mod->lock);
            mod->path_version = seen;
            mod->path_gone = 0;
            gf__unlock(&mod->lock);
        }
    }
    if ((r = gf_module_load(mod->dev, &d, &fresh)) != GF_OK)   /* the log is in the message; the old code runs on */
        return gf__fail(r, "gf_module_reload: the new code did not load; the old code runs on: %s", gf__error_text);
    gf__lock(&mod->lock);
    for (k = mod->kernels; k; k = k->next) count++;
    if (count && (!(found = (gf_kernel **)gf__calloc(sizeof *found * (size_t)count)) || !(changed = (int *)gf__calloc(sizeof *changed * (size_t)count))))
        r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_module_reload: out of host memory");
    for (k = mod->kernels, i = 0; r == GF_OK && k; k = k->next, i++)
        if ((r = gf_kernel_get(fresh, k->name, &found[i])) != GF_OK)
            r = gf__fail(GF_ERROR_NOT_FOUND, "gf_module_reload: the new code has no kernel '%s', which the program holds; the old "
                         "code runs on (%s)", k->name, gf__error_text);
    if (r == GF_OK) {   /* every kernel found: the module and its kernels take the new code */
        void *native = mod->native;
        gf_stub_kernel *stubs = mod->stub_kernels;
        int stub_count = mod->stub_kernel_count;
        for (k = mod->kernels, i = 0; k; k = k->next, i++) {
            /* a count is known only from a parameter table (a reload from the file has none) */
            changed[i] = k->params && found[i]->params && k->param_count != found[i]->param_count;
            gf__kernel_swap_code(k, found[i]);
        }
        mod->native = fresh->native; mod->stub_kernels = fresh->stub_kernels; mod->stub_kernel_count = fresh->stub_kernel_count;
        fresh->native = native; fresh->stub_kernels = stubs; fresh->stub_kernel_count = stub_count;
        if (desc) { mod->given_stub = desc->stub_kernels; mod->given_stub_count = desc->stub_kernel_count; }
        mod->given_stale = !desc && mod->dev->be->compile;
        if (desc && fresh->path) {   /* a new file to watch: its origin becomes the module's */
            char *t;
            t = mod->path; mod->path = fresh->path; fresh->path = t;
            t = mod->options; mod->options = fresh->options; fresh->options = t;
            t = mod->source_name; mod->source_name = fresh->source_name; fresh->source_name = t;
            t = mod->cache_dir; mod->cache_dir = fresh->cache_dir; fresh->cache_dir = t;
            mod->path_version = fresh->path_version;
            mod->path_gone = 0;
        }
    }
    gf__unlock(&mod->lock);
    gf__free(found);
    if (r != GF_OK) { gf__free(changed); gf_module_destroy(fresh); return r; }
    old_held = gf__graphs_follow_reload(mod, changed, fresh);
    gf__free(changed);
    /* fresh now holds the old code: it goes after the launches queued before now and with the
       last stale graph that runs it (one that could not hold it: with the module) */
    if (old_held) gf_module_destroy(fresh);
    else if (!gf__grow((void **)&mod->olds, &mod->old_cap, mod->old_count + 1, sizeof *mod->olds)) {
        gf__notice(GF_LOG_WARNING, "gpuflow: gf_module_reload: out of host memory to note the old code that stale graphs run: it is never freed");
    } else mod->olds[mod->old_count++] = fresh;
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_module_poll(gf_module *mod, int *reloaded) {
    gf__file_version now;
    int changed, there, gone = 0;
    GF__CHECK(mod, GF__T_MODULE);
    GF__CHECK_OUT(reloaded);
    *reloaded = 0;
    gf__lock(&mod->lock);   /* a reload swaps path and stamp under it; two polls see one change once */
    if (!mod->path) {
        gf__unlock(&mod->lock);
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_module_poll: the module was not loaded from a file (gf_module_desc.source_path)");
    }
    there = gf__file_version_of(mod->path, &now);
    changed = there && !gf__file_version_same(&now, &mod->path_version);
    if (changed) {
        mod->path_version = now;   /* seen, built or not: a broken file is not compiled again at every poll */
        mod->path_gone = 0;
    }
    if (!there && !mod->path_gone) gone = mod->path_gone = 1;
    gf__unlock(&mod->lock);
    if (gone)   /* an editor between its rename and its write, or a file deleted: said once, the old code runs on */
        gf__notice(GF_LOG_WARNING, "gpuflow: gf_module_poll: '%s' cannot be found (deleted or renamed?): the old code runs on "
                   "until a file is there again", mod->path);
    if (!changed) return GF_OK;
    {
        gf_result r = gf_module_reload(mod, NULL);
        *reloaded = r == GF_OK;
        return r;
    }
}

static void gf__module_release(void *p);
/* Drops one reference; the last retires the code until the launches queued before now have run. */
static void gf__module_unref(gf_module *mod) {
    if (gf__atomic_add_int(&mod->refs, -1) == 1) gf__retire(mod->dev, gf__module_release, mod, GF_MEMORY_KIND_COUNT, 0, mod->dev->be->release_waits);
}
static void gf__module_release(void *p) {   /* the code itself, once no queued launch uses it */
    gf_module *mod = (gf_module *)p;
    gf_kernel *k, *next;
    mod->dev->be->module_unload(mod);   /* may still read the kernels' native handles */
    for (k = mod->kernels; k; k = next) {
        next = k->next;
        gf__mutex_destroy(&k->lock);
        gf__obj_free(mod->dev, k);
    }
    gf__module_origin_free(mod);
    gf__free(mod->olds);
    gf__mutex_destroy(&mod->lock);
    gf__mutex_destroy(&mod->reload_lock);
    gf__obj_free(mod->dev, mod);
}
/* Never waits: the module and its kernels are refused from now on; the code is unloaded once
   the launches queued before the destroy have passed. */
static void gf__call_module_destroy(gf_module *mod) {
    gf_kernel *k;
    int i;
    GF__CHECK_DESTROY(mod, GF__T_MODULE);
    if (gf__refuse_self_wait("gf_module_destroy", mod->dev, NULL) != GF_OK) return;   /* kept: fencing the streams calls the driver */
    for (i = 0; i < mod->old_count; i++) gf_module_destroy(mod->olds[i]);   /* code stale graphs ran */
    mod->old_count = 0;
    gf__lock(&mod->lock);
    for (k = mod->kernels; k; k = k->next) k->type = GF__T_DEAD;
    gf__unlock(&mod->lock);
    mod->type = GF__T_DEAD;
    gf__live(mod->dev, GF__T_MODULE, -1);
    gf__module_unref(mod);
}

/* An argument count that is not the kernel's, with its parameters named where they are
   known (kernels from one source), so the missing one shows. */
static gf_result gf__launch_count_fail(const gf_kernel *k, int count) {
    char list[256] = "";
    size_t used = 0;
    int i;
    for (i = 0; k->params && i < k->param_count && used + 1 < sizeof list; i++) {
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : ": ", k->params[i].name ? k->params[i].name : "?");
        if (n < 0) break;
        used += (size_t)n < sizeof list - used ? (size_t)n : sizeof list - used - 1;
    }
    return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s' takes %d arguments%s; %d were given", k->name,
                    k->param_count, list, count);
}
/* The device's launch limits, in 64 bits: a block of 65536 x 65536 threads is 2^32, which
   32-bit arithmetic reads as 0. */
static gf_result gf__launch_dims_check(const gf_device_info *info, const gf_launch_dims *dims, const char *kernel, size_t static_shared) {
    static const char axis[3] = { 'x', 'y', 'z' };
    uint64_t threads = 1;
    int d;
    for (d = 0; d < 3; d++) {
        if (dims->grid[d] == 0 || dims->block[d] == 0)
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: grid and block sizes must be >= 1 in every dimension (use 1 for unused ones)");
        if (info->max_block[d] && dims->block[d] > info->max_block[d])
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s': block.%c = %u is past the device's limit of %u (use smaller "
                            "blocks and more of them)",
                            kernel, axis[d], dims->block[d], info->max_block[d]);
        if (info->max_grid[d] && dims->grid[d] > info->max_grid[d])
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s': grid.%c = %u blocks is past the device's limit of %u",
                            kernel, axis[d], dims->grid[d], info->max_grid[d]);
        threads *= dims->block[d];
    }
    if (info->max_threads_per_block && threads > info->max_threads_per_block)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s': a block of %u x %u x %u = %llu threads is past the device's limit of %u per block",
                        kernel, dims->block[0], dims->block[1], dims->block[2], (unsigned long long)threads, info->max_threads_per_block);
    if (info->max_shared_per_block && (dims->shared_bytes > info->max_shared_per_block ||
                                       static_shared > info->max_shared_per_block - dims->shared_bytes))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s': %llu bytes of shared memory (its own arrays %llu + shared_bytes %llu) "
                        "are past the device's %u per block", kernel, (unsigned long long)(static_shared + dims->shared_bytes),
                        (unsigned long long)static_shared, (unsigned long long)dims->shared_bytes, info->max_shared_per_block);
    return GF_OK;
}

/* Each argument against the kernel's parameter as GF_KERNEL declared it: a buffer where a
   GF_GLOBAL pointer goes, a value of the parameter's size elsewhere. GPU drivers check less
   (CUDA not at all), so this is where a double passed for an unsigned is caught. */
static gf_result gf__launch_param_check(const gf_kernel *k, const gf_arg *a, int i) {
    const gf_stub_param *p = &k->params[i];
    int pointer = i < 32 && (k->buffer_params >> i & 1u);
    if (pointer && !a->buffer)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s' parameter %d '%s' (%s) takes a buffer (GF_ARG_BUFFER); a %llu-byte value was given",
                        k->name, i, p->name, p->type, (unsigned long long)a->size);
    if (!pointer && a->buffer)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s' parameter %d '%s' (%s) takes a %llu-byte value (GF_ARG); a buffer was given",
                        k->name, i, p->name, p->type, (unsigned long long)p->size);
    if (!pointer && a->size != p->size)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: kernel '%s' parameter %d '%s' (%s) is %llu bytes; the argument is %llu bytes "
                        "(pass a variable of the parameter's type to GF_ARG)", k->name, i, p->name, p->type, (unsigned long long)p->size, (unsigned long long)a->size);
    return GF_OK;
}

static gf_result gf__call_launch(gf_stream *s, gf_kernel *k, gf_launch_dims dims, const gf_arg *args, int count) {
    gf__cmd c;
    size_t limit, total = 0;
    gf_result r;
    int i;
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK(k, GF__T_KERNEL);
    GF__SAME_DEVICE(s->dev, k->mod->dev);
    limit = s->dev->info.max_kernel_args_bytes;
    if ((r = gf__launch_dims_check(&s->dev->info, &dims, k->name, k->static_shared)) != GF_OK) return r;
    if (count < 0 || (count > 0 && !args)) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: %d arguments but args is %s", count, args ? "set" : "NULL");
    if ((k->param_count || k->params) && count != k->param_count)
        return gf__launch_count_fail(k, count);
    for (i = 0; i < count; i++) {
        size_t bytes = args[i].buffer ? sizeof(uint64_t) : args[i].size;
        if (args[i].buffer) {
            if (!gf__is(args[i].buffer, GF__T_BUFFER))
                return gf__fail(GF_ERROR_INVALID_HANDLE, "gf_launch: args[%d].buffer is not a live gf_buffer", i);
            if (args[i].buffer->dev != s->dev)
                return gf__fail(GF_ERROR_WRONG_DEVICE, "gf_launch: args[%d].buffer belongs to %s, not to the stream's device %s (a kernel "
                                "reaches a peer's memory by address: gf_buffer_native as a value, after gf_device_enable_peer)",
                                i, args[i].buffer->dev->tag, s->dev->tag);
        } else if (!args[i].value || args[i].size == 0) {
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: args[%d] has neither a buffer nor a value", i);
        }
        if (bytes > limit - total)   /* no driver takes more; the sum cannot wrap */
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_launch: args[%d] (%llu bytes) takes the arguments past the %s device's limit of %llu bytes",
                            i, (unsigned long long)bytes, s->dev->be->name, (unsigned long long)limit);
        total += bytes;
        if (k->params && (r = gf__launch_param_check(k, &args[i], i)) != GF_OK) return r;
    }
    c.kind = GF__CMD_LAUNCH;   /* its own fields only: zeroing a command costs more than a launch's checks */
    c.as.launch.kernel = k; c.as.launch.kernel_name = k->name; c.as.launch.dims = dims; c.as.launch.module_id = k->mod->id;
    c.as.launch.args = args; c.as.launch.arg_count = count;
    return gf__submit(s, &c);
}

/* ---- interop: native handles out and in -------------------------------------------- >>interop */
/* Out: each backend says what its handle is (gpuflow_<b>.h's top comment); NULL or 0 where it
   has none (the stub: host pointers only). In: gpuflow uses what it is given and never
   destroys it; a wrapped stream's destroy drains what gpuflow enqueued and leaves the stream. */
static uint64_t gf__native_of(gf_device *dev, gf__type type, void *obj) {
    return dev->be->native_handle ? dev->be->native_handle(type, obj) : 0;
}
GPUFLOW_IMPL gf_result gf_device_get_native(gf_device *dev, gf_native_device *out) {
    if (out) memset(out, 0, sizeof *out);   /* zeros on failure too: never half a device */
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (dev->be->device_native) dev->be->device_native(dev, out);
    return GF_OK;
}
/* The context (CUDA, OpenCL), or for HIP the device index carried in the pointer (device 0 is
   then NULL: gf_device_get_native says it unambiguously). */
GPUFLOW_IMPL void *gf_device_native(gf_device *dev) {
    gf_native_device nd;
    if (!gf__is(dev, GF__T_DEVICE)) { gf__say_bad_handle(__func__, "dev", dev, GF__T_DEVICE); return NULL; }
    if (gf_device_get_native(dev, &nd) != GF_OK) return NULL;
    return nd.context ? nd.context : (void *)(intptr_t)nd.ordinal;
}
GPUFLOW_IMPL void *gf_stream_native(gf_stream *s) {
    if (!gf__is(s, GF__T_STREAM)) { gf__say_bad_handle(__func__, "s", s, GF__T_STREAM); return NULL; }
    return (void *)(uintptr_t)gf__native_of(s->dev, GF__T_STREAM, s);
}
GPUFLOW_IMPL uint64_t gf_buffer_native(gf_buffer *buf) {
    if (!gf__is(buf, GF__T_BUFFER)) { gf__say_bad_handle(__func__, "buf", buf, GF__T_BUFFER); return 0; }
    return buf->native;   /* one rule for every backend: see gf_buffer.native */
}
GPUFLOW_IMPL void *gf_event_native(gf_event *ev) {
    if (!gf__is(ev, GF__T_EVENT)) { gf__say_bad_handle(__func__, "ev", ev, GF__T_EVENT); return NULL; }
    return (void *)(uintptr_t)gf__native_of(ev->dev, GF__T_EVENT, ev);
}
GPUFLOW_IMPL void *gf_kernel_native(gf_kernel *k) {
    if (!gf__is(k, GF__T_KERNEL)) { gf__say_bad_handle(__func__, "k", k, GF__T_KERNEL); return NULL; }
    return (void *)(uintptr_t)gf__native_of(k->mod->dev, GF__T_KERNEL, k);
}

static gf_result gf__call_device_open_native(gf_backend b, const gf_native_device *native, gf_device **out) {
    GF__CHECK_OUT(out);
    *out = NULL;
    GF__CHECK_OUT(native);
    if (!gf__backend_valid(b))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_open_native: name the backend of the native device (%d is not one)", (int)b);
    return gf__device_open_on(b, 0, native, out);
}

static gf_result gf__call_stream_wrap(gf_device *dev, void *native_stream, const gf_stream_desc *desc, gf_stream **out) {
    gf_priority prio = desc ? desc->priority : GF_PRIORITY_NORMAL;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (!native_stream) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_wrap: native_stream is NULL");
    if (!dev->be->stream_wrap) return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_stream_wrap: the %s backend has no native streams", dev->be->name);
    if (prio < GF_PRIORITY_NORMAL || prio > GF_PRIORITY_LOW)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_stream_wrap: priority %d is not a gf_priority", (int)prio);
    return gf__stream_new_on(dev, desc ? desc->label : NULL, prio, 0, native_stream, out);
}

static gf_result gf__call_buffer_wrap(gf_device *dev, uint64_t native_buffer, size_t bytes, gf_buffer **out) {
    gf_buffer *buf;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (!native_buffer) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_wrap: native_buffer is 0");
    if (bytes == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_wrap: size is 0");
    if (!dev->be->buffer_wrap) return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_buffer_wrap: the %s backend cannot wrap memory", dev->be->name);
    if (!(buf = (gf_buffer *)gf__calloc(sizeof *buf))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_wrap: out of host memory");
    buf->type = GF__T_BUFFER;
    buf->dev = dev;
    buf->size = buf->capacity = bytes;
    buf->borrowed = 1;
    buf->refs = 1;
    buf->kind = GF_MEMORY_KIND_COUNT;   /* not gpuflow's memory: not counted */
    if ((r = dev->be->buffer_wrap(buf, native_buffer)) != GF_OK) { gf__free(buf); return r; }
    *out = buf;
    return GF_OK;
}

/* ---- external memory and semaphores ------------------------------------------------ >>external */
GPUFLOW_IMPL const char *gf_external_type_name(gf_external_type type) {
    static const char *const names[GF_EXTERNAL_TYPE_COUNT] = {
        "GF_EXTERNAL_NONE", "GF_EXTERNAL_OPAQUE_FD", "GF_EXTERNAL_OPAQUE_WIN32", "GF_EXTERNAL_OPAQUE_WIN32_KMT",
        "GF_EXTERNAL_D3D12_HEAP", "GF_EXTERNAL_D3D12_RESOURCE", "GF_EXTERNAL_D3D11_RESOURCE", "GF_EXTERNAL_D3D12_FENCE",
        "GF_EXTERNAL_SHAREABLE_FD", "GF_EXTERNAL_HOST_FD" };
    return (int)type >= 0 && type < GF_EXTERNAL_TYPE_COUNT ? names[type] : "(not a gf_external_type)";
}

/* Which types are memory and which semaphores; which carry an fd. */
#define GF__EXT_BIT(t) (1u << (unsigned)(t))
#define GF__EXT_MEMORY_TYPES (GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD) | GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32) | \
    GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32_KMT) | GF__EXT_BIT(GF_EXTERNAL_D3D12_HEAP) | GF__EXT_BIT(GF_EXTERNAL_D3D12_RESOURCE) | \
    GF__EXT_BIT(GF_EXTERNAL_D3D11_RESOURCE) | GF__EXT_BIT(GF_EXTERNAL_SHAREABLE_FD) | GF__EXT_BIT(GF_EXTERNAL_HOST_FD))
#define GF__EXT_SEMAPHORE_TYPES (GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD) | GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32) | \
    GF__EXT_BIT(GF_EXTERNAL_OPAQUE_WIN32_KMT) | GF__EXT_BIT(GF_EXTERNAL_D3D12_FENCE) | GF__EXT_BIT(GF_EXTERNAL_HOST_FD))
#define GF__EXT_FD_TYPES (GF__EXT_BIT(GF_EXTERNAL_OPAQUE_FD) | GF__EXT_BIT(GF_EXTERNAL_SHAREABLE_FD) | GF__EXT_BIT(GF_EXTERNAL_HOST_FD))

/* GF_OK when dev takes type for use; else why not, naming what it does take. */
static gf_result gf__external_check(const char *fn, gf_device *dev, gf_external_type type, int use) {
    static const char *const uses[] = { "imports as memory", "exports as memory", "imports as semaphores", "exports as semaphores" };
    int semaphores = use == GF__EXT_IMPORT_SEMAPHORE || use == GF__EXT_EXPORT_SEMAPHORE;
    unsigned kinds = semaphores ? GF__EXT_SEMAPHORE_TYPES : GF__EXT_MEMORY_TYPES;
    unsigned takes = dev->be->external_types ? dev->be->external_types(dev, use) : 0;
    char list[256] = "";
    size_t used = 0;
    int t;
    if (type == GF_EXTERNAL_NONE) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: type is GF_EXTERNAL_NONE: name a handle type", fn);
    if ((int)type < 0 || type >= GF_EXTERNAL_TYPE_COUNT)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: type %d is not a gf_external_type", fn, (int)type);
    if (!(kinds & GF__EXT_BIT(type)))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: %s is not a %s handle type", fn, gf_external_type_name(type),
                        semaphores ? "semaphore" : "memory");
    if (takes & GF__EXT_BIT(type)) return GF_OK;
    for (t = 1; t < GF_EXTERNAL_TYPE_COUNT; t++)
        if (takes & GF__EXT_BIT(t)) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", gf_external_type_name((gf_external_type)t));
            if (n > 0 && used + (size_t)n < sizeof list) used += (size_t)n;
        }
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: the %s backend (device %s) does not take %s; it %s: %s", fn, dev->be->name,
                    dev->tag, gf_external_type_name(type), uses[use], used ? list : "none");
}
/* An fd type's fd must be open (a closed one is named here, before a driver sees it). */
static gf_result gf__external_fd_check(const char *fn, gf_external_type type, int fd) {
    if (!(GF__EXT_FD_TYPES & GF__EXT_BIT(type))) return GF_OK;
#if defined(_WIN32)
    (void)fd;
    return gf__fail(GF_ERROR_NOT_SUPPORTED, "%s: %s is a POSIX fd type; this is Windows", fn, gf_external_type_name(type));
#else
    if (fd < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: fd %d is not a file descriptor", fn, fd);
    if (fcntl(fd, F_GETFD) < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "%s: fd %d is not open", fn, fd);
    return GF_OK;
#endif
}

static gf_result gf__call_buffer_import(gf_device *dev, const gf_external_memory_desc *desc, gf_buffer **out) {
    gf_buffer *buf;
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(desc);
    GF__CHECK_OUT(out);
    if (desc->flags & ~GF_EXTERNAL_DEDICATED) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: unknown flags 0x%x", desc->flags);
    if ((r = gf__external_check(GF__FN, dev, desc->type, GF__EXT_IMPORT_MEMORY)) != GF_OK) return r;
    if ((r = gf__external_fd_check(GF__FN, desc->type, desc->fd)) != GF_OK) return r;
    if (desc->size == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: size is 0 (give the exported allocation's size)");
    if (desc->offset >= desc->size)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: offset %llu is not inside the %llu bytes exported",
                        (unsigned long long)desc->offset, (unsigned long long)desc->size);
    if (desc->size - desc->offset > (uint64_t)SIZE_MAX) return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_buffer_import: size does not fit this host");
    if (!(buf = (gf_buffer *)gf__calloc(sizeof *buf))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_buffer_import: out of host memory");
    buf->type = GF__T_BUFFER;
    buf->dev = dev;
    buf->size = buf->capacity = (size_t)(desc->size - desc->offset);
    buf->refs = 1;
    buf->kind = GF_MEMORY_IMPORTED;
    if ((r = dev->be->buffer_import(buf, desc)) != GF_OK) { gf__free(buf); return r; }
    gf__mem_count(dev, GF_MEMORY_IMPORTED, buf->size, +1);
    *out = buf;
    return GF_OK;
}

static gf_result gf__call_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out) {
    gf_result r;
    GF__CHECK(buf, GF__T_BUFFER);
    GF__CHECK_OUT(out);
    memset(out, 0, sizeof *out);
    out->fd = -1;
    if ((r = gf__external_check(GF__FN, buf->dev, type, GF__EXT_EXPORT_MEMORY)) != GF_OK) return r;
    if (buf->parent) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_export: a view cannot be exported; export its parent (importers take an offset)");
    if (!buf->exportable)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_export: the buffer was not created exportable (gf_buffer_desc.exportable)");
    if ((r = buf->dev->be->buffer_export(buf, type, out)) != GF_OK) { memset(out, 0, sizeof *out); out->fd = -1; return r; }
    out->type = type;
    return GF_OK;
}

static gf_result gf__semaphore_new(gf_device *dev, const gf_semaphore_desc *desc, gf_semaphore **out) {
    gf_semaphore *sem;
    gf_result r;
    if (!(sem = (gf_semaphore *)gf__calloc(sizeof *sem))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_semaphore: out of host memory");
    sem->type = GF__T_SEMAPHORE;
    sem->dev = dev;
    sem->id = gf__atomic_add(&dev->next_id, 1) + 1;
    sem->timeline = desc->timeline != 0;
    sem->imported = desc->type;
    sem->refs = 1;
    snprintf(sem->label, sizeof sem->label, "semaphore %llu", (unsigned long long)sem->id);
    r = desc->type == GF_EXTERNAL_NONE ? dev->be->semaphore_create(sem) : dev->be->semaphore_import(sem, desc);
    if (r != GF_OK) { gf__free(sem); return r; }
    gf__live(dev, GF__T_SEMAPHORE, 1);
    *out = sem;
    return GF_OK;
}

static gf_result gf__call_semaphore_import(gf_device *dev, const gf_semaphore_desc *desc, gf_semaphore **out) {
    gf_result r;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(desc);
    GF__CHECK_OUT(out);
    if ((r = gf__external_check(GF__FN, dev, desc->type, GF__EXT_IMPORT_SEMAPHORE)) != GF_OK) return r;
    if ((r = gf__external_fd_check(GF__FN, desc->type, desc->fd)) != GF_OK) return r;
    if (desc->type == GF_EXTERNAL_D3D12_FENCE && !desc->timeline)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_import: a D3D12 fence is a timeline (set timeline)");
    return gf__semaphore_new(dev, desc, out);
}

static gf_result gf__call_semaphore_create(gf_device *dev, int timeline, gf_semaphore **out) {
    gf_semaphore_desc d;
    GF__OUT_NULL(out);
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if (!dev->be->semaphore_create)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "gf_semaphore_create: the %s backend has no semaphores of its own", dev->be->name);
    memset(&d, 0, sizeof d);
    d.timeline = timeline;
    return gf__semaphore_new(dev, &d, out);
}

static gf_result gf__call_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out) {
    gf_result r;
    GF__CHECK(sem, GF__T_SEMAPHORE);
    GF__CHECK_OUT(out);
    memset(out, 0, sizeof *out);
    out->fd = -1;
    if ((r = gf__external_check(GF__FN, sem->dev, type, GF__EXT_EXPORT_SEMAPHORE)) != GF_OK) return r;
    if (sem->imported != GF_EXTERNAL_NONE)
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_export: %s was imported (%s): export it from where it was made",
                        sem->label, gf_external_type_name(sem->imported));
    if ((r = sem->dev->be->semaphore_export(sem, type, out)) != GF_OK) { memset(out, 0, sizeof *out); out->fd = -1; return r; }
    out->type = type;
    return GF_OK;
}

/* Signal and wait: commands like any other (gf__submit): stream-ordered, recorded in a
   capture (the graph holds the semaphore), noted for the state report with the semaphore's
   label, ordered for the race detector like an event's record and wait. */
static gf_result gf__semaphore_enqueue(gf_stream *s, gf_semaphore *sem, uint64_t value, gf__cmd_kind kind) {
    gf__cmd c;
    c.kind = kind;
    c.as.sem.sem = sem;
    c.as.sem.value = value;
    return gf__submit(s, &c);
}
static gf_result gf__call_semaphore_signal_async(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK(sem, GF__T_SEMAPHORE);
    GF__SAME_DEVICE(s->dev, sem->dev);
    if (sem->timeline && value == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_signal_async: a timeline starts at 0: signal a value above it");
    return gf__semaphore_enqueue(s, sem, value, GF__CMD_SIGNAL);
}
static gf_result gf__call_semaphore_wait_async(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK(sem, GF__T_SEMAPHORE);
    GF__SAME_DEVICE(s->dev, sem->dev);
    return gf__semaphore_enqueue(s, sem, value, GF__CMD_SEM_WAIT);
}

/* Drops one hold (the handle's, once its queued work passed; a graph's, at its release); the
   last frees it. */
static void gf__semaphore_unref(void *p) {
    gf_semaphore *sem = (gf_semaphore *)p;
    gf_device *dev = sem->dev;
    if (gf__atomic_add_int(&sem->refs, -1) > 1) return;
    dev->be->semaphore_destroy(sem);
    gf__free(sem->race_vc);
    gf__obj_free(dev, sem);
}
static void gf__call_semaphore_destroy(gf_semaphore *sem) {
    GF__CHECK_DESTROY(sem, GF__T_SEMAPHORE);
    sem->type = GF__T_DEAD;
    gf__live(sem->dev, GF__T_SEMAPHORE, -1);
    gf__retire(sem->dev, gf__semaphore_unref, sem, GF__KIND_NO_MEMORY, 0, 0);
}

/* ======================================================================================== */
/*  Diagnostics: the race detector, hang reports, the profiler. Off the core path: the core  */
/*  calls in through the forward declarations, and only while a switch is on.  >>diagnostics */
/* ======================================================================================== */
/* ---- faults on demand: operations that fail when asked -------------------------------- >>faults */
/* The rules of gf_faults_set, one table for the process under a spin lock; the hot paths read
   gf__faults_armed only (and a device's lost flag), so that with no rule set nothing is paid
   beyond a relaxed load. A match counts the operation for every rule of its kind. */
static const char *const gf__fault_kind_names[] = { "launch", "copy", "fill", "op", "buffer", "sync", "alloc", "lost" };
#define GF__FAULT_RULES 16
typedef struct gf__fault_rule {
    int kind;
    char entry[64];                 /* GF__FK_ENTRY: the driver entry point or file operation */
    uint64_t nth, every;            /* the nth fails; then every `every`th after it (0: none) */
    int from;                       /* N+: the nth and all after it */
    uint64_t seen;                  /* operations of its kind counted so far */
    char text[80];                  /* the rule as given, for messages */
} gf__fault_rule;
static struct { gf__spin lock; gf__fault_rule rule[GF__FAULT_RULES]; int count; uint64_t injected; } gf__faults;

/* 1 if name can be an entry point gpuflow asks about: a driver's (cuX..., clX..., hipX...,
   hiprtcX..., nvrtcX..., X upper case) or a kernel cache file operation. Anything else
   ("lanch", "LAUNCH") would never fire. */
static int gf__fault_entry_named(const char *name) {
    static const char *const prefixes[] = { "cu", "cl", "hiprtc", "hip", "nvrtc" };
    static const char *const files[] = { "mkdir", "open", "read", "write", "rename", "remove" };
    size_t i, k;
    for (i = 0; i < sizeof files / sizeof files[0]; i++) if (!strcmp(name, files[i])) return 1;
    for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(name, prefixes[i], k = strlen(prefixes[i])) && name[k] >= 'A' && name[k] <= 'Z') return 1;
    return 0;
}
/* One rule from text (n characters); 0: not understood. */
static int gf__fault_parse(const char *text, size_t n, gf__fault_rule *r) {
    const char *colon = (const char *)memchr(text, ':', n), *p;
    char number[24];
    size_t name_n, i;
    char *end;
    memset(r, 0, sizeof *r);
    if (!colon || colon == text || n >= sizeof r->text) return 0;
    memcpy(r->text, text, n);
    name_n = (size_t)(colon - text);
    r->kind = GF__FK_ENTRY;
    for (i = 0; i < sizeof gf__fault_kind_names / sizeof gf__fault_kind_names[0]; i++)
        if (strlen(gf__fault_kind_names[i]) == name_n && !strncmp(text, gf__fault_kind_names[i], name_n)) r->kind = (int)i;
    if (r->kind == GF__FK_ENTRY) {
        if (name_n >= sizeof r->entry) return 0;
        for (i = 0; i < name_n; i++)
            if (!((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z') || (text[i] >= '0' && text[i] <= '9') || text[i] == '_')) return 0;
        memcpy(r->entry, text, name_n);
        if (!gf__fault_entry_named(r->entry)) return 0;
    }
    p = colon + 1;
    n -= name_n + 1;
    if (n == 0 || n >= sizeof number || *p < '0' || *p > '9') return 0;
    memcpy(number, p, n);
    number[n] = 0;
    errno = 0;
    r->nth = (uint64_t)strtoull(number, &end, 10);
    if (r->nth == 0 || errno == ERANGE) return 0;   /* past 2^64 read as its largest */
    if (*end == '+' && end[1] == 0) { r->from = 1; return 1; }
    if (*end == '/') {
        const char *k = end + 1;
        if (*k < '0' || *k > '9') return 0;
        errno = 0;
        r->every = (uint64_t)strtoull(k, &end, 10);
        if (r->every == 0 || errno == ERANGE) return 0;
    }
    return *end == 0 && r->kind != GF__FK_LOST ? 1 : *end == 0 && !r->every;
}

static gf_result gf__call_faults_set(const char *spec) {
    gf__fault_rule rules[GF__FAULT_RULES];
    int count = 0;
    const char *p = spec ? spec : "";
    while (*p) {
        size_t n;
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        n = strcspn(p, ", ");
        if (count == GF__FAULT_RULES)
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_faults_set: more than %d rules; the rules are unchanged", GF__FAULT_RULES);
        if (!gf__fault_parse(p, n, &rules[count]))
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_faults_set: '%.*s' is not a rule (WHAT:N, WHAT:N+ or WHAT:N/K; WHAT is "
                            "launch, copy, fill, op, buffer, sync, alloc, lost (not with /K), a driver entry point's name (cu..., cl..., hip..., "
                            "nvrtc...) or a kernel cache file operation (mkdir, open, read, write, rename, remove)); the rules are unchanged",
                            (int)(n < 80 ? n : 80), p);
        count++;
        p += n;
    }
    gf__spin_lock(&gf__faults.lock);
    if (count) memcpy(gf__faults.rule, rules, sizeof *rules * (size_t)count);
    gf__faults.count = count;
    gf__atomic_store_int(&gf__faults_armed, count > 0);
    gf__spin_unlock(&gf__faults.lock);
    return GF_OK;
}
GPUFLOW_IMPL uint64_t gf_faults_injected(void) {
    uint64_t n;
    gf__spin_lock(&gf__faults.lock);
    n = gf__faults.injected;
    gf__spin_unlock(&gf__faults.lock);
    return n;
}

/* Counts one operation of kind (entry: its name, for GF__FK_ENTRY) against the rules; which
   rule fires goes to why. Returns 0, GF__FK_LOST when a lost rule fired, or 1. */
static int gf__fault_count(int kind, const char *entry, char *why, size_t cap, uint64_t *number) {
    int i, hit = 0;
    if (!gf__atomic_load_int(&gf__faults_armed)) return 0;
    gf__spin_lock(&gf__faults.lock);
    for (i = 0; i < gf__faults.count; i++) {
        gf__fault_rule *r = &gf__faults.rule[i];
        uint64_t n;
        int counted = r->kind == kind || (r->kind == GF__FK_OP && kind <= GF__FK_FILL) ||
                      (r->kind == GF__FK_LOST && kind <= GF__FK_SYNC);
        if (kind == GF__FK_ENTRY) counted = r->kind == GF__FK_ENTRY && entry && !strcmp(r->entry, entry);
        if (!counted) continue;
        n = ++r->seen;
        if (n == r->nth || (r->from && n > r->nth) || (r->every && n > r->nth && (n - r->nth) % r->every == 0)) {
            if (number && (!hit || r->kind == GF__FK_LOST)) *number = n;
            if (!hit && why)   /* n counts what the rule counts, which may be more than this kind */
                snprintf(why, cap, "GPUFLOW_FAULTS: this %s is %s%snumber %llu, which rule '%s' fails",
                         kind == GF__FK_ENTRY ? entry : gf__fault_kind_names[kind],
                         r->kind == kind ? "" : r->kind == GF__FK_LOST ? "operation" : gf__fault_kind_names[r->kind], r->kind == kind ? "" : " ",
                         (unsigned long long)n, r->text);
            hit = r->kind == GF__FK_LOST ? GF__FK_LOST : (hit ? hit : 1);
        }
    }
    if (hit) gf__faults.injected++;
    gf__spin_unlock(&gf__faults.lock);
    return hit;
}
static int gf__fault_alloc(void) { return !gf__alloc_own && gf__fault_count(GF__FK_ALLOC, NULL, NULL, 0, NULL) != 0; }
#if !defined(GPUFLOW_FAULT_INJECTION)
static int gf__fault_entry(const char *entry) {
    char why[sizeof gf__fault_told[1]];
    if (!gf__fault_count(GF__FK_ENTRY, entry, why, sizeof why, NULL)) return 0;
    gf__copy_str(gf__fault_told[0], sizeof gf__fault_told[0], entry);   /* for the failure's message */
    memcpy(gf__fault_told[1], why, sizeof why);
    gf__notice(GF_LOG_INFO, "gpuflow: %s", why);
    return 1;
}
#endif
/* A device operation of kind: GF_OK, or the failure asked for (a lost device fails all). Only
   through GF__FAULT_POINT (>>forward). */
static gf_result gf__device_lost(gf_device *dev, const char *fn) {
    return gf__fail(GF_ERROR_DEVICE_LOST, "%s: device %s is lost (GPUFLOW_FAULTS made it so at operation %llu): close it",
                    fn, dev->tag, (unsigned long long)dev->lost_at);
}
static gf_result gf__fault_point(gf_device *dev, int kind, const char *fn) {
    char why[160];
    uint64_t number = 0;
    int hit;
    if (gf__atomic_load_int(&dev->lost)) return gf__device_lost(dev, fn);
    if (!(hit = gf__fault_count(kind, NULL, why, sizeof why, &number))) return GF_OK;
    if (hit == GF__FK_LOST) {
        dev->lost_at = number;
        gf__atomic_store_int(&dev->lost, 1);
        return gf__fail(GF_ERROR_DEVICE_LOST, "%s: %s: device %s is lost from now on", fn, why, dev->tag);
    }
    return gf__fail(kind == GF__FK_BUFFER ? GF_ERROR_OUT_OF_MEMORY : GF_ERROR_DRIVER, "%s: %s", fn, why);
}

/* ---- record and replay: every call to a file, and back -------------------------------- >>record */
/* The file: the magic "gpuflowR", a u32 version and a u32 flags word (1: device-to-host bytes
   are in it), then records, all little-endian. A record: u32 size (of what follows), u16 call,
   u16 thread, u64 time (ns since the start), i32 result, then its arguments as its row of
   GF__RECORDED_CALLS spells them. The last record is END (recording stopped) or CUT (the size
   limit); a file with neither was cut short with its program. Objects are numbered from 1 as
   they are made: 0 is NULL, GF__REC_UNKNOWN a pointer the recording never saw made (an object
   of an unrecorded call, or one already destroyed).
   Argument letters: an object (D device, B buffer, S stream, E event, P event pool, M module,
   K kernel, G graph, Q stream pool, W stream set, J graph pool, V budget, T semaphore:
   GF__REC_OBJECTS); the same letter in lower case: one the call makes, through its out
   pointer; x: one the call destroys (its number is retired); i int, u unsigned, z size_t, U
   u64, c a
   string (u32 length with its NUL, or GF__REC_NULL, then the bytes); h host bytes in (pointer,
   size), o host bytes out (pointer, size; the bytes too when asked), y host bytes out of an
   async copy (size only): u32 flags (1 pointer given, 2 bytes follow, 4 a u64 snapshot number
   follows instead: the bytes are in that BYTES record), u64 size, the bytes;
   l module desc, a launch (dims, args, count), 2 a 2D copy, 3 an acquire hint, 4 a stream pool
   desc, 5 streams (array, count), 6 a stream desc, 7 a buffer desc, 8 an event pool desc, 9 a
   budget desc (its callback is the program's: not written), 0 an external memory desc (u32
   type, u64 size, u64 offset, u32 flags), 1 a semaphore desc (u32 type, u32 timeline): their
   handles are not written; f a callback
   (function, user) and n a result out (a pointer), which are not written. Host
   bytes are written only for a call that succeeded: then gpuflow has checked their range.
   A BYTES record (u64 snapshot number, then the bytes as an h) holds an async copy's host
   bytes as its stream reached them; it may come before or after the copy's record, and it is
   no call. Two rows are no public call: stream_begin_while_equal and stream_begin_if_equal, a
   captured flow's loop or branch (the int == the i, where the public calls test != 0).
   Version 2 added BYTES; version 3 the interop calls and those rows; earlier versions read as
   before. */
#define GF__REC_VERSION 3u
#define GF__REC_UNKNOWN 0xffffffffu
#define GF__REC_MAX_ID 0x7fffffffu          /* object numbers a recording gives (then it stops) and a replay takes */
#define GF__REC_NULL 0xffffffffu
#define GF__REC_HEADER 20                 /* size, call, thread, time, result */
#define GF__REC_MAX_ARGS 4096             /* launch arguments written (more: the count alone) */
#define GF__RCF_NOCMP 1                   /* its result depends on timing (or memory in use, which frees
                                             that wait for work make timing too): made, not compared */
#define GF__RCF_FLUSH 2                   /* the file is flushed after it */
#define GF__RCF_STAND_IN 4                /* what it makes came from outside gpuflow (a native handle, another
                                             API's memory or semaphore): a replay makes a stand-in of its own,
                                             and skips the call when it failed recorded (the handle failed it) */
#define GF__REC_OBJECTS "DBSEPMKGQWJVT"   /* the object letters; in lower case, made */
#define GF__REC_MADE "dbsepmkgqwjvt"
#define GF__RECORDED_CALLS(X) \
    X(device_open, "iid", GF__RCF_FLUSH) X(device_close, "x", GF__RCF_FLUSH) X(device_synchronize, "D", GF__RCF_FLUSH) \
    X(device_set_memory_limit, "Dz", GF__RCF_NOCMP) X(buffer_create, "Dzb", 0) X(buffer_create_desc, "D7b", 0) \
    X(buffer_destroy, "x", GF__RCF_FLUSH) X(buffer_view, "Bzzb", 0) X(copy_to_device, "Bzh", 0) \
    X(copy_to_host, "oBz", GF__RCF_FLUSH) X(copy_to_device_async, "SBzh", 0) X(copy_to_host_async, "SyBz", 0) \
    X(copy_buffer_async, "SBzBzz", 0) X(fill_async, "SBziz", 0) X(fill16_async, "SBziz", 0) X(fill32_async, "SBzuz", 0) \
    X(copy_2d_async, "S2", 0) X(prefetch_async, "SBi", 0) X(buffer_create_async, "Szb", 0) X(buffer_destroy_async, "Sx", GF__RCF_NOCMP | GF__RCF_FLUSH) \
    X(buffer_record_stream, "BS", 0) X(stream_create, "D6s", 0) X(stream_destroy, "x", GF__RCF_FLUSH) \
    X(stream_synchronize, "S", GF__RCF_FLUSH) X(stream_synchronize_timeout, "Su", GF__RCF_NOCMP | GF__RCF_FLUSH) \
    X(stream_query, "S", GF__RCF_NOCMP) X(stream_wait_event, "SE", 0) X(stream_wait_stream, "SS", 0) \
    X(stream_add_callback, "Sf", 0) X(event_create, "Due", 0) X(event_destroy, "x", GF__RCF_FLUSH) X(event_record, "ES", 0) \
    X(event_synchronize, "E", GF__RCF_FLUSH) X(event_synchronize_timeout, "Eu", GF__RCF_NOCMP | GF__RCF_FLUSH) \
    X(event_query, "E", GF__RCF_NOCMP) X(event_elapsed_ms, "EEn", GF__RCF_NOCMP) X(event_pool_create, "D8p", 0) \
    X(event_pool_acquire, "Pue", 0) X(event_pool_release, "PE", GF__RCF_NOCMP) X(event_pool_destroy, "x", GF__RCF_FLUSH) \
    X(module_load, "Dlm", 0) X(kernel_get, "Mck", 0) X(module_destroy, "x", GF__RCF_FLUSH) X(launch, "SKa", 0) \
    X(stream_begin_capture, "Si", 0) X(stream_end_capture, "Sg", 0) X(graph_launch, "GS", 0) X(graph_update, "GG", 0) \
    X(graph_destroy, "x", GF__RCF_FLUSH) X(stream_begin_while, "SBz", 0) X(stream_end_while, "S", 0) \
    X(stream_begin_if, "SBz", 0) X(stream_end_if, "S", 0) X(race_check_enable, "Du", 0) X(profiler_enable, "Du", 0) \
    X(faults_set, "c", 0) X(stream_pool_create, "D4q", 0) X(stream_pool_acquire, "Q3si", 0) \
    X(stream_pool_acquire_ready, "Qusi", GF__RCF_NOCMP) X(stream_pool_release, "QS", GF__RCF_NOCMP) X(stream_pool_synchronize, "Q", GF__RCF_FLUSH) \
    X(stream_pool_destroy, "x", GF__RCF_FLUSH) X(stream_set_create, "Dicw", 0) X(stream_set_get, "Wzs", 0) X(stream_set_next, "Wzs", 0) \
    X(stream_set_end_frame, "W", 0) X(stream_set_wait_frames, "Wiu", GF__RCF_NOCMP) X(stream_set_synchronize, "W", GF__RCF_FLUSH) \
    X(stream_set_destroy, "x", GF__RCF_FLUSH) X(barrier, "5", 0) X(synchronize_all, "5n", GF__RCF_FLUSH) \
    X(graph_pool_create, "Dj", 0) X(graph_pool_destroy, "x", GF__RCF_FLUSH) X(stream_begin_capture_pool, "SiJ", 0) \
    X(budget_create, "D9v", 0) X(budget_destroy, "x", GF__RCF_FLUSH) X(module_reload, "Mli", 0) \
    X(graph_set_kernel_args, "Gia", 0)   /* 'a' with no dimensions: zeros */ \
    X(device_open_native, "iid", GF__RCF_FLUSH | GF__RCF_STAND_IN) X(stream_wrap, "D6s", GF__RCF_STAND_IN) \
    X(buffer_wrap, "Dzb", GF__RCF_STAND_IN) X(buffer_import, "D0b", GF__RCF_STAND_IN) X(buffer_export, "Bun", GF__RCF_NOCMP) \
    X(semaphore_import, "D1t", GF__RCF_STAND_IN) X(semaphore_create, "Dit", GF__RCF_STAND_IN) X(semaphore_export, "Tun", GF__RCF_NOCMP) \
    X(semaphore_signal_async, "STU", 0) X(semaphore_wait_async, "STU", 0) X(semaphore_destroy, "x", GF__RCF_FLUSH) \
    X(stream_begin_while_equal, "SBzi", 0) X(stream_begin_if_equal, "SBzi", 0)   /* a captured flow's: the int == value */ \
    X(device_enable_peer, "DD", GF__RCF_NOCMP) X(device_trim, "Dz", GF__RCF_NOCMP | GF__RCF_FLUSH) X(device_reset_peak, "D", 0) \
    X(range_push, "Sc", 0) X(range_pop, "S", 0) \
    X(flow_slots, "Dzb", 0) X(stream_abandon_capture, "S", 0)   /* a captured flow's slots buffer; a capture given up */
typedef enum gf__rec_call {
    GF__RC_NONE = 0,
#define GF__RC_ENUM(name, args, flags) GF__RC_##name,
    GF__RECORDED_CALLS(GF__RC_ENUM)
#undef GF__RC_ENUM
    GF__RC_COUNT,
    GF__RC_BYTES = 0xfffd,                /* an async copy's host bytes, taken in stream order */
    GF__RC_END = 0xfffe,                  /* recording stopped */
    GF__RC_CUT = 0xffff                   /* the size limit ended it */
} gf__rec_call;
static const struct { const char *name, *args; int flags; } gf__rec_calls[] = {
    { "none", "", 0 },
#define GF__RC_ROW(name, args, flags) { "gf_" #name, args, flags },
    GF__RECORDED_CALLS(GF__RC_ROW)
#undef GF__RC_ROW
};

/* The recorder: one file, written under one lock, in memory of its own (the GPUFLOW_* macros:
   neither gf_set_allocator nor faults on demand touch it, so recording changes no fault count;
   a snapshot's callback is the backend's, and its item goes through gf_set_allocator's
   functions, one allocation a snapshot). */
typedef struct gf__rec_slot { const void *ptr; uint32_t id; } gf__rec_slot;
static struct {
    gf__spin lock;
    struct gf__rec_file *file;
    char path[512];
    char stopped_why[256];                          /* why the last recording ended early ("": it did not) */
    uint64_t written, limit, t0;
    int device_to_host, threads, recording;   /* recording: which one this is (threads are numbered anew in each) */
    uint32_t next_id;
    char env_faults[256]; int env_faults_result, env_faults_pending;   /* GPUFLOW_FAULTS, written after its open */
    gf__rec_slot *map; size_t map_cap, map_count;   /* live objects' numbers, by pointer (open addressing) */
    unsigned char *buf; size_t len, cap;            /* the record being written */
    size_t blob_at; const void *blob; uint64_t blob_n;   /* host bytes, written from where they are */
    int broken;                                     /* out of memory while writing it */
    int numbers_spent;                              /* GF__REC_MAX_ID objects numbered: stopped */
    struct gf__rec_late *late;                      /* snapshots whose callbacks have not run */
    struct gf__rec_file *tail; int tail_of; uint64_t tail_written, tail_limit;   /* a stopped recording's file, open (after its
                                                       END) until the snapshots queued before the stop are in it */
    uint64_t late_count;                            /* snapshots numbered so far (numbers from 1) */
} gf__rec;
static GF__TLS int gf__rec_depth;      /* recorded calls this thread is inside: only the outermost is written */
static GF__TLS int gf__rec_thread;     /* this thread's number in the file */
static GF__TLS int gf__rec_thread_of;  /* the recording that number belongs to */
static GF__TLS const void *gf__rec_retired; static GF__TLS uint32_t gf__rec_retired_id;   /* this call's destroyed object */

/* A recording's file, written with write(2) through a buffer of its own rather than stdio: a
   signal's EINTR is retried, the fd does not outlive an exec, and a fork's child drops the
   parent's unwritten bytes (gf__rec_after_fork) where stdio would write them again at its exit. */
#define GF__REC_OUT_BYTES 65536
typedef struct gf__rec_file {
    int fd;
    int pipe;   /* a FIFO or socket: a write there may raise SIGPIPE */
    size_t len;
    unsigned char out[GF__REC_OUT_BYTES];
} gf__rec_file;

/* Opens a recording's file for writing alone: a file another recorder writes (another process
   given the same GPUFLOW_RECORD without %p, or another copy of gpuflow in this process) is left
   as it is (*busy set) rather than cut and interleaved. The lock is an open file description's
   where Linux has them (F_OFD_SETLK: two copies in one process too), else the process's
   (fcntl); Windows denies other writers at the open. NULL with *err an errno value. */
#if defined(F_OFD_SETLK)
#  define GF__F_OFD_SETLK F_OFD_SETLK
#  define GF__F_OFD_SETLKW F_OFD_SETLKW
#elif defined(__linux__)
#  define GF__F_OFD_SETLK 37   /* Linux 3.15; <fcntl.h> names it only with _GNU_SOURCE */
#  define GF__F_OFD_SETLKW 38
#endif
static gf__rec_file *gf__rec_file_open(const char *path, int *busy, int *err) {
    gf__rec_file *f;
    int fd, is_pipe = 0;
#if defined(_WIN32)
    wchar_t *w = gf__path_wide(path);
    *err = w ? _wsopen_s(&fd, w, _O_WRONLY | _O_CREAT | _O_TRUNC | _O_BINARY | _O_NOINHERIT, _SH_DENYWR, _S_IREAD | _S_IWRITE) : errno;
    *busy = w && *err == EACCES && _doserrno == ERROR_SHARING_VIOLATION;   /* else a read-only file, a folder: no other recorder */
    gf__free(w);
    if (*err) return NULL;
#else
    /* O_NONBLOCK: a FIFO with no reader is refused (ENXIO), not waited for. Only a regular file
       is locked and cut, the lock first, so a busy file keeps what its recorder wrote (a pipe,
       a terminal or /dev/null has nothing to cut, and may have many writers). */
    struct stat st;
    *busy = *err = 0;
    if ((fd = gf__fd_open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644)) < 0) { *err = errno; return NULL; }
    if (fstat(fd, &st) != 0) { *err = errno; close(fd); return NULL; }
    if (S_ISREG(st.st_mode)) {
        struct flock whole;
        int locked;
        memset(&whole, 0, sizeof whole);
        whole.l_type = F_WRLCK; whole.l_whence = SEEK_SET;   /* l_len 0: to the end, however long */
#  if defined(GF__F_OFD_SETLK)
        locked = fcntl(fd, GF__F_OFD_SETLK, &whole) == 0;
        if (!locked && errno == EINVAL) locked = fcntl(fd, F_SETLK, &whole) == 0;   /* a kernel before 3.15 */
#  else
        locked = fcntl(fd, F_SETLK, &whole) == 0;
#  endif
        /* a file system without locks (any other errno) goes on without */
        if (!locked && (errno == EACCES || errno == EAGAIN)) { *busy = 1; *err = errno; close(fd); return NULL; }
        if (ftruncate(fd, 0) != 0) { *err = errno; close(fd); return NULL; }
    }
    is_pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) { *err = errno; close(fd); return NULL; }
#endif
    if (!(f = (gf__rec_file *)GPUFLOW_MALLOC(sizeof *f))) { *err = ENOMEM; gf__fd_close(fd); return NULL; }
    f->fd = fd;
    f->pipe = is_pipe;
    f->len = 0;
    return f;
}
/* Writes to a pipe or socket whose reader left raise SIGPIPE, which ends the process unless the
   program handles it: the recorder's go with SIGPIPE blocked in this thread, and one they raise
   is taken back before the mask is restored, so the write fails with EPIPE and the recording
   ends with that reason. (Where the system lacks the POSIX calls, the plain write.) */
static int gf__rec_file_write(const gf__rec_file *f, const void *p, size_t n) {   /* 0, or an errno value */
#if !defined(_WIN32) && defined(SIG_BLOCK)
    if (f->pipe) {
        sigset_t pipe_only, old, pending;
        int sig, err;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
        err = gf__fd_write_all(f->fd, p, n, 0) ? 0 : errno;
        if (err == EPIPE && !sigismember(&old, SIGPIPE) && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
            (void)sigwait(&pipe_only, &sig);   /* pending, so at once */
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return err;
    }
#endif
    return gf__fd_write_all(f->fd, p, n, 0) ? 0 : errno;
}
/* What gf__rec_file_put buffered, to the file: 0, or the errno value of the failure. */
static int gf__rec_file_drain(gf__rec_file *f) {
    int err = gf__rec_file_write(f, f->out, f->len);
    f->len = 0;   /* written or not: the failure ends the recording */
    return err;
}
static int gf__rec_file_put(gf__rec_file *f, const void *p, size_t n) {   /* 0, or an errno value */
    int err;
    if (n <= sizeof f->out - f->len) { memcpy(f->out + f->len, p, n); f->len += n; return 0; }
    if ((err = gf__rec_file_drain(f)) != 0) return err;
    if (n < sizeof f->out) { memcpy(f->out, p, n); f->len = n; return 0; }
    return gf__rec_file_write(f, p, n);
}
/* Writes what is buffered and closes the file, letting its lock go: 0, or an errno value. */
static int gf__rec_file_close(gf__rec_file *f) {
    int err = gf__rec_file_drain(f);
    if (gf__fd_close(f->fd) != 0 && !err) err = errno;
    GPUFLOW_FREE(f);
    return err;
}
/* Why a write failed, for a message: this thread's copy, so it outlives gf__rec.lock; two, taken
   in turn, so the reason a recording stopped outlives the failure to close it. */
static const char *gf__rec_file_why(const char *what, int err) {
    static GF__TLS char why[2][192];
    static GF__TLS int turn;
    turn ^= 1;
    snprintf(why[turn], sizeof why[turn], "%s (%s)", what, strerror(err));
    return why[turn];
}

static void gf__rec_put(const void *p, size_t n) {
    if (gf__rec.broken || !n) return;
    if (n > gf__rec.cap - gf__rec.len) {
        size_t cap = gf__rec.cap ? gf__rec.cap : 1024;
        unsigned char *grown;
        while (cap - gf__rec.len < n) { if (cap > ((size_t)-1) / 4) { gf__rec.broken = 1; return; } cap *= 2; }
        if (!(grown = (unsigned char *)GPUFLOW_REALLOC(gf__rec.buf, cap))) { gf__rec.broken = 1; return; }
        gf__rec.buf = grown;
        gf__rec.cap = cap;
    }
    memcpy(gf__rec.buf + gf__rec.len, p, n);
    gf__rec.len += n;
}
static void gf__rec_le(uint64_t v, int bytes) {
    unsigned char b[8];
    int i;
    for (i = 0; i < bytes; i++) b[i] = (unsigned char)(v >> (8 * i));
    gf__rec_put(b, (size_t)bytes);
}
static void gf__rec_u32(uint32_t v) { gf__rec_le(v, 4); }
static void gf__rec_u64(uint64_t v) { gf__rec_le(v, 8); }
static void gf__rec_str(const char *s) {
    size_t n = s ? strlen(s) + 1 : 0;
    if (!s || n >= GF__REC_NULL) { gf__rec_u32(GF__REC_NULL); return; }
    gf__rec_u32((uint32_t)n);
    gf__rec_put(s, n);
}
static void gf__rec_blob(const void *p, uint64_t n, int data) {   /* u32 flags, u64 size, the bytes when data */
    gf__rec_u32((p ? 1u : 0u) | (p && data ? 2u : 0u));
    gf__rec_u64(n);
    if (p && data) gf__rec_put(p, (size_t)n);
}
static void gf__rec_blob_in_place(const void *p, uint64_t n) {   /* the same, its bytes written from where they are */
    gf__rec_blob(p, n, 0);
    if (!gf__rec.broken) { gf__rec.buf[gf__rec.len - 12] |= 2; gf__rec.blob_at = gf__rec.len; gf__rec.blob = p; gf__rec.blob_n = n; }
}
static void gf__rec_blob_late(uint64_t n) {   /* the bytes are the snapshot's: its number */
    gf__rec_u32(1u | 4u);
    gf__rec_u64(n);
    gf__rec_u64(gf__rec_late_token);
}

/* Object numbers. */
static size_t gf__rec_hash(const void *p) { return (size_t)(((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15u) >> 24) & (gf__rec.map_cap - 1); }
static gf__rec_slot *gf__rec_find(const void *p) {
    size_t i;
    if (!gf__rec.map_cap) return NULL;
    for (i = gf__rec_hash(p); gf__rec.map[i].ptr; i = (i + 1) & (gf__rec.map_cap - 1))
        if (gf__rec.map[i].ptr == p) return &gf__rec.map[i];
    return NULL;
}
static uint32_t gf__rec_id(const void *p) {
    gf__rec_slot *s = p ? gf__rec_find(p) : NULL;
    return !p ? 0 : s ? s->id : GF__REC_UNKNOWN;
}
static uint32_t gf__rec_new(const void *p) {   /* a number for an object just made (0: none, or no memory) */
    gf__rec_slot *s;
    size_t i;
    if (!p) return 0;
    if (gf__rec.next_id >= GF__REC_MAX_ID) { gf__rec.numbers_spent = gf__rec.broken = 1; return 0; }   /* never wraps to 0 (NULL) or to a live one */
    if ((s = gf__rec_find(p)) != NULL) return s->id = ++gf__rec.next_id;   /* a destroyed object's memory, made again */
    if ((gf__rec.map_count + 1) * 2 > gf__rec.map_cap) {
        size_t old = gf__rec.map_cap, cap = old ? old * 2 : 256;
        gf__rec_slot *was = gf__rec.map, *grown = (gf__rec_slot *)GPUFLOW_MALLOC(sizeof *grown * cap);
        if (!grown) { gf__rec.broken = 1; return 0; }
        memset(grown, 0, sizeof *grown * cap);
        gf__rec.map = grown;
        gf__rec.map_cap = cap;
        for (i = 0; i < old; i++)
            if (was[i].ptr) { size_t j = gf__rec_hash(was[i].ptr); while (grown[j].ptr) j = (j + 1) & (cap - 1); grown[j] = was[i]; }
        GPUFLOW_FREE(was);
    }
    for (i = gf__rec_hash(p); gf__rec.map[i].ptr; i = (i + 1) & (gf__rec.map_cap - 1)) {}
    gf__rec.map[i].ptr = p;
    gf__rec.map_count++;
    return gf__rec.map[i].id = ++gf__rec.next_id;
}
static void gf__rec_forget(const void *p) {   /* linear probing's deletion: later entries of the run move back */
    gf__rec_slot *s = gf__rec_find(p);
    size_t i, j, mask = gf__rec.map_cap - 1;
    if (!s) return;
    i = (size_t)(s - gf__rec.map);
    for (j = (i + 1) & mask; gf__rec.map[j].ptr; j = (j + 1) & mask) {
        if (gf__probe_moves_back(i, j, gf__rec_hash(gf__rec.map[j].ptr), mask)) { gf__rec.map[i] = gf__rec.map[j]; i = j; }
    }
    gf__rec.map[i].ptr = NULL;
    gf__rec.map_count--;
}

/* A module's description: every form of its code, the stub's kernel names, and the text of
   source_path when it gave the source (a broken file's too: a replay fails its build the same
   way). Binaries only when the load succeeded (their sizes are checked then). */
static void gf__rec_module(const gf_module_desc *d, gf_result r) {
    char *text = NULL;
    int i, names = d && d->stub_kernels && d->stub_kernel_count > 0 && d->stub_kernel_count <= GF__REC_MAX_ARGS ? d->stub_kernel_count : 0;
    gf__rec_u32(d ? 1 : 0);
    if (!d) return;
    if (!d->source && d->source_path) {   /* the file as it is now (quietly: the caller's error text stays) */
        size_t n = 0;
        FILE *f = gf__open_whole(d->source_path, &n);
        if (f && (text = (char *)GPUFLOW_MALLOC(n + 1)) != NULL) {
            if (fread(text, 1, n, f) == n) text[n] = 0;
            else { GPUFLOW_FREE(text); text = NULL; }
        }
        if (f) fclose(f);
    }
    gf__rec_str(d->source ? d->source : text);
    GPUFLOW_FREE(text);
    gf__rec_str(d->source_path);
#define GF__REC_TEXT(field) gf__rec_str(d->field);
#define GF__REC_BYTES(field, size) gf__rec_blob(d->field, d->size, r == GF_OK);
    GF__MODULE_DESC_FORMS(GF__REC_TEXT, GF__REC_BYTES)
#undef GF__REC_TEXT
#undef GF__REC_BYTES
    gf__rec_u32(d->stub_kernels ? (uint32_t)names : GF__REC_NULL);
    for (i = 0; i < names; i++) gf__rec_str(d->stub_kernels[i].name);
}
/* The arguments only when the launch took them: a refused launch may not have looked at args,
   which then need not hold count entries (nor a value its size). */
static void gf__rec_launch(const gf_launch_dims *dims, const gf_arg *args, int count, int checked) {   /* checked: the call checked args */
    int i, n = checked && args && count > 0 && count <= GF__REC_MAX_ARGS ? count : 0;
    for (i = 0; i < 3; i++) gf__rec_u32(dims->grid[i]);
    for (i = 0; i < 3; i++) gf__rec_u32(dims->block[i]);
    gf__rec_u64(dims->shared_bytes);
    gf__rec_u32((uint32_t)count);
    gf__rec_u32(args ? 1 : 0);
    gf__rec_u32((uint32_t)n);
    for (i = 0; i < n; i++) {
        gf__rec_u32(gf__rec_id(args[i].buffer));
        gf__rec_blob(args[i].value, args[i].size, 1);
    }
}
static void gf__rec_copy_2d(const gf_copy_2d *c, gf_result r) {
    uint64_t span = 0;
    gf__rec_u32(c ? 1 : 0);
    if (!c) return;
    if (r == GF_OK && c->height && c->width) span = (uint64_t)(c->height - 1) * c->src_pitch + c->width;   /* checked by the call */
    gf__rec_u32(gf__rec_id(c->dst)); gf__rec_u64(c->dst_offset); gf__rec_u64(c->dst_pitch);
    gf__rec_u32(gf__rec_id(c->src)); gf__rec_u64(c->src_offset); gf__rec_u64(c->src_pitch);
    gf__rec_u64(c->width); gf__rec_u64(c->height);
    gf__rec_blob(c->dst_host, 0, 0);
    if (span && gf__rec_late_token) gf__rec_blob_late(span);
    else gf__rec_blob(c->src_host, span, r == GF_OK);
}

/* One call's arguments, as its row spells them (gf__rec.lock held). */
static void gf__rec_args(gf__rec_call call, gf_result r, va_list ap) {
    const char *a;
    for (a = gf__rec_calls[call].args; *a; a++) switch (strchr(GF__REC_OBJECTS, *a) ? 'D' : strchr(GF__REC_MADE, *a) ? 'd' : *a) {
    case 'D':
        gf__rec_u32(gf__rec_id(va_arg(ap, const void *)));
        break;
    case 'x': {
        const void *p = va_arg(ap, const void *);
        uint32_t id = gf__rec_id(p);
        gf__rec_u32(id);
        /* a graph's own buffer (made in its capture) outlives this free: its number stays */
        if (call == GF__RC_buffer_destroy_async && id != GF__REC_UNKNOWN && gf__is(p, GF__T_BUFFER) && ((const gf_buffer *)p)->graph_owner) break;
        if (p && id != GF__REC_UNKNOWN) { gf__rec_forget(p); gf__rec_retired = p; gf__rec_retired_id = id; }
        break;
    }
    case 'd': {
        const void *out = va_arg(ap, const void *);
        void *made = NULL;
        if (out && r == GF_OK) memcpy(&made, out, sizeof made);
        gf__rec_u32(gf__rec_new(made));
        break;
    }
    case 'i': gf__rec_u32((uint32_t)va_arg(ap, int)); break;
    case 'u': gf__rec_u32(va_arg(ap, unsigned)); break;
    case 'z': gf__rec_u64(va_arg(ap, size_t)); break;
    case 'U': gf__rec_u64(va_arg(ap, uint64_t)); break;
    case 'c': gf__rec_str(va_arg(ap, const char *)); break;
    case '0': {   /* the handle itself is not written: it means nothing in another process */
        const gf_external_memory_desc *d = va_arg(ap, const gf_external_memory_desc *);
        gf__rec_u32(d ? 1 : 0);
        if (d) { gf__rec_u32((uint32_t)d->type); gf__rec_u64(d->size); gf__rec_u64(d->offset); gf__rec_u32(d->flags); }
        break;
    }
    case '1': {
        const gf_semaphore_desc *d = va_arg(ap, const gf_semaphore_desc *);
        gf__rec_u32(d ? 1 : 0);
        if (d) { gf__rec_u32((uint32_t)d->type); gf__rec_u32((uint32_t)d->timeline); }
        break;
    }
    case 'h': case 'o': case 'y': {   /* the bytes themselves go straight from the caller's memory to the file */
        const void *p = va_arg(ap, const void *);
        size_t n = va_arg(ap, size_t);
        int data = p && n && r == GF_OK && (*a == 'h' || (*a == 'o' && gf__rec.device_to_host));
        if (data && *a == 'h' && gf__rec_late_token) gf__rec_blob_late(n);
        else if (data) gf__rec_blob_in_place(p, n);
        else gf__rec_blob(p, n, 0);
        break;
    }
    case '6': {
        const gf_stream_desc *d = va_arg(ap, const gf_stream_desc *);
        gf__rec_u32(d ? 1 : 0);
        if (d) { gf__rec_str(d->label); gf__rec_u32((uint32_t)d->priority); }
        break;
    }
    case '7': {
        const gf_buffer_desc *d = va_arg(ap, const gf_buffer_desc *);
        gf__rec_u32(d ? 1 : 0);
        if (d) { gf__rec_u64(d->size); gf__rec_u32((uint32_t)d->managed); gf__rec_u32((uint32_t)d->exportable); gf__rec_u32(gf__rec_id(d->budget)); }
        break;
    }
    case '9': {
        const gf_budget_desc *d = va_arg(ap, const gf_budget_desc *);
        uint32_t warn;
        gf__rec_u32(d ? 1 : 0);
        if (!d) break;
        memcpy(&warn, &d->warn_at, sizeof warn);
        gf__rec_str(d->label); gf__rec_u64(d->limit); gf__rec_u32(warn);
        break;
    }
    case '8': {
        const gf_event_pool_desc *d = va_arg(ap, const gf_event_pool_desc *);
        gf__rec_u32(d ? 1 : 0);
        if (d) { gf__rec_u32((uint32_t)d->capacity); gf__rec_u32((uint32_t)d->timing_capacity); }
        break;
    }
    case 'l': gf__rec_module(va_arg(ap, const gf_module_desc *), r); break;
    case 'a': {
        const gf_launch_dims *dims = va_arg(ap, const gf_launch_dims *);
        const gf_arg *args = va_arg(ap, const gf_arg *);
        int count = va_arg(ap, int);
        /* a launch that failed after its checks (in gf__submit: a fault, the driver) has
           arguments as good as a successful one's, and its replay must reach the same failure */
        int checked = r == GF_OK || (call == GF__RC_launch && (r == GF_ERROR_OUT_OF_MEMORY || r == GF_ERROR_DRIVER || r == GF_ERROR_DEVICE_LOST));
        gf__rec_launch(dims, args, count, checked);
        break;
    }
    case '2': gf__rec_copy_2d(va_arg(ap, const gf_copy_2d *), r); break;
    case 'f': (void)va_arg(ap, gf_callback); (void)va_arg(ap, void *); break;
    case '3': {
        const gf_acquire_hint *h = va_arg(ap, const gf_acquire_hint *);
        gf__rec_u32(h ? 1 : 0);
        if (h) { gf__rec_u32((uint32_t)h->priority); gf__rec_u32((uint32_t)h->workload); }
        break;
    }
    case '4': {
        const gf_stream_pool_desc *d = va_arg(ap, const gf_stream_pool_desc *);
        gf__rec_u32(d ? 1 : 0);
        if (d) { gf__rec_u32((uint32_t)d->count); gf__rec_u32((uint32_t)d->strategy); gf__rec_str(d->label); gf__rec_u32((uint32_t)d->measure_completion); }
        break;
    }
    case '5': {
        gf_stream *const *streams = va_arg(ap, gf_stream *const *);
        int i, count = va_arg(ap, int), n = streams && count > 0 && count <= GF__REC_MAX_ARGS ? count : 0;
        gf__rec_u32((uint32_t)count);
        gf__rec_u32(streams ? 1 : 0);
        for (i = 0; i < n; i++) gf__rec_u32(gf__rec_id(streams[i]));
        break;
    }
    case 'n': (void)va_arg(ap, const void *); break;
    default: GPUFLOW_ASSERT(!"a letter of GF__RECORDED_CALLS without its writer");
    }
}

/* Whether the call named fn (a destroy) just refused: its refusals' messages, and only they,
   begin with its name (a failure met while it goes on, a stream's kernel's say, do not). The
   caller cleared the error text before the call. */
static int gf__refused(const char *fn) {
    size_t n = strlen(fn);
    return !strncmp(gf__error_text, fn, n) && gf__error_text[n] == ':';
}

/* The record built in gf__rec.buf goes to the file, unless it would pass the size limit: then
   a CUT record ends the recording. Returns what to warn about (after the lock), or NULL. */
static const char *gf__rec_close(uint16_t last);
static const char *gf__rec_write_out(int flush);
/* Ends the recording early (gf__rec.lock held) and keeps why, for gf_record_stop to tell. */
static const char *gf__rec_cut(const char *stop) {
    (void)gf__rec_close(GF__RC_CUT);   /* the file is marked cut short if it can be; stop says why it ended */
    gf__copy_str(gf__rec.stopped_why, sizeof gf__rec.stopped_why, stop);
    return stop;
}
static const char *gf__rec_emit(int flush) {   /* the record to the file; a failure ends the recording */
    const char *stop = gf__rec_write_out(flush);
    return stop ? gf__rec_cut(stop) : NULL;
}
static const char *gf__rec_write_out(int flush) {   /* NULL, or why it was not written */
    size_t i, n = gf__rec.len, head = gf__rec.blob ? gf__rec.blob_at : n;
    uint64_t total = n + (gf__rec.blob ? gf__rec.blob_n : 0);
    const char *stop = NULL;
    int err;
    if (gf__rec.numbers_spent) stop = "the recording numbered 2^31 - 1 objects (each event pool acquire is one), as many as a replay takes: recording stopped";
    else if (gf__rec.broken) stop = "out of host memory for a record: recording stopped";
    else if (total > gf__rec.limit - gf__rec.written || total - 4 > 0xffffffffu) {
        stop = "the recording reached its size limit (gf_record_desc.max_bytes, GPUFLOW_RECORD_LIMIT) and stopped there";
    } else {
        for (i = 0; i < 4; i++) gf__rec.buf[i] = (unsigned char)((total - 4) >> (8 * i));
        err = gf__rec_file_put(gf__rec.file, gf__rec.buf, head);
        if (!err && gf__rec.blob) err = gf__rec_file_put(gf__rec.file, gf__rec.blob, (size_t)gf__rec.blob_n);
        if (!err && gf__rec.blob) err = gf__rec_file_put(gf__rec.file, gf__rec.buf + head, n - head);
        if (!err && flush) err = gf__rec_file_drain(gf__rec.file);
        if (err) stop = gf__rec_file_why("cannot write the recording: recording stopped", err);
        else gf__rec.written += total;
    }
    gf__rec.blob = NULL;
    return stop;
}
static void gf__rec_header(uint16_t call, int thread, gf_result r) {   /* its size is filled in by gf__rec_emit */
    gf__rec.len = 0;
    gf__rec.broken = 0;
    gf__rec.blob = NULL;
    gf__rec_u32(0);
    gf__rec_le(call, 2);
    gf__rec_le((uint64_t)thread, 2);
    gf__rec_u64(gf__now_ns() - gf__rec.t0);
    gf__rec_u32((uint32_t)r);
}
static void gf__rec_begin(uint16_t call, gf_result r) {   /* a call's header, from the calling thread */
    if (gf__rec_thread_of != gf__rec.recording) { gf__rec_thread = ++gf__rec.threads; gf__rec_thread_of = gf__rec.recording; }
    gf__rec_retired = NULL;
    gf__rec_header(call, gf__rec_thread, r);
}
/* Snapshots. An async copy from host memory reads that memory when its stream reaches it, and
   earlier work on the stream may still write it (a copy to the host, a callback), so the bytes
   as the call returns may not be the ones copied. While recording, a host callback queued on
   the stream just before the copy takes them as the copy will: a BYTES record, numbered, that
   the copy's record names. Memory a backend stages at the call (pageable memory on CUDA and
   HIP) is read there, so its bytes are taken at the call. A snapshot is on gf__rec.late from
   its queueing until its callback has run (or its device is closed: a driver may drop the
   callbacks of a stream in error); it is taken only while `wanted`, which a failed copy, a
   recording cut by its limit and the next gf_record_start clear (then its memory may be the
   program's again: it is not read, and the replay copies zeros for it). A recording stopped
   with snapshots wanted keeps its file open as gf__rec.tail, its END written, and they follow
   the END as their streams reach them (a replay finds BYTES records anywhere in the file);
   the last one closes it. The snapshot's memory stays valid to then: the copy reads it after. */
typedef struct gf__rec_late {
    struct gf__rec_late *prev, *next;
    uint64_t number; int wanted;
    int recording;                  /* which one it belongs to */
    gf_device *dev; const void *p; uint64_t n;
} gf__rec_late;
static void gf__rec_late_unlink(gf__rec_late *l) {   /* gf__rec.lock held */
    if (l->prev) l->prev->next = l->next; else gf__rec.late = l->next;
    if (l->next) l->next->prev = l->prev;
}
static int gf__rec_late_wanted_of(int recording) {   /* gf__rec.lock held */
    gf__rec_late *l;
    for (l = gf__rec.late; l; l = l->next) if (l->wanted && l->recording == recording) return 1;
    return 0;
}
static void gf__rec_late_unwant(int recording) {   /* its snapshots are not taken (gf__rec.lock held) */
    gf__rec_late *l;
    for (l = gf__rec.late; l; l = l->next) if (l->recording == recording) l->wanted = 0;
}
/* The stopped recording's file closes once it waits for no snapshot (gf__rec.lock held); all:
   whatever it waits for. */
static void gf__rec_idle(void) {   /* with no file open, the record buffer goes too (gf__rec.lock held) */
    if (gf__rec.file || gf__rec.tail) return;
    GPUFLOW_FREE(gf__rec.buf);
    gf__rec.buf = NULL;
    gf__rec.len = gf__rec.cap = 0;
}
static void gf__rec_tail_settle(int all) {
    if (!gf__rec.tail || (!all && gf__rec_late_wanted_of(gf__rec.tail_of))) return;
    gf__rec_late_unwant(gf__rec.tail_of);
    (void)gf__rec_file_close(gf__rec.tail);   /* its END is written: a failure here loses a snapshot, which replays as zeros */
    gf__rec.tail = NULL;
    gf__rec_idle();
}
/* A snapshot built in gf__rec.buf, to the stopped recording's file (gf__rec.lock held): the
   writer's file and counters are the tail's for the one write. Past the limit it is left out. */
static void gf__rec_tail_write(void) {
    gf__rec_file *file = gf__rec.file;
    uint64_t written = gf__rec.written, limit = gf__rec.limit;
    gf__rec.file = gf__rec.tail; gf__rec.written = gf__rec.tail_written; gf__rec.limit = gf__rec.tail_limit;
    (void)gf__rec_write_out(1);
    gf__rec.tail_written = gf__rec.written;
    gf__rec.file = file; gf__rec.written = written; gf__rec.limit = limit;
}
static void gf__rec_late_run(void *user) {   /* the stream's callback */
    gf__rec_late *l = (gf__rec_late *)user;
    const char *why = NULL;
    char path[512];
    int tail;
    gf__spin_lock(&gf__rec.lock);
    gf__rec_late_unlink(l);
    tail = gf__rec.tail && l->recording == gf__rec.tail_of;
    if (l->wanted && (tail || (gf__rec.file && l->recording == gf__rec.recording))) {
        gf__rec_header(GF__RC_BYTES, 0, GF_OK);
        gf__rec_u64(l->number);
        gf__rec_blob_in_place(l->p, l->n);
        if (tail) gf__rec_tail_write();
        else if ((why = gf__rec_write_out(0)) != NULL) why = gf__rec_cut(why);
    }
    if (tail) gf__rec_tail_settle(0);
    gf__copy_str(path, sizeof path, gf__rec.path);
    gf__spin_unlock(&gf__rec.lock);
    if (why) gf__notice(GF_LOG_WARNING, "gpuflow: recording to %s: %s", path, why);
    GPUFLOW_FREE(l);
}
/* At a device's close, once its streams are gone: callbacks that never ran never will. */
static void gf__rec_late_forget(gf_device *dev) {
    gf__rec_late *l, *next;
    gf__spin_lock(&gf__rec.lock);
    for (l = gf__rec.late; l; l = next) {
        next = l->next;
        if (l->dev == dev) { gf__rec_late_unlink(l); GPUFLOW_FREE(l); }
    }
    gf__rec_tail_settle(0);
    gf__spin_unlock(&gf__rec.lock);
}
/* s->lock held, c about to run on s: the snapshot's number; 0 (none: the bytes as the call
   returns) without memory or a callback. */
static uint64_t gf__rec_late_enqueue(gf_stream *s, const gf__cmd *c) {
    GF__HELD(&s->lock);
    const void *p = NULL;
    uint64_t n = 0;
    gf__rec_late *l;
    gf_result r;
    gf__rec_late_wanted = 0;   /* one a call */
    if (c->kind == GF__CMD_COPY && c->as.copy.kind == GF__COPY_H2D) { p = c->as.copy.host; n = c->as.copy.bytes; }
    if (c->kind == GF__CMD_COPY_2D && c->as.copy_2d.src_host && !c->as.copy_2d.src && c->as.copy_2d.height) {
        p = c->as.copy_2d.src_host;
        n = (uint64_t)(c->as.copy_2d.height - 1) * c->as.copy_2d.src_pitch + c->as.copy_2d.width;
    }
    if (!p || !n || gf__host_staged(s, p) || !(l = (gf__rec_late *)GPUFLOW_MALLOC(sizeof *l))) return 0;
    gf__spin_lock(&gf__rec.lock);
    if (!gf__rec.file) { gf__spin_unlock(&gf__rec.lock); GPUFLOW_FREE(l); return 0; }
    l->number = ++gf__rec.late_count;
    l->recording = gf__rec.recording;
    l->dev = s->dev; l->p = p; l->n = n;
    l->prev = NULL; l->next = gf__rec.late; l->wanted = 1;
    if (gf__rec.late) gf__rec.late->prev = l;
    gf__rec.late = l;
    gf__rec_late_token = l->number;
    gf__spin_unlock(&gf__rec.lock);
    gf__alloc_own++;   /* the backend's callback item: recording changes no fault count */
    r = s->dev->be->host_callback(s, gf__rec_late_run, l);
    gf__alloc_own--;
    if (r == GF_OK) return gf__rec_late_token;   /* l may be gone already */
    gf__spin_lock(&gf__rec.lock);
    gf__rec_late_unlink(l);
    gf__spin_unlock(&gf__rec.lock);
    gf__rec_late_token = 0;
    GPUFLOW_FREE(l);
    return 0;
}
/* The copy failed after its snapshot was queued: the memory is the program's again. */
static void gf__rec_late_cancel(uint64_t number) {
    gf__rec_late *l;
    gf__spin_lock(&gf__rec.lock);
    for (l = gf__rec.late; l && l->number != number; l = l->next) {}
    if (l) l->wanted = 0;   /* its callback frees it */
    gf__rec_tail_settle(0);
    gf__spin_unlock(&gf__rec.lock);
    gf__rec_late_token = 0;
}

/* Ends the file with an END or CUT record (gf__rec.lock held); NULL, or what went wrong. A
   recording that ends with snapshots still queued keeps its file as the tail, for them (a cut
   one takes none: it is past its limit). */
static const char *gf__rec_close(uint16_t last) {
    const char *why = NULL;
    int err = 0;
    if (!gf__rec.file) return NULL;
    if (last != GF__RC_END) gf__rec_late_unwant(gf__rec.recording);
    gf__rec_begin(last, GF_OK);   /* no size check: the limit leaves room for it */
    if (!gf__rec.broken) gf__rec.buf[0] = (unsigned char)(gf__rec.len - 4);
    if (gf__rec.broken) why = "out of host memory for the recording's last record";
    else if ((err = gf__rec_file_put(gf__rec.file, gf__rec.buf, gf__rec.len)) != 0) why = gf__rec_file_why("cannot write the recording's last record", err);
    gf__rec_tail_settle(1);   /* an earlier one's (gf_record_start closed it already) */
    if (!why && gf__rec_late_wanted_of(gf__rec.recording) && (err = gf__rec_file_drain(gf__rec.file)) != 0)
        why = gf__rec_file_why("cannot write the recording", err);
    if (!why && gf__rec_late_wanted_of(gf__rec.recording)) {
        gf__rec.tail = gf__rec.file;
        gf__rec.tail_of = gf__rec.recording;
        gf__rec.tail_written = gf__rec.written + gf__rec.len;
        gf__rec.tail_limit = gf__rec.limit + 64;   /* what the END's room was for */
    } else {
        gf__rec_late_unwant(gf__rec.recording);
        if ((err = gf__rec_file_close(gf__rec.file)) != 0 && !why) why = gf__rec_file_why("cannot close the recording", err);
    }
    gf__rec.file = NULL;
    gf__atomic_store_int(&gf__rec_on, 0);
    GPUFLOW_FREE(gf__rec.map);
    gf__rec.map = NULL;
    gf__rec.map_cap = gf__rec.map_count = 0;
    gf__rec_idle();
    return why;
}

/* A destroy the call refused: its object lives on, under the number it had. */
static void gf__rec_unretire(void) {
    gf__rec_slot *slot;
    if (!gf__rec_retired) return;
    gf__spin_lock(&gf__rec.lock);
    if (gf__rec.file && !gf__rec_find(gf__rec_retired) && gf__rec_new(gf__rec_retired) && (slot = gf__rec_find(gf__rec_retired)) != NULL) {
        slot->id = gf__rec_retired_id;
        gf__rec.next_id--;   /* gf__rec_new took one */
    }
    gf__rec_retired = NULL;
    gf__spin_unlock(&gf__rec.lock);
}
/* Around a destroy's body: whether it refused, told by its message, without changing the
   caller's error text when it did not fail. */
static void gf__rec_refusal_begin(char *saved) {
    memcpy(saved, gf__error_text, sizeof gf__error_text);
    gf__error_text[0] = 0;
}
static void gf__rec_refusal_end(const char *saved, const char *fn) {
    if (gf__refused(fn)) gf__rec_unretire();
    else if (!gf__error_text[0]) memcpy(gf__error_text, saved, sizeof gf__error_text);
    gf__rec_retired = NULL;
}

/* Events and streams gpuflow made for itself (a flow's lane edges, a captured flow's fork
   streams) that a successful call names: the first time, a record that makes them (an
   event_create, a stream_create with its label) goes before the call's, so that the replay
   has them and makes the same records, waits and forks (gf__rec.lock held). Only the leading
   objects of a row are looked at (the rows that name events and streams start with them).
   Returns what to warn of. */
static const char *gf__rec_introduce(gf__rec_call call, va_list ap) {
    const char *a, *why = NULL;
    for (a = gf__rec_calls[call].args; *a && !why; a++) {
        const void *obj;
        if (!strchr(GF__REC_OBJECTS, *a)) break;
        obj = va_arg(ap, const void *);
        if (!obj || (*a != 'E' && *a != 'S') || gf__rec_find(obj)) continue;
        if (*a == 'E') {
            const gf_event *ev = (const gf_event *)obj;
            gf__rec_begin(GF__RC_event_create, GF_OK);
            gf__rec_u32(gf__rec_id(ev->dev));
            gf__rec_u32(ev->flags);
        } else {
            const gf_stream *s = (const gf_stream *)obj;
            gf__rec_begin(GF__RC_stream_create, GF_OK);
            gf__rec_u32(gf__rec_id(s->dev));
            gf__rec_u32(1);
            gf__rec_str(s->label);
            gf__rec_u32((uint32_t)s->priority);
        }
        gf__rec_u32(gf__rec_new(obj));
        why = gf__rec_emit(0);
    }
    return why;
}
/* The buffer of a captured flow's condition slots, made as gpuflow made it: a flow_slots record
   of its size makes it in the replay too (kept by the graph, its handle freed at the capture's
   end). */
static void gf__rec_made_buffer(const gf_buffer *buf) {
    const char *why = NULL;
    gf__spin_lock(&gf__rec.lock);
    if (gf__rec.file && !gf__rec_find(buf)) {
        gf__rec_begin(GF__RC_flow_slots, GF_OK);
        gf__rec_u32(gf__rec_id(buf->dev));
        gf__rec_u64(buf->size);
        gf__rec_u32(gf__rec_new(buf));
        why = gf__rec_emit(0);
    }
    gf__spin_unlock(&gf__rec.lock);
    if (why) gf__notice(GF_LOG_WARNING, "gpuflow: recording: %s", why);
}
/* An object gpuflow frees on its own (not through a recorded destroy): its number is retired. */
static void gf__rec_gone(const void *obj) {
    gf__spin_lock(&gf__rec.lock);
    if (gf__rec.file) gf__rec_forget(obj);
    gf__spin_unlock(&gf__rec.lock);
}

static void gf__rec_write(gf__rec_call call, int result, ...) {   /* an int: the last named argument of a va_list is not promoted */
    gf_result r = (gf_result)result;
    const char *why = NULL;
    char path[512];
    va_list ap;
    gf__spin_lock(&gf__rec.lock);
    if (gf__rec.file && r == GF_OK && strpbrk(gf__rec_calls[call].args, "ES")) {
        va_start(ap, result);
        why = gf__rec_introduce(call, ap);
        va_end(ap);
    }
    if (gf__rec.file) {   /* else stopped since the caller looked */
        gf__rec_begin((uint16_t)call, r);
        va_start(ap, result);
        gf__rec_args(call, r, ap);
        va_end(ap);
        why = gf__rec_emit(gf__rec_calls[call].flags & GF__RCF_FLUSH);
    }
    gf__copy_str(path, sizeof path, gf__rec.path);
    gf__spin_unlock(&gf__rec.lock);
    if (why) gf__notice(GF_LOG_WARNING, "gpuflow: recording to %s: %s", path, why);   /* the logger may call gpuflow: not under the lock */
}

static gf_result gf__call_device_open(gf_backend b, int index, gf_device **out);
static void gf__call_device_close(gf_device *dev);
static gf_result gf__call_device_synchronize(gf_device *dev);
static gf_result gf__call_device_set_memory_limit(gf_device *dev, size_t bytes);
static gf_result gf__call_buffer_create(gf_device *dev, size_t bytes, gf_buffer **out);
static gf_result gf__call_buffer_create_desc(gf_device *dev, const gf_buffer_desc *desc, gf_buffer **out);
static void gf__call_buffer_destroy(gf_buffer *buf);
static gf_result gf__call_buffer_view(gf_buffer *buf, size_t offset, size_t bytes, gf_buffer **out);
static gf_result gf__call_copy_to_device(gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes);
static gf_result gf__call_copy_to_host(void *dst, gf_buffer *src, size_t src_offset, size_t bytes);
static gf_result gf__call_copy_to_device_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes);
static gf_result gf__call_copy_to_host_async(gf_stream *s, void *dst, gf_buffer *src, size_t src_offset, size_t bytes);
static gf_result gf__call_copy_buffer_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, gf_buffer *src, size_t src_offset, size_t bytes);
static gf_result gf__call_fill_async(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes);
static gf_result gf__call_fill16_async(gf_stream *s, gf_buffer *buf, size_t offset, uint16_t value, size_t count);
static gf_result gf__call_fill32_async(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, size_t count);
static gf_result gf__call_copy_2d_async(gf_stream *s, const gf_copy_2d *copy);
static gf_result gf__call_prefetch_async(gf_stream *s, gf_buffer *buf, int to_device);
static gf_result gf__call_buffer_create_async(gf_stream *s, size_t bytes, gf_buffer **out);
static gf_result gf__call_buffer_destroy_async(gf_stream *s, gf_buffer *buf);
static gf_result gf__call_buffer_record_stream(gf_buffer *buf, gf_stream *s);
static gf_result gf__call_stream_create(gf_device *dev, const gf_stream_desc *desc, gf_stream **out);
static void gf__call_stream_destroy(gf_stream *s);
static gf_result gf__call_stream_synchronize(gf_stream *s);
static gf_result gf__call_stream_synchronize_timeout(gf_stream *s, unsigned timeout_ms);
static gf_result gf__call_stream_query(gf_stream *s);
static gf_result gf__call_stream_wait_event(gf_stream *s, gf_event *ev);
static gf_result gf__call_stream_wait_stream(gf_stream *waiter, gf_stream *other);
static gf_result gf__call_stream_add_callback(gf_stream *s, gf_callback fn, void *user);
static gf_result gf__call_event_create(gf_device *dev, unsigned flags, gf_event **out);
static void gf__call_event_destroy(gf_event *ev);
static gf_result gf__call_event_record(gf_event *ev, gf_stream *s);
static gf_result gf__call_event_synchronize(gf_event *ev);
static gf_result gf__call_event_synchronize_timeout(gf_event *ev, unsigned timeout_ms);
static gf_result gf__call_event_query(gf_event *ev);
static gf_result gf__call_event_elapsed_ms(gf_event *start, gf_event *end, float *ms);
static gf_result gf__call_event_pool_create(gf_device *dev, const gf_event_pool_desc *desc, gf_event_pool **out);
static gf_result gf__call_event_pool_acquire(gf_event_pool *pool, unsigned flags, gf_event **out);
static gf_result gf__call_event_pool_release(gf_event_pool *pool, gf_event *ev);
static void gf__call_event_pool_destroy(gf_event_pool *pool);
static gf_result gf__call_module_load(gf_device *dev, const gf_module_desc *desc, gf_module **out);
static gf_result gf__call_kernel_get(gf_module *mod, const char *name, gf_kernel **out);
static void gf__call_module_destroy(gf_module *mod);
static gf_result gf__call_launch(gf_stream *s, gf_kernel *k, gf_launch_dims dims, const gf_arg *args, int count);
static gf_result gf__call_stream_begin_capture(gf_stream *s, gf_capture_mode mode);
static gf_result gf__call_stream_end_capture(gf_stream *s, gf_graph **out);
static gf_result gf__call_graph_launch(gf_graph *g, gf_stream *s);
static gf_result gf__call_graph_update(gf_graph *target, gf_graph *from);
static void gf__call_graph_destroy(gf_graph *g);
static gf_result gf__call_race_check_enable(gf_device *dev, unsigned flags);
static gf_result gf__call_profiler_enable(gf_device *dev, unsigned flags);
static gf_result gf__call_faults_set(const char *spec);
static gf_result gf__call_module_reload(gf_module *mod, const gf_module_desc *desc);
static gf_result gf__call_budget_create(gf_device *dev, const gf_budget_desc *desc, gf_budget **out);
static void gf__call_budget_destroy(gf_budget *budget);
static gf_result gf__call_graph_set_kernel_args(gf_graph *g, int launch_index, const gf_arg *args, int count);
static gf_result gf__call_stream_begin_capture_pool(gf_stream *s, gf_capture_mode mode, gf_graph_pool *pool);
static gf_result gf__call_graph_pool_create(gf_device *dev, gf_graph_pool **out);
static void gf__call_graph_pool_destroy(gf_graph_pool *pool);
static gf_result gf__call_stream_pool_create(gf_device *dev, const gf_stream_pool_desc *desc, gf_stream_pool **out);
static gf_result gf__call_stream_pool_acquire(gf_stream_pool *pool, const gf_acquire_hint *hint, gf_stream **out);
static gf_result gf__call_stream_pool_acquire_ready(gf_stream_pool *pool, unsigned timeout_ms, gf_stream **out);
static gf_result gf__call_stream_pool_release(gf_stream_pool *pool, gf_stream *s);
static gf_result gf__call_stream_pool_synchronize(gf_stream_pool *pool);
static void gf__call_stream_pool_destroy(gf_stream_pool *pool);
static gf_result gf__call_stream_set_create(gf_device *dev, int depth, const char *label, gf_stream_set **out);
static gf_stream *gf__call_stream_set_get(gf_stream_set *set, size_t i);
static gf_result gf__call_stream_set_next(gf_stream_set *set, size_t i, gf_stream **out);
static gf_result gf__call_stream_set_end_frame(gf_stream_set *set);
static gf_result gf__call_stream_set_wait_frames(gf_stream_set *set, int max_in_flight, unsigned timeout_ms);
static gf_result gf__call_stream_set_synchronize(gf_stream_set *set);
static void gf__call_stream_set_destroy(gf_stream_set *set);
static gf_result gf__call_barrier(gf_stream *const *streams, int count);
static gf_result gf__call_synchronize_all(gf_stream *const *streams, int count, double *elapsed_ms);
static gf_result gf__call_device_open_native(gf_backend b, const gf_native_device *native, gf_device **out);
static gf_result gf__call_stream_wrap(gf_device *dev, void *native_stream, const gf_stream_desc *desc, gf_stream **out);
static gf_result gf__call_buffer_wrap(gf_device *dev, uint64_t native_buffer, size_t bytes, gf_buffer **out);
static gf_result gf__call_buffer_import(gf_device *dev, const gf_external_memory_desc *desc, gf_buffer **out);
static gf_result gf__call_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out);
static gf_result gf__call_semaphore_import(gf_device *dev, const gf_semaphore_desc *desc, gf_semaphore **out);
static gf_result gf__call_semaphore_create(gf_device *dev, int timeline, gf_semaphore **out);
static gf_result gf__call_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out);
static gf_result gf__call_semaphore_signal_async(gf_stream *s, gf_semaphore *sem, uint64_t value);
static gf_result gf__call_semaphore_wait_async(gf_stream *s, gf_semaphore *sem, uint64_t value);
static void gf__call_semaphore_destroy(gf_semaphore *sem);
static gf_result gf__call_device_enable_peer(gf_device *a, gf_device *b);
static gf_result gf__call_device_trim(gf_device *dev, size_t keep_bytes);
static gf_result gf__call_device_reset_peak(gf_device *dev);
static void gf__call_range_push(gf_stream *s, const char *name);
static void gf__call_range_pop(gf_stream *s);

/* Each recorded entry point is its body (gf__call_*) and, while recording, one record: after
   the body returns (its result and what it made known), or for a destroy or a release, as it
   starts. */
#define GF__RECORDED(name, body, ...) GF__RECORDED_AS(name, 0, body, __VA_ARGS__)
/* snapshot: an async copy from host memory, whose bytes are taken as its stream reaches it */
#define GF__RECORDED_AS(name, snapshot, body, ...) \
    gf_result r_; \
    if (!gf__atomic_load_int(&gf__rec_on)) return body; \
    if (snapshot) { gf__rec_late_wanted = !gf__rec_depth; gf__rec_late_token = 0; } \
    gf__rec_depth++; r_ = body; gf__rec_depth--; \
    if (snapshot) gf__rec_late_wanted = 0; \
    if (!gf__rec_depth) gf__rec_write(GF__RC_##name, r_, __VA_ARGS__); \
    if (snapshot) gf__rec_late_token = 0; \
    return r_
#define GF__RECORDED_VOID(name, body, ...) \
    char saved_[sizeof gf__error_text]; \
    if (!gf__atomic_load_int(&gf__rec_on)) { body; return; } \
    if (gf__rec_depth) { gf__rec_depth++; body; gf__rec_depth--; return; } \
    gf__rec_write(GF__RC_##name, GF_OK, __VA_ARGS__); \
    gf__rec_refusal_begin(saved_); \
    gf__rec_depth++; body; gf__rec_depth--; \
    gf__rec_refusal_end(saved_, "gf_" #name)
/* A release (and a stream-ordered free) is written as it starts, with no result: another
   thread may be given the same event, stream or buffer the moment it is back, and what it makes
   of it must come after in the file. */
#define GF__RECORDED_FIRST(name, body, ...) \
    gf_result r_; \
    if (!gf__atomic_load_int(&gf__rec_on)) return body; \
    if (!gf__rec_depth) gf__rec_write(GF__RC_##name, GF_OK, __VA_ARGS__); \
    gf__rec_depth++; r_ = body; gf__rec_depth--; \
    if (r_ != GF_OK) gf__rec_unretire();   /* a refused free keeps its buffer's number */ \
    gf__rec_retired = NULL; \
    return r_
#define GF__P(p) ((const void *)(p))

/* GPUFLOW_RECORD starts inside the first open, so an open always counts as inside. A native
   open is written with the ordinal it names (HIP's; 0 elsewhere), which a replay opens. */
static gf_result gf__recorded_device_open(gf_backend b, int index, int by_native, const gf_native_device *native, gf_device **out) {
    gf_result r;
    gf__rec_depth++; r = by_native ? gf__call_device_open_native(b, native, out) : gf__call_device_open(b, index, out); gf__rec_depth--;
    if (!gf__rec_depth && gf__atomic_load_int(&gf__rec_on)) {
        char spec[sizeof gf__rec.env_faults];
        int pending, result;
        gf__rec_write(by_native ? GF__RC_device_open_native : GF__RC_device_open, r, (int)(r == GF_OK && out ? gf_device_backend(*out) : b),
                      by_native ? (native ? native->ordinal : 0) : index, GF__P(out));
        gf__spin_lock(&gf__rec.lock);
        pending = gf__rec.env_faults_pending;
        gf__rec.env_faults_pending = 0;
        result = gf__rec.env_faults_result;
        gf__copy_str(spec, sizeof spec, gf__rec.env_faults);
        gf__spin_unlock(&gf__rec.lock);
        if (pending) gf__rec_write(GF__RC_faults_set, result, (const char *)spec);
    }
    return r;
}
GPUFLOW_IMPL gf_result gf_device_open(gf_backend b, int index, gf_device **out) { return gf__recorded_device_open(b, index, 0, NULL, out); }
GPUFLOW_IMPL gf_result gf_device_open_native(gf_backend b, const gf_native_device *native, gf_device **out) {
    return gf__recorded_device_open(b, 0, 1, native, out);
}
GPUFLOW_IMPL void gf_device_close(gf_device *dev) { GF__RECORDED_VOID(device_close, gf__call_device_close(dev), GF__P(dev)); }
GPUFLOW_IMPL gf_result gf_device_synchronize(gf_device *dev) { GF__RECORDED(device_synchronize, gf__call_device_synchronize(dev), GF__P(dev)); }
GPUFLOW_IMPL gf_result gf_device_set_memory_limit(gf_device *dev, size_t bytes) {
    GF__RECORDED(device_set_memory_limit, gf__call_device_set_memory_limit(dev, bytes), GF__P(dev), bytes);
}
GPUFLOW_IMPL gf_result gf_buffer_create(gf_device *dev, size_t bytes, gf_buffer **out) {
    GF__RECORDED(buffer_create, gf__call_buffer_create(dev, bytes, out), GF__P(dev), bytes, GF__P(out));
}
static gf_result gf__recorded_buffer_create_desc(gf_device *dev, const gf_buffer_desc *desc, gf_buffer **out) {
    GF__RECORDED(buffer_create_desc, gf__call_buffer_create_desc(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_buffer_create_desc(gf_device *dev, const gf_buffer_desc *desc, gf_buffer **out) {
    gf__budget_note outer = gf__budget_due, mine;   /* a call inside a logger has a note of its own */
    gf_result r;
    gf__budget_due.budget = NULL;
    r = gf__recorded_buffer_create_desc(dev, desc, out);
    mine = gf__budget_due;
    gf__budget_due = outer;
    gf__budget_told(&mine);   /* after the record: what the callback calls comes after it */
    return r;
}
GPUFLOW_IMPL void gf_buffer_destroy(gf_buffer *buf) { GF__RECORDED_VOID(buffer_destroy, gf__call_buffer_destroy(buf), GF__P(buf)); }
GPUFLOW_IMPL gf_result gf_buffer_view(gf_buffer *buf, size_t offset, size_t bytes, gf_buffer **out) {
    GF__RECORDED(buffer_view, gf__call_buffer_view(buf, offset, bytes, out), GF__P(buf), offset, bytes, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_copy_to_device(gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes) {
    GF__RECORDED(copy_to_device, gf__call_copy_to_device(dst, dst_offset, src, bytes), GF__P(dst), dst_offset, src, bytes);
}
GPUFLOW_IMPL gf_result gf_copy_to_host(void *dst, gf_buffer *src, size_t src_offset, size_t bytes) {
    GF__RECORDED(copy_to_host, gf__call_copy_to_host(dst, src, src_offset, bytes), GF__P(dst), bytes, GF__P(src), src_offset);
}
GPUFLOW_IMPL gf_result gf_copy_to_device_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, const void *src, size_t bytes) {
    GF__RECORDED_AS(copy_to_device_async, 1, gf__call_copy_to_device_async(s, dst, dst_offset, src, bytes), GF__P(s), GF__P(dst), dst_offset, src, bytes);
}
GPUFLOW_IMPL gf_result gf_copy_to_host_async(gf_stream *s, void *dst, gf_buffer *src, size_t src_offset, size_t bytes) {
    GF__RECORDED(copy_to_host_async, gf__call_copy_to_host_async(s, dst, src, src_offset, bytes), GF__P(s), GF__P(dst), bytes, GF__P(src), src_offset);
}
GPUFLOW_IMPL gf_result gf_copy_buffer_async(gf_stream *s, gf_buffer *dst, size_t dst_offset, gf_buffer *src, size_t src_offset, size_t bytes) {
    GF__RECORDED(copy_buffer_async, gf__call_copy_buffer_async(s, dst, dst_offset, src, src_offset, bytes),
                 GF__P(s), GF__P(dst), dst_offset, GF__P(src), src_offset, bytes);
}
GPUFLOW_IMPL gf_result gf_fill_async(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    GF__RECORDED(fill_async, gf__call_fill_async(s, buf, offset, value, bytes), GF__P(s), GF__P(buf), offset, (int)value, bytes);
}
GPUFLOW_IMPL gf_result gf_fill16_async(gf_stream *s, gf_buffer *buf, size_t offset, uint16_t value, size_t count) {
    GF__RECORDED(fill16_async, gf__call_fill16_async(s, buf, offset, value, count), GF__P(s), GF__P(buf), offset, (int)value, count);
}
GPUFLOW_IMPL gf_result gf_fill32_async(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, size_t count) {
    GF__RECORDED(fill32_async, gf__call_fill32_async(s, buf, offset, value, count), GF__P(s), GF__P(buf), offset, (unsigned)value, count);
}
GPUFLOW_IMPL gf_result gf_copy_2d_async(gf_stream *s, const gf_copy_2d *copy) {
    GF__RECORDED_AS(copy_2d_async, 1, gf__call_copy_2d_async(s, copy), GF__P(s), copy);
}
GPUFLOW_IMPL gf_result gf_prefetch_async(gf_stream *s, gf_buffer *buf, int to_device) {
    GF__RECORDED(prefetch_async, gf__call_prefetch_async(s, buf, to_device), GF__P(s), GF__P(buf), to_device);
}
GPUFLOW_IMPL gf_result gf_buffer_create_async(gf_stream *s, size_t bytes, gf_buffer **out) {
    GF__RECORDED(buffer_create_async, gf__call_buffer_create_async(s, bytes, out), GF__P(s), bytes, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_buffer_destroy_async(gf_stream *s, gf_buffer *buf) {
    GF__RECORDED_FIRST(buffer_destroy_async, gf__call_buffer_destroy_async(s, buf), GF__P(s), GF__P(buf));
}
GPUFLOW_IMPL gf_result gf_buffer_record_stream(gf_buffer *buf, gf_stream *s) {
    GF__RECORDED(buffer_record_stream, gf__call_buffer_record_stream(buf, s), GF__P(buf), GF__P(s));
}
GPUFLOW_IMPL gf_result gf_stream_create(gf_device *dev, const gf_stream_desc *desc, gf_stream **out) {
    GF__RECORDED(stream_create, gf__call_stream_create(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL void gf_stream_destroy(gf_stream *s) { GF__RECORDED_VOID(stream_destroy, gf__call_stream_destroy(s), GF__P(s)); }
GPUFLOW_IMPL gf_result gf_stream_synchronize(gf_stream *s) { GF__RECORDED(stream_synchronize, gf__call_stream_synchronize(s), GF__P(s)); }
GPUFLOW_IMPL gf_result gf_stream_synchronize_timeout(gf_stream *s, unsigned timeout_ms) {
    GF__RECORDED(stream_synchronize_timeout, gf__call_stream_synchronize_timeout(s, timeout_ms), GF__P(s), timeout_ms);
}
GPUFLOW_IMPL gf_result gf_stream_query(gf_stream *s) { GF__RECORDED(stream_query, gf__call_stream_query(s), GF__P(s)); }
GPUFLOW_IMPL gf_result gf_stream_wait_event(gf_stream *s, gf_event *ev) {
    GF__RECORDED(stream_wait_event, gf__call_stream_wait_event(s, ev), GF__P(s), GF__P(ev));
}
GPUFLOW_IMPL gf_result gf_stream_wait_stream(gf_stream *waiter, gf_stream *other) {
    GF__RECORDED(stream_wait_stream, gf__call_stream_wait_stream(waiter, other), GF__P(waiter), GF__P(other));
}
GPUFLOW_IMPL gf_result gf_stream_add_callback(gf_stream *s, gf_callback fn, void *user) {
    GF__RECORDED(stream_add_callback, gf__call_stream_add_callback(s, fn, user), GF__P(s), fn, user);
}
GPUFLOW_IMPL gf_result gf_event_create(gf_device *dev, unsigned flags, gf_event **out) {
    GF__RECORDED(event_create, gf__call_event_create(dev, flags, out), GF__P(dev), flags, GF__P(out));
}
GPUFLOW_IMPL void gf_event_destroy(gf_event *ev) { GF__RECORDED_VOID(event_destroy, gf__call_event_destroy(ev), GF__P(ev)); }
GPUFLOW_IMPL gf_result gf_event_record(gf_event *ev, gf_stream *s) {
    GF__RECORDED(event_record, gf__call_event_record(ev, s), GF__P(ev), GF__P(s));
}
GPUFLOW_IMPL gf_result gf_event_synchronize(gf_event *ev) { GF__RECORDED(event_synchronize, gf__call_event_synchronize(ev), GF__P(ev)); }
GPUFLOW_IMPL gf_result gf_event_synchronize_timeout(gf_event *ev, unsigned timeout_ms) {
    GF__RECORDED(event_synchronize_timeout, gf__call_event_synchronize_timeout(ev, timeout_ms), GF__P(ev), timeout_ms);
}
GPUFLOW_IMPL gf_result gf_event_query(gf_event *ev) { GF__RECORDED(event_query, gf__call_event_query(ev), GF__P(ev)); }
GPUFLOW_IMPL gf_result gf_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    GF__RECORDED(event_elapsed_ms, gf__call_event_elapsed_ms(start, end, ms), GF__P(start), GF__P(end), GF__P(ms));
}
GPUFLOW_IMPL gf_result gf_event_pool_create(gf_device *dev, const gf_event_pool_desc *desc, gf_event_pool **out) {
    GF__RECORDED(event_pool_create, gf__call_event_pool_create(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_event_pool_acquire(gf_event_pool *pool, unsigned flags, gf_event **out) {
    GF__RECORDED(event_pool_acquire, gf__call_event_pool_acquire(pool, flags, out), GF__P(pool), flags, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_event_pool_release(gf_event_pool *pool, gf_event *ev) {
    GF__RECORDED_FIRST(event_pool_release, gf__call_event_pool_release(pool, ev), GF__P(pool), GF__P(ev));
}
GPUFLOW_IMPL void gf_event_pool_destroy(gf_event_pool *pool) { GF__RECORDED_VOID(event_pool_destroy, gf__call_event_pool_destroy(pool), GF__P(pool)); }
GPUFLOW_IMPL gf_result gf_module_load(gf_device *dev, const gf_module_desc *desc, gf_module **out) {
    GF__RECORDED(module_load, gf__call_module_load(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_kernel_get(gf_module *mod, const char *name, gf_kernel **out) {
    GF__RECORDED(kernel_get, gf__call_kernel_get(mod, name, out), GF__P(mod), name, GF__P(out));
}
GPUFLOW_IMPL void gf_module_destroy(gf_module *mod) { GF__RECORDED_VOID(module_destroy, gf__call_module_destroy(mod), GF__P(mod)); }
GPUFLOW_IMPL gf_result gf_launch(gf_stream *s, gf_kernel *k, gf_launch_dims dims, const gf_arg *args, int count) {
    GF__RECORDED(launch, gf__call_launch(s, k, dims, args, count), GF__P(s), GF__P(k), &dims, args, count);
}
GPUFLOW_IMPL gf_result gf_stream_begin_capture(gf_stream *s, gf_capture_mode mode) {
    GF__RECORDED(stream_begin_capture, gf__call_stream_begin_capture(s, mode), GF__P(s), (int)mode);
}
GPUFLOW_IMPL gf_result gf_stream_end_capture(gf_stream *s, gf_graph **out) {
    GF__RECORDED(stream_end_capture, gf__call_stream_end_capture(s, out), GF__P(s), GF__P(out));
}
GPUFLOW_IMPL gf_result gf_graph_launch(gf_graph *g, gf_stream *s) { GF__RECORDED(graph_launch, gf__call_graph_launch(g, s), GF__P(g), GF__P(s)); }
GPUFLOW_IMPL gf_result gf_graph_update(gf_graph *target, gf_graph *from) {
    GF__RECORDED(graph_update, gf__call_graph_update(target, from), GF__P(target), GF__P(from));
}
GPUFLOW_IMPL void gf_graph_destroy(gf_graph *g) { GF__RECORDED_VOID(graph_destroy, gf__call_graph_destroy(g), GF__P(g)); }
GPUFLOW_IMPL gf_result gf_stream_begin_while(gf_stream *s, gf_buffer *cond, size_t offset) {
    GF__RECORDED(stream_begin_while, gf__cond_begin("gf_stream_begin_while", s, cond, offset, GF__COND_WHILE, gf__cond_nonzero), GF__P(s), GF__P(cond), offset);
}
GPUFLOW_IMPL gf_result gf_stream_end_while(gf_stream *s) {
    GF__RECORDED(stream_end_while, gf__cond_end("gf_stream_end_while", s, GF__COND_WHILE), GF__P(s));
}
GPUFLOW_IMPL gf_result gf_stream_begin_if(gf_stream *s, gf_buffer *cond, size_t offset) {
    GF__RECORDED(stream_begin_if, gf__cond_begin("gf_stream_begin_if", s, cond, offset, GF__COND_IF, gf__cond_nonzero), GF__P(s), GF__P(cond), offset);
}
GPUFLOW_IMPL gf_result gf_stream_end_if(gf_stream *s) { GF__RECORDED(stream_end_if, gf__cond_end("gf_stream_end_if", s, GF__COND_IF), GF__P(s)); }
/* A captured flow's loops and branches (the int == the pick's index), written as such. */
static gf_result gf__recorded_cond_begin(gf_stream *s, gf_buffer *cond, size_t offset, int what, gf__cond_test test) {
    if (what == GF__COND_WHILE) {
        GF__RECORDED(stream_begin_while_equal, gf__cond_begin("gf_flow_capture", s, cond, offset, what, test), GF__P(s), GF__P(cond), offset, (int)test.value);
    } else {
        GF__RECORDED(stream_begin_if_equal, gf__cond_begin("gf_flow_capture", s, cond, offset, what, test), GF__P(s), GF__P(cond), offset, (int)test.value);
    }
}
/* A capture that a flow or gf_graph_capture gave up (a task or the capture function failed). */
static void gf__recorded_capture_abandon(gf_stream *s) { GF__RECORDED_VOID(stream_abandon_capture, gf__capture_abandon(s), GF__P(s)); }
static gf_result gf__recorded_cond_end(gf_stream *s, int what) {
    if (what == GF__COND_WHILE) {
        GF__RECORDED(stream_end_while, gf__cond_end("gf_flow_capture", s, what), GF__P(s));
    } else {
        GF__RECORDED(stream_end_if, gf__cond_end("gf_flow_capture", s, what), GF__P(s));
    }
}
GPUFLOW_IMPL gf_result gf_race_check_enable(gf_device *dev, unsigned flags) {
    GF__RECORDED(race_check_enable, gf__call_race_check_enable(dev, flags), GF__P(dev), flags);
}
GPUFLOW_IMPL gf_result gf_profiler_enable(gf_device *dev, unsigned flags) {
    GF__RECORDED(profiler_enable, gf__call_profiler_enable(dev, flags), GF__P(dev), flags);
}
GPUFLOW_IMPL gf_result gf_faults_set(const char *spec) { GF__RECORDED(faults_set, gf__call_faults_set(spec), spec); }
GPUFLOW_IMPL gf_result gf_stream_pool_create(gf_device *dev, const gf_stream_pool_desc *desc, gf_stream_pool **out) {
    GF__RECORDED(stream_pool_create, gf__call_stream_pool_create(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
/* Which of the pool's streams an acquire gave (-1: none): a replay takes the same one, so its
   releases match whatever the strategy would pick there. */
static int gf__pool_index(gf_stream_pool *pool, gf_stream **out, gf_result r) {
    int i;
    for (i = 0; r == GF_OK && i < pool->count; i++) if (pool->streams[i] == *out) return i;
    return -1;
}
GPUFLOW_IMPL gf_result gf_stream_pool_acquire(gf_stream_pool *pool, const gf_acquire_hint *hint, gf_stream **out) {
    GF__RECORDED(stream_pool_acquire, gf__call_stream_pool_acquire(pool, hint, out), GF__P(pool), hint, GF__P(out), gf__pool_index(pool, out, r_));
}
GPUFLOW_IMPL gf_result gf_stream_pool_acquire_ready(gf_stream_pool *pool, unsigned timeout_ms, gf_stream **out) {
    GF__RECORDED(stream_pool_acquire_ready, gf__call_stream_pool_acquire_ready(pool, timeout_ms, out), GF__P(pool), timeout_ms, GF__P(out),
                 gf__pool_index(pool, out, r_));
}
GPUFLOW_IMPL gf_result gf_stream_pool_release(gf_stream_pool *pool, gf_stream *s) {
    GF__RECORDED_FIRST(stream_pool_release, gf__call_stream_pool_release(pool, s), GF__P(pool), GF__P(s));
}
GPUFLOW_IMPL gf_result gf_stream_pool_synchronize(gf_stream_pool *pool) { GF__RECORDED(stream_pool_synchronize, gf__call_stream_pool_synchronize(pool), GF__P(pool)); }
GPUFLOW_IMPL void gf_stream_pool_destroy(gf_stream_pool *pool) { GF__RECORDED_VOID(stream_pool_destroy, gf__call_stream_pool_destroy(pool), GF__P(pool)); }
GPUFLOW_IMPL gf_result gf_stream_set_create(gf_device *dev, int depth, const char *label, gf_stream_set **out) {
    GF__RECORDED(stream_set_create, gf__call_stream_set_create(dev, depth, label, out), GF__P(dev), depth, label, GF__P(out));
}
GPUFLOW_IMPL gf_stream *gf_stream_set_get(gf_stream_set *set, size_t i) {   /* written as a call that makes the stream it returns */
    gf_stream *s;
    if (!gf__atomic_load_int(&gf__rec_on)) return gf__call_stream_set_get(set, i);
    gf__rec_depth++; s = gf__call_stream_set_get(set, i); gf__rec_depth--;
    if (!gf__rec_depth) gf__rec_write(GF__RC_stream_set_get, s ? GF_OK : GF_ERROR_INVALID_ARGUMENT, GF__P(set), i, GF__P(&s));
    return s;
}
GPUFLOW_IMPL gf_result gf_stream_set_next(gf_stream_set *set, size_t i, gf_stream **out) {
    GF__RECORDED(stream_set_next, gf__call_stream_set_next(set, i, out), GF__P(set), i, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_stream_set_end_frame(gf_stream_set *set) { GF__RECORDED(stream_set_end_frame, gf__call_stream_set_end_frame(set), GF__P(set)); }
GPUFLOW_IMPL gf_result gf_stream_set_wait_frames(gf_stream_set *set, int max_in_flight, unsigned timeout_ms) {
    GF__RECORDED(stream_set_wait_frames, gf__call_stream_set_wait_frames(set, max_in_flight, timeout_ms), GF__P(set), max_in_flight, timeout_ms);
}
GPUFLOW_IMPL gf_result gf_stream_set_synchronize(gf_stream_set *set) { GF__RECORDED(stream_set_synchronize, gf__call_stream_set_synchronize(set), GF__P(set)); }
GPUFLOW_IMPL void gf_stream_set_destroy(gf_stream_set *set) { GF__RECORDED_VOID(stream_set_destroy, gf__call_stream_set_destroy(set), GF__P(set)); }
GPUFLOW_IMPL gf_result gf_graph_pool_create(gf_device *dev, gf_graph_pool **out) {
    GF__RECORDED(graph_pool_create, gf__call_graph_pool_create(dev, out), GF__P(dev), GF__P(out));
}
GPUFLOW_IMPL void gf_graph_pool_destroy(gf_graph_pool *pool) { GF__RECORDED_VOID(graph_pool_destroy, gf__call_graph_pool_destroy(pool), GF__P(pool)); }
GPUFLOW_IMPL gf_result gf_stream_begin_capture_pool(gf_stream *s, gf_capture_mode mode, gf_graph_pool *pool) {
    GF__RECORDED(stream_begin_capture_pool, gf__call_stream_begin_capture_pool(s, mode, pool), GF__P(s), (int)mode, GF__P(pool));
}
GPUFLOW_IMPL gf_result gf_budget_create(gf_device *dev, const gf_budget_desc *desc, gf_budget **out) {
    GF__RECORDED(budget_create, gf__call_budget_create(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL void gf_budget_destroy(gf_budget *budget) { GF__RECORDED_VOID(budget_destroy, gf__call_budget_destroy(budget), GF__P(budget)); }
static const gf_launch_dims gf__no_dims = { { 0, 0, 0 }, { 0, 0, 0 }, 0 };   /* a launch's row spells dimensions; new arguments have none */
GPUFLOW_IMPL gf_result gf_graph_set_kernel_args(gf_graph *g, int launch_index, const gf_arg *args, int count) {
    GF__RECORDED(graph_set_kernel_args, gf__call_graph_set_kernel_args(g, launch_index, args, count), GF__P(g), launch_index, &gf__no_dims, args, count);
}
/* Interop: what a replay needs to stand in for it, never the handles (they mean nothing in
   another process). */
GPUFLOW_IMPL gf_result gf_stream_wrap(gf_device *dev, void *native_stream, const gf_stream_desc *desc, gf_stream **out) {
    GF__RECORDED(stream_wrap, gf__call_stream_wrap(dev, native_stream, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_buffer_wrap(gf_device *dev, uint64_t native_buffer, size_t bytes, gf_buffer **out) {
    GF__RECORDED(buffer_wrap, gf__call_buffer_wrap(dev, native_buffer, bytes, out), GF__P(dev), bytes, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_buffer_import(gf_device *dev, const gf_external_memory_desc *desc, gf_buffer **out) {
    GF__RECORDED(buffer_import, gf__call_buffer_import(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out) {
    GF__RECORDED(buffer_export, gf__call_buffer_export(buf, type, out), GF__P(buf), (unsigned)type, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_semaphore_import(gf_device *dev, const gf_semaphore_desc *desc, gf_semaphore **out) {
    GF__RECORDED(semaphore_import, gf__call_semaphore_import(dev, desc, out), GF__P(dev), desc, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_semaphore_create(gf_device *dev, int timeline, gf_semaphore **out) {
    GF__RECORDED(semaphore_create, gf__call_semaphore_create(dev, timeline, out), GF__P(dev), timeline, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out) {
    GF__RECORDED(semaphore_export, gf__call_semaphore_export(sem, type, out), GF__P(sem), (unsigned)type, GF__P(out));
}
GPUFLOW_IMPL gf_result gf_semaphore_signal_async(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    GF__RECORDED(semaphore_signal_async, gf__call_semaphore_signal_async(s, sem, value), GF__P(s), GF__P(sem), value);
}
GPUFLOW_IMPL gf_result gf_semaphore_wait_async(gf_stream *s, gf_semaphore *sem, uint64_t value) {
    GF__RECORDED(semaphore_wait_async, gf__call_semaphore_wait_async(s, sem, value), GF__P(s), GF__P(sem), value);
}
GPUFLOW_IMPL void gf_semaphore_destroy(gf_semaphore *sem) { GF__RECORDED_VOID(semaphore_destroy, gf__call_semaphore_destroy(sem), GF__P(sem)); }
GPUFLOW_IMPL gf_result gf_device_enable_peer(gf_device *a, gf_device *b) { GF__RECORDED(device_enable_peer, gf__call_device_enable_peer(a, b), GF__P(a), GF__P(b)); }
GPUFLOW_IMPL gf_result gf_device_trim(gf_device *dev, size_t keep_bytes) { GF__RECORDED(device_trim, gf__call_device_trim(dev, keep_bytes), GF__P(dev), keep_bytes); }
GPUFLOW_IMPL gf_result gf_device_reset_peak(gf_device *dev) { GF__RECORDED(device_reset_peak, gf__call_device_reset_peak(dev), GF__P(dev)); }
GPUFLOW_IMPL void gf_range_push(gf_stream *s, const char *name) { GF__RECORDED_VOID(range_push, gf__call_range_push(s, name), GF__P(s), name); }
GPUFLOW_IMPL void gf_range_pop(gf_stream *s) { GF__RECORDED_VOID(range_pop, gf__call_range_pop(s), GF__P(s)); }
/* A reload from the module's file is written as the desc it reloads from (the file's text then). */
GPUFLOW_IMPL gf_result gf_module_reload(gf_module *mod, const gf_module_desc *desc) {
    gf_module_desc from_file;
    const gf_module_desc *written = desc;
    gf_result r_;
    int own;
    if (!gf__atomic_load_int(&gf__rec_on)) return gf__call_module_reload(mod, desc);
    if (!desc && gf__is(mod, GF__T_MODULE) && mod->path) { gf__module_file_desc(mod, &from_file); written = &from_file; }
    own = written && gf__is(mod, GF__T_MODULE) && written->stub_kernels == mod->given_stub;   /* before the reload changes them */
    gf__rec_depth++; r_ = gf__call_module_reload(mod, desc); gf__rec_depth--;
    if (!gf__rec_depth)   /* and whether its C kernels were the module's own, which a file cannot change */
        gf__rec_write(GF__RC_module_reload, r_, GF__P(mod), written, own);
    return r_;
}
GPUFLOW_IMPL gf_result gf_barrier(gf_stream *const *streams, int count) { GF__RECORDED(barrier, gf__call_barrier(streams, count), streams, count); }
GPUFLOW_IMPL gf_result gf_synchronize_all(gf_stream *const *streams, int count, double *elapsed_ms) {
    GF__RECORDED(synchronize_all, gf__call_synchronize_all(streams, count, elapsed_ms), streams, count, GF__P(elapsed_ms));
}


GPUFLOW_IMPL gf_result gf_record_start(const gf_record_desc *desc) {
    unsigned char head[16];
    int i, busy, err;
    if (!desc || !desc->path || !*desc->path) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_record_start: desc->path is required");
#if !defined(_WIN32)
    gf__fork_hooks();   /* a fork's child drops the recording (gf__rec_after_fork) */
#endif
    gf__spin_lock(&gf__rec.lock);
    if (gf__rec.file) {
        char busy_path[sizeof gf__rec.path];
        gf__copy_str(busy_path, sizeof busy_path, gf__rec.path);
        gf__spin_unlock(&gf__rec.lock);
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_record_start: already recording to %s (gf_record_stop first)", busy_path);
    }
    gf__rec_tail_settle(1);   /* the last one's snapshots still queued are left out (it may be this path) */
    if (!(gf__rec.file = gf__rec_file_open(desc->path, &busy, &err))) {
        gf__spin_unlock(&gf__rec.lock);
        if (busy)
            return gf__fail(GF_ERROR_INVALID_STATE, "gf_record_start: another recorder writes '%s' (another process: give each its own file, e.g. "
                                                    "with %%p in GPUFLOW_RECORD; or another copy of gpuflow in this process, which %%p does not tell "
                                                    "apart: record from one copy, or give each copy a path of its own)", desc->path);
        return gf__fail(err == ENOMEM || err == EMFILE || err == ENFILE ? GF_ERROR_OUT_OF_MEMORY : GF_ERROR_INVALID_ARGUMENT,
                        "gf_record_start: cannot open '%s' for writing (%s)", desc->path,
                        err == ENXIO ? "a FIFO that no process reads" : strerror(err));
    }
    memcpy(head, "gpuflowR", 8);
    for (i = 0; i < 4; i++) head[8 + i] = (unsigned char)(GF__REC_VERSION >> (8 * i));
    for (i = 0; i < 4; i++) head[12 + i] = (unsigned char)((desc->device_to_host ? 1u : 0u) >> (8 * i));
    if ((err = gf__rec_file_put(gf__rec.file, head, sizeof head)) != 0 || (err = gf__rec_file_drain(gf__rec.file)) != 0) {   /* written now: a full disk is told now */
        (void)gf__rec_file_close(gf__rec.file);
        gf__rec.file = NULL;
        gf__spin_unlock(&gf__rec.lock);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_record_start: cannot write '%s' (%s)", desc->path, strerror(err));
    }
    gf__rec.stopped_why[0] = 0;
    gf__copy_str(gf__rec.path, sizeof gf__rec.path, desc->path);
    gf__rec.written = sizeof head;
    gf__rec.limit = desc->max_bytes ? desc->max_bytes : GF__DEFAULT_RECORD_LIMIT;
    gf__rec.limit = gf__rec.limit < 128 ? 64 : gf__rec.limit - 64;   /* room for the last record */
    gf__rec.device_to_host = desc->device_to_host != 0;
    gf__rec.t0 = gf__now_ns();
    gf__rec.next_id = 0;
    gf__rec.numbers_spent = 0;
    gf__rec.threads = 0;
    gf__rec.recording++;
    gf__atomic_store_int(&gf__rec_on, 1);
    gf__spin_unlock(&gf__rec.lock);
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_record_stop(void) {
    const char *why;
    char path[512];
    gf__spin_lock(&gf__rec.lock);
    if (!gf__rec.file) {
        gf__copy_str(path, sizeof path, gf__rec.stopped_why);
        gf__rec.stopped_why[0] = 0;   /* told once */
        gf__spin_unlock(&gf__rec.lock);
        return gf__fail(GF_ERROR_INVALID_STATE, "gf_record_stop: not recording%s%s%s", *path ? " (the recording stopped early: " : "", path, *path ? ")" : "");
    }
    why = gf__rec_close(GF__RC_END);
    gf__copy_str(path, sizeof path, gf__rec.path);
    gf__spin_unlock(&gf__rec.lock);
    return why ? gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_record_stop: %s: %s", path, why) : GF_OK;
}

#if !defined(_WIN32)
/* fork's child, where no other thread runs: the parent's recording stays the parent's. Its file
   closes here without a write (a fork in the middle of a record would end it mid-way), nothing
   the child does is recorded unless it starts a recording of its own, and the recorder's lock,
   which a parent thread may have held at the fork, starts free. */
static void gf__rec_after_fork(void) {
    gf__rec_file *files[2];
    gf__rec_late *l;
    int i;
    files[0] = gf__rec.file; files[1] = gf__rec.tail;
    for (i = 0; i < 2; i++) if (files[i]) { close(files[i]->fd); GPUFLOW_FREE(files[i]); }
    while ((l = gf__rec.late) != NULL) { gf__rec.late = l->next; GPUFLOW_FREE(l); }   /* their callbacks stayed in the parent */
    GPUFLOW_FREE(gf__rec.map);
    gf__rec.file = gf__rec.tail = NULL;
    gf__rec.map = NULL;
    gf__rec.map_cap = gf__rec.map_count = 0;
    gf__rec_idle();
    gf__rec.stopped_why[0] = 0;
    gf__atomic_store_int(&gf__rec_on, 0);
    gf__atomic_store_int(&gf__rec.lock, 0);
}
#endif

/* GPUFLOW_RECORD=file (GPUFLOW_RECORD_LIMIT=bytes): recording from the first device open to exit. */
static void gf__rec_at_exit(void) { if (gf__rec.file) (void)gf_record_stop(); }
static void gf__env_record(void) {
    static int read;
    const char *path;
    char *value;
    gf_record_desc d;
    gf_result started;
    gf__error_keep keep;
    char named[4096], why[sizeof gf__error_text];   /* a path's room (PATH_MAX), in UTF-8 bytes */
    size_t n = 0;
    if (gf__atomic_xchg_int(&read, 1)) return;
    if (!(path = value = gf__env_path("GPUFLOW_RECORD")) || !*path) { gf__free(value); return; }
    memset(&d, 0, sizeof d);
    for (d.path = named; *path && n + 24 < sizeof named; path++)   /* %p: this process's id (each process its own file) */
        if (path[0] == '%' && path[1] == 'p') { n += (size_t)snprintf(named + n, sizeof named - n, "%lu", gf__getpid()); path++; }
        else named[n++] = *path;
    named[n] = 0;
    path = *path ? "" : NULL;
    gf__free(value);
    if (path) { gf__env_warn("gpuflow: GPUFLOW_RECORD: the name is too long; nothing is recorded"); return; }
    d.max_bytes = gf__env_bytes("GPUFLOW_RECORD_LIMIT", GF__DEFAULT_RECORD_LIMIT, NULL);
    gf__error_keep_begin(&keep);   /* said once, below, with the variable named */
    started = gf_record_start(&d);
    gf__error_keep_end(&keep, why);
    if (started != GF_OK) { gf__env_warn("gpuflow: GPUFLOW_RECORD=%s: %s; nothing is recorded", named, why); return; }
    atexit(gf__rec_at_exit);
    gf__notice(GF_LOG_INFO, "gpuflow: GPUFLOW_RECORD: every gpuflow call goes to %s", named);
}
/* GPUFLOW_FAULTS set inside the first open: written by hand after the open, which the rules
   did not count, so a replay fails the same calls. */
static void gf__rec_env_faults(const char *spec, gf_result r) {
    if (!gf__atomic_load_int(&gf__rec_on)) return;
    gf__spin_lock(&gf__rec.lock);
    gf__copy_str(gf__rec.env_faults, sizeof gf__rec.env_faults, spec);
    gf__rec.env_faults_result = (int)r;
    gf__rec.env_faults_pending = 1;
    gf__spin_unlock(&gf__rec.lock);
}

/* ---- replay ---- */
typedef struct gf__rp_in { const unsigned char *p, *end; int bad; } gf__rp_in;
static uint64_t gf__rp_le(gf__rp_in *in, int bytes) {
    uint64_t v = 0;
    int i;
    if (in->bad || in->end - in->p < bytes) { in->bad = 1; return 0; }
    for (i = 0; i < bytes; i++) v |= (uint64_t)in->p[i] << (8 * i);
    in->p += bytes;
    return v;
}
static uint32_t gf__rp_u32(gf__rp_in *in) { return (uint32_t)gf__rp_le(in, 4); }
static uint64_t gf__rp_u64(gf__rp_in *in) { return gf__rp_le(in, 8); }
static const char *gf__rp_str(gf__rp_in *in) {   /* points into the file: its NUL is checked */
    uint32_t n = gf__rp_u32(in);
    const char *s;
    if (in->bad || n == GF__REC_NULL) return NULL;
    if (!n || (uint64_t)(in->end - in->p) < n || in->p[n - 1]) { in->bad = 1; return NULL; }
    s = (const char *)in->p;
    in->p += n;
    return s;
}
typedef struct gf__rp_blob { int given, data; uint64_t n; const void *bytes; uint64_t snapshot; } gf__rp_blob;
static gf__rp_blob gf__rp_blob_read(gf__rp_in *in) {
    gf__rp_blob b;
    uint32_t flags = gf__rp_u32(in);
    b.given = flags & 1;
    b.data = (flags & 6) == 2;
    b.n = gf__rp_u64(in);
    b.bytes = NULL;
    b.snapshot = flags & 4 ? gf__rp_u64(in) : 0;   /* the bytes are in that BYTES record */
    if (b.data) {
        if ((uint64_t)(in->end - in->p) < b.n || b.n > (size_t)-1) in->bad = 1;
        else { b.bytes = in->p; in->p += (size_t)b.n; }
    }
    return b;
}

typedef struct gf__rp_obj {
    void *obj; char kind; uint32_t device, parent;
    gf_backend recorded_on;                 /* a device: the backend it was recorded on */
    uint64_t capture;                       /* a buffer allocated inside this capture (its id): it
                                               goes with the capture, or with its graph (parent) */
    int partial;                            /* a graph made by a capture that skipped a call: its
                                               launches are not the recorded ones */
    int slots;                              /* a captured flow's slots buffer: the graph keeps it,
                                               and its handle goes as the capture ends */
    uint32_t *children; int child_count, child_cap;   /* numbers made with this one as parent (some
                                               may have moved on: their parent field says) */
    int children_lost;                      /* the list could not grow: a drop looks at every one */
} gf__rp_obj;
typedef struct gf__replay {
    const gf_replay_desc *desc;
    gf_replay_report *out;
    gf__rp_obj *objs; uint32_t obj_cap;     /* by number; obj NULL: not (or no longer) there */
    void **kept; int kept_count, kept_cap;  /* host memory the replay's work may still use: freed at the end */
    uint64_t scratch_bytes;                 /* of it, async copies' destinations */
    int traced;                             /* the first device's trace is written */
    int set_faults;                         /* the file set fault rules: cleared at the end */
    int malformed;                          /* an object numbered past the calls before it */
    gf_result first;                        /* the first mismatch's replayed result */
    uint64_t *partial; int partial_count, partial_cap;   /* captures (ids) in which a call was skipped */
    gf__rp_blob *snapshots; int snapshot_count, snapshot_cap;   /* the file's BYTES records, by number */
    struct gf__rp_signal *signals; int signal_count, signal_cap;   /* the file's semaphore signals, in its order */
    uint32_t *exported; int exported_count, exported_cap;          /* the semaphores the file exports */
    struct gf__rp_graph_signal *graph_signals; int graph_signal_count, graph_signal_cap;   /* signals and waits captured in graphs */
    int said_early_wait;                    /* the warning of a wait made before its signal, given */
    /* Numbers allocated inside a capture (capture set): what the captures' ends and the sweep
       after each call look at, so a replay's time grows with its calls, not their square. */
    uint32_t *captured; int captured_count, captured_cap;
    int captured_lost;                      /* the list could not grow: they look at every number */
} gf__replay;
typedef struct gf__rp_signal { uint64_t call; uint32_t sem; uint64_t value; } gf__rp_signal;
typedef struct gf__rp_graph_signal {   /* a semaphore signal or wait captured: its capture's, then (once it ended) its graph's */
    gf_device *dev; uint64_t capture; uint32_t graph; int wait; uint32_t sem; uint64_t value;
} gf__rp_graph_signal;
#define GF__REPLAY_SCRATCH ((uint64_t)256 << 20)   /* async destinations kept before the replay waits and frees them */
#define GF__REPLAY_UNTRUSTED_THREADS ((uint64_t)1 << 20)   /* the largest launch of an untrusted replay */
#define GF__REPLAY_UNTRUSTED_DEVICES 2                       /* devices an untrusted replay keeps open at once */

/* The replay's own memory: the recorded program did not allocate it, so `alloc` fault rules
   do not count it (they count the calls' allocations, as they did when recorded). */
static void *gf__rp_alloc(size_t n, int zeroed) {
    void *p;
    gf__alloc_own++;
    p = zeroed ? gf__calloc(n) : gf__malloc(n);
    gf__alloc_own--;
    return p;
}
static int gf__rp_grow(void **p, int *cap, int need, size_t size) {
    int ok;
    gf__alloc_own++;
    ok = gf__grow(p, cap, need, size);
    gf__alloc_own--;
    return ok;
}
static void *gf__rp_keep(gf__replay *rp, size_t n) {   /* zeroed host memory that lives to the end of the replay */
    void *p;
    if (!gf__rp_grow((void **)&rp->kept, &rp->kept_cap, rp->kept_count + 1, sizeof *rp->kept)) return NULL;
    if (!(p = gf__rp_alloc(n ? n : 1, 1))) return NULL;
    return rp->kept[rp->kept_count++] = p;
}
static gf__rp_obj *gf__rp_slot(gf__replay *rp, uint32_t id) { return id && id < rp->obj_cap && rp->objs[id].obj ? &rp->objs[id] : NULL; }
static void gf__rp_drop_device(gf__replay *rp, uint32_t id) {   /* a device closed: all of it is gone */
    uint32_t i;
    for (i = 1; i < rp->obj_cap; i++) if (rp->objs[i].device == id) rp->objs[i].obj = NULL;
}
static void gf__rp_drop_children(gf__replay *rp, uint32_t id) {   /* a module's kernels, a pool's events */
    gf__rp_obj *o = id && id < rp->obj_cap ? &rp->objs[id] : NULL;
    uint32_t i;
    int k;
    if (!o) return;
    if (o->children_lost)
        for (i = 1; i < rp->obj_cap; i++) { if (rp->objs[i].parent == id) rp->objs[i].obj = NULL; }
    else
        for (k = 0; k < o->child_count; k++)
            if (o->children[k] < rp->obj_cap && rp->objs[o->children[k]].parent == id) rp->objs[o->children[k]].obj = NULL;
    gf__free(o->children);
    o->children = NULL; o->child_count = o->child_cap = o->children_lost = 0;
}
/* child's parent is now parent (an object gpuflow destroys with it): on parent's list. */
static void gf__rp_adopt(gf__replay *rp, uint32_t parent, uint32_t child) {
    gf__rp_obj *p = parent < rp->obj_cap ? &rp->objs[parent] : NULL;
    rp->objs[child].parent = parent;
    if (!p || p->children_lost) return;
    if (gf__rp_grow((void **)&p->children, &p->child_cap, p->child_count + 1, sizeof *p->children)) p->children[p->child_count++] = child;
    else p->children_lost = 1;
}
/* Number id belongs to capture: on the captured list. */
static void gf__rp_mark_captured(gf__replay *rp, uint32_t id, uint64_t capture) {
    rp->objs[id].capture = capture;
    if (rp->captured_lost) return;
    if (gf__rp_grow((void **)&rp->captured, &rp->captured_cap, rp->captured_count + 1, sizeof *rp->captured)) rp->captured[rp->captured_count++] = id;
    else rp->captured_lost = 1;
}
/* The numbers a capture may own, one at a time (*at starts at 0; 0: no more): the captured
   list, or every number once it could not grow. The caller checks each one's fields. */
static uint32_t gf__rp_next_captured(gf__replay *rp, uint32_t *at) {
    if (rp->captured_lost) {
        while (++*at < rp->obj_cap) if (rp->objs[*at].capture) return *at;
        return 0;
    }
    return *at < (uint32_t)rp->captured_count ? rp->captured[(*at)++] : 0;
}
/* Buffers allocated inside a capture are the capture's: once it has ended without a graph
   (discarded: a failed end, a synchronize or destroy of its stream) they are gone. */
static void gf__rp_sweep_captures(gf__replay *rp) {
    uint32_t at = 0, i;
    int kept = 0;
    while ((i = gf__rp_next_captured(rp, &at)) != 0) {
        gf__rp_obj *o = &rp->objs[i];
        gf__rp_obj *d = o->obj && o->capture ? gf__rp_slot(rp, o->device) : NULL;
        int alive = 0;
        if (!o->obj || !o->capture) continue;
        if (d) {
            gf_device *dev = (gf_device *)d->obj;
            gf__lock(&dev->lock);
            alive = gf__capture_find(dev, o->capture) != NULL;
            gf__unlock(&dev->lock);
        }
        if (!alive && o->slots) gf__buffer_free((gf_buffer *)o->obj);
        if (!alive) o->obj = NULL;
        else if (!rp->captured_lost) rp->captured[kept++] = i;   /* still the capture's: on the list */
    }
    if (!rp->captured_lost) rp->captured_count = kept;
}

/* A handle gpuflow gave out that nothing here takes (a replayed export): closed. */
static void gf__external_handle_close(const gf_external_handle *h) {
#if defined(_WIN32)
    if (h->win32_handle) CloseHandle(h->win32_handle);
#endif
    if (h->fd >= 0) (void)gf__fd_close(h->fd);
}
/* A semaphore in a replay: the other API that signalled it and waited on it is not there, so
   events stand in, on every backend, and every wait is for an event already recorded (or for
   one never recorded, which is complete), so no replay waits for ever. A signal records one on
   its stream; a wait waits for the first of the replay's signals that its stream can wait for
   (recorded outside any capture, or in its own) with a value at least its own (a timeline) or
   not yet waited for (binary). When there is none, the other API signalled it, perhaps once it
   had waited for what gpuflow signalled (the usual exchange: gpuflow signals one semaphore, the
   other API waits on it, works, and signals another that gpuflow waits on): such a wait waits
   for the newest signal of each of the device's semaphores, which keeps the order that went
   through the other API (and may add order the run did not have). A semaphore of gpuflow's own
   that the file never exports is signalled by the file's calls alone: a wait on it with no
   signal yet waits for one the file makes later, which cannot be waited for before it is made;
   it waits for nothing, and the replay says so once. A signal or wait captured in a graph is
   the graph's, made at each launch: noted, a launch of that graph first waits as the wait
   would (on the launch stream), and after it pushes each signal as an event after the whole
   launch (later than the signal, never earlier). The stand-in's extra events and waits are
   outside fault rules: a signal or wait counts one operation, as the semaphore's did. */
#define GF__RP_SIGNALS 16   /* the signals a semaphore keeps; older ones are taken to have passed */
typedef struct gf__rp_semaphore {
    uint32_t type;                                 /* GF__T_DEAD: refused where a file passes it as another object */
    gf_device *dev;
    int timeline;
    uint32_t id;                                   /* its number in the file */
    int own;                                       /* gf_semaphore_create's, never exported: the file signals it alone */
    gf_event *none;                                /* never recorded */
    struct { gf_event *ev; uint64_t value; int waited; } signal[GF__RP_SIGNALS];
    int first, count;                              /* a ring, oldest first */
} gf__rp_semaphore;
static gf__rp_semaphore *gf__rp_semaphore_new(gf__replay *rp, gf_device *dev, int timeline, uint32_t id, int created) {
    gf__rp_semaphore *sem = (gf__rp_semaphore *)gf__rp_alloc(sizeof *sem, 1);
    gf_result r;
    int i;
    if (!sem) return NULL;
    sem->dev = dev;
    sem->timeline = timeline != 0;
    sem->id = id;
    sem->own = created;
    for (i = 0; i < rp->exported_count; i++) if (rp->exported[i] == id) sem->own = 0;
    gf__alloc_own++;   /* the recorded program made a semaphore, not this */
    gf__faults_inside++;
    r = gf_event_create(dev, 0, &sem->none);
    gf__faults_inside--;
    gf__alloc_own--;
    if (r != GF_OK) { gf__free(sem); return NULL; }
    return sem;
}
static void gf__rp_semaphore_free(gf__rp_semaphore *sem) {   /* event destroys never wait */
    int i;
    for (i = 0; i < sem->count; i++) gf_event_destroy(sem->signal[(sem->first + i) % GF__RP_SIGNALS].ev);
    gf_event_destroy(sem->none);
    gf__free(sem);
}
/* Whether the file signals sem later than call with what ends a wait for value. */
static int gf__rp_signalled_later(const gf__replay *rp, const gf__rp_semaphore *sem, uint64_t call, uint64_t value) {
    int i;
    for (i = 0; i < rp->signal_count; i++)
        if (rp->signals[i].call > call && rp->signals[i].sem == sem->id && (!sem->timeline || rp->signals[i].value >= value)) return 1;
    return 0;
}
/* The checks of gf_semaphore_signal_async and _wait_async, on the stand-in (NULL: not one). */
static gf_result gf__rp_semaphore_check(const char *fn, gf_stream *s, const gf__rp_semaphore *sem) {
    if (!s || !gf__is(s, GF__T_STREAM)) return gf__bad_handle(fn, "s", s, GF__T_STREAM);
    if (!sem) return gf__bad_handle(fn, "sem", NULL, GF__T_SEMAPHORE);
    if (s->dev != sem->dev) return gf__fail(GF_ERROR_WRONG_DEVICE, "%s: objects of two different devices used together", fn);
    return GF_OK;
}
static uint64_t gf__rp_capture_of(gf_stream *s) {   /* the capture s is in (0: none) */
    uint64_t capture;
    gf__lock(&s->dev->lock);
    capture = s->capture ? s->capture->id : 0;
    gf__unlock(&s->dev->lock);
    return capture;
}
/* A signal of value, as an event recorded on s now: the newest of sem's ring (its one counted
   operation: the event's record). */
static gf_result gf__rp_semaphore_push(gf__rp_semaphore *sem, gf_stream *s, uint64_t value) {
    gf_event *ev = NULL;
    gf_result r;
    int slot;
    gf__alloc_own++;
    gf__faults_inside++;
    r = gf_event_create(sem->dev, 0, &ev);
    gf__faults_inside--;
    gf__alloc_own--;
    if (r != GF_OK) return r;
    if ((r = gf_event_record(ev, s)) != GF_OK) { gf_event_destroy(ev); return r; }
    if (sem->count == GF__RP_SIGNALS) {
        gf_event_destroy(sem->signal[sem->first].ev);
        sem->first = (sem->first + 1) % GF__RP_SIGNALS;
        sem->count--;
    }
    slot = (sem->first + sem->count++) % GF__RP_SIGNALS;
    sem->signal[slot].ev = ev;
    sem->signal[slot].value = value;
    sem->signal[slot].waited = 0;
    return GF_OK;
}
/* A signal or wait of a capture (dev's capture): its graph's launches make it. */
static void gf__rp_note(gf__replay *rp, gf_device *dev, uint64_t capture, uint32_t graph, int wait, uint32_t sem, uint64_t value) {
    gf__rp_graph_signal *g;
    if (!gf__rp_grow((void **)&rp->graph_signals, &rp->graph_signal_cap, rp->graph_signal_count + 1, sizeof *rp->graph_signals)) return;
    g = &rp->graph_signals[rp->graph_signal_count++];
    g->dev = dev; g->capture = capture; g->graph = graph; g->wait = wait; g->sem = sem; g->value = value;
}
static gf_result gf__rp_semaphore_signal(gf__replay *rp, gf_stream *s, gf__rp_semaphore *sem, uint64_t value) {
    gf_result r;
    uint64_t capture;
    if ((r = gf__rp_semaphore_check("gf_semaphore_signal_async", s, sem)) != GF_OK) return r;
    if (sem->timeline && value == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_signal_async: a timeline starts at 0: signal a value above it");
    if ((r = gf__rp_semaphore_push(sem, s, value)) != GF_OK) return r;
    if ((capture = gf__rp_capture_of(s)) != 0) gf__rp_note(rp, s->dev, capture, 0, 0, sem->id, value);
    return GF_OK;
}
/* s waits as a wait for value would (outside fault rules): see above. say: a wait the program
   made (not a graph launch's), which may be told of. */
static gf_result gf__rp_semaphore_order(gf__replay *rp, gf_stream *s, gf__rp_semaphore *sem, uint64_t value, uint64_t capture, int say) {
    gf_result r = GF_OK;
    int i;
    for (i = 0; i < sem->count; i++) {
        int slot = (sem->first + i) % GF__RP_SIGNALS;
        if (sem->timeline ? sem->signal[slot].value < value : sem->signal[slot].waited) continue;
        if (gf__event_latest(sem->signal[slot].ev).capture_id != capture) continue;
        sem->signal[slot].waited = 1;
        return gf_stream_wait_event(s, sem->signal[slot].ev);
    }
    if (!sem->own) {   /* the other API's signal: after the newest signal of each of the device's semaphores */
        uint32_t k;
        for (k = 1; k < rp->obj_cap && r == GF_OK; k++) {
            gf__rp_semaphore *o = (gf__rp_semaphore *)rp->objs[k].obj;
            int j;
            if (!o || rp->objs[k].kind != 'T' || o->dev != s->dev) continue;
            for (j = o->count - 1; j >= 0; j--) {   /* the newest that this stream can wait for */
                gf_event *ev = o->signal[(o->first + j) % GF__RP_SIGNALS].ev;
                if (gf__event_latest(ev).capture_id == capture) { r = gf_stream_wait_event(s, ev); break; }
            }
        }
    } else if (say && !capture && !rp->said_early_wait && gf__rp_signalled_later(rp, sem, rp->out->calls, value)) {
        rp->said_early_wait = 1;
        gf__notice(GF_LOG_WARNING, "gf_replay: call %llu (gf_semaphore_wait_async) waits for a signal the file makes later: a replay cannot hold "
                   "a stream for a signal it has not made, so this wait (and any such) waits for nothing (said once)",
                   (unsigned long long)rp->out->calls);
    }
    return r != GF_OK ? r : gf_stream_wait_event(s, sem->none);
}
static gf_result gf__rp_semaphore_wait(gf__replay *rp, gf_stream *s, gf__rp_semaphore *sem, uint64_t value) {
    gf__cmd c;
    gf_result r;
    uint64_t capture;
    if ((r = gf__rp_semaphore_check("gf_semaphore_wait_async", s, sem)) != GF_OK) return r;
    capture = gf__rp_capture_of(s);
    memset(&c, 0, sizeof c);
    c.kind = GF__CMD_SEM_WAIT;   /* the one operation the semaphore's wait counted */
    if (!capture && (r = GF__FAULT_POINT(s->dev, gf__fault_kind_of(&c), gf__op_name(gf__cmd_op(&c)))) != GF_OK) return r;
    if (capture) gf__rp_note(rp, s->dev, capture, 0, 1, sem->id, value);
    gf__faults_inside++;
    r = gf__rp_semaphore_order(rp, s, sem, value, capture, 1);
    gf__faults_inside--;
    return r;
}
/* A graph launch on s (gid: the graph's number): its captured waits first, then the launch,
   then its captured signals; inside another capture they become that capture's. */
static gf_result gf__rp_graph_launch(gf__replay *rp, gf_graph *g, uint32_t gid, gf_stream *s) {
    int live = s && gf__is(s, GF__T_STREAM), i, n = rp->graph_signal_count;
    uint64_t outer = live ? gf__rp_capture_of(s) : 0;
    gf_result r;
    gf__faults_inside++;
    for (i = 0; live && !outer && i < n; i++) {
        gf__rp_graph_signal e = rp->graph_signals[i];
        gf__rp_obj *o = e.graph == gid && e.wait ? gf__rp_slot(rp, e.sem) : NULL;
        if (o && o->kind == 'T' && ((gf__rp_semaphore *)o->obj)->dev == s->dev) (void)gf__rp_semaphore_order(rp, s, (gf__rp_semaphore *)o->obj, e.value, 0, 0);
    }
    gf__faults_inside--;
    if ((r = gf_graph_launch(g, s)) != GF_OK) return r;
    gf__faults_inside++;
    for (i = 0; i < n; i++) {
        gf__rp_graph_signal e = rp->graph_signals[i];   /* a copy: noting grows the array */
        gf__rp_obj *o = e.graph == gid ? gf__rp_slot(rp, e.sem) : NULL;
        if (!o || o->kind != 'T' || ((gf__rp_semaphore *)o->obj)->dev != s->dev) continue;
        if (outer) gf__rp_note(rp, s->dev, outer, 0, e.wait, e.sem, e.value);
        else if (!e.wait) (void)gf__rp_semaphore_push((gf__rp_semaphore *)o->obj, s, e.value);
    }
    gf__faults_inside--;
    return GF_OK;
}
/* A graph updated from another: its launches make the other's signals and waits from now on. */
static void gf__rp_graph_update(gf__replay *rp, uint32_t target, uint32_t from) {
    int i, n = rp->graph_signal_count;
    for (i = 0; i < n; i++) if (rp->graph_signals[i].graph == target) rp->graph_signals[i].graph = 0;
    for (i = 0; i < n; i++) {
        gf__rp_graph_signal e = rp->graph_signals[i];
        if (e.graph == from) gf__rp_note(rp, e.dev, 0, target, e.wait, e.sem, e.value);
    }
}

static void gf__rp_destroy(char kind, void *obj) {   /* an object the replay made, by its kind */
    switch (kind) {
    case 'D': gf_device_close((gf_device *)obj); break;
    case 'G': gf_graph_destroy((gf_graph *)obj); break;
    case 'M': gf_module_destroy((gf_module *)obj); break;
    case 'P': gf_event_pool_destroy((gf_event_pool *)obj); break;
    case 'E': gf_event_destroy((gf_event *)obj); break;
    case 'W': gf_stream_set_destroy((gf_stream_set *)obj); break;
    case 'Q': gf_stream_pool_destroy((gf_stream_pool *)obj); break;
    case 'J': gf_graph_pool_destroy((gf_graph_pool *)obj); break;
    case 'B': gf_buffer_destroy((gf_buffer *)obj); break;
    case 'S': gf_stream_destroy((gf_stream *)obj); break;
    case 'V': gf_budget_destroy((gf_budget *)obj); break;
    case 'T': gf__rp_semaphore_free((gf__rp_semaphore *)obj); break;
    default: break;   /* kernels, a pool's events and streams go with their module or pool */
    }
}
/* A device: its races counted, its trace written, what the file left on it destroyed (captures
   ended, graphs
   before what they use, streams last; a kernel, a pool's events and streams go with their
   module or pool), closed. */
static void gf__rp_close(gf__replay *rp, uint32_t id) {
    static const char order[] = "GMPETWQJBVS";
    gf_device *dev = (gf_device *)rp->objs[id].obj;
    gf_race_info races;
    const char *kind;
    uint32_t i;
    for (i = 1; i < rp->obj_cap; i++) {   /* a capture the file left open ends (its graph, if any, goes too) */
        gf_graph *g = NULL;
        if (rp->objs[i].obj && rp->objs[i].device == id && rp->objs[i].kind == 'S' &&
            gf_stream_end_capture((gf_stream *)rp->objs[i].obj, &g) == GF_OK && g)
            gf_graph_destroy(g);
    }
    gf__rp_sweep_captures(rp);   /* what those captures allocated went with them */
    for (kind = order; *kind; kind++)
        for (i = 1; i < rp->obj_cap; i++) {
            gf__rp_obj *o = &rp->objs[i];
            if (!o->obj || o->device != id || o->kind != *kind || o->parent) continue;
            gf__rp_destroy(o->kind, o->obj);
            o->obj = NULL;
            gf__rp_drop_children(rp, i);   /* a graph's buffers, a module's kernels, a pool's events and streams */
        }
    if ((rp->desc->flags & GF_REPLAY_RACE_CHECK) && gf_race_report(dev, &races) == GF_OK) rp->out->races += races.count;
    if ((rp->desc->flags & GF_REPLAY_PROFILE) && rp->desc->trace_path && !rp->traced) {
        rp->traced = 1;
        if (gf_profiler_write_trace(dev, rp->desc->trace_path) != GF_OK)
            gf__notice(GF_LOG_WARNING, "gf_replay: the trace could not be written: %s", gf__error_text);
    }
    gf_device_close(dev);
    gf__rp_drop_device(rp, id);
}
/* The async destinations so far are freed once every device has finished with them. */
static void gf__rp_settle(gf__replay *rp) {
    uint32_t i;
    int k;
    for (i = 1; i < rp->obj_cap; i++)   /* the library's own wait: no fault rule fails it; a device that cannot finish keeps them */
        if (rp->objs[i].obj && rp->objs[i].kind == 'D' && gf__wait_device((gf_device *)rp->objs[i].obj) != GF_OK) return;
    for (k = 0; k < rp->kept_count; k++) gf__free(rp->kept[k]);
    rp->kept_count = 0;
    rp->scratch_bytes = 0;
}
/* Host memory standing in for the program's: the recorded bytes, or zeroes (n bytes when n
   is within buf, whose range check comes first; else a byte, which the range check refuses). */
static unsigned char gf__rp_one[1];
/* Zeroed host memory an async copy may use until it has run: kept, and counted, so that a file
   cannot make the replay hold more than GF__REPLAY_SCRATCH of it at once. */
static void *gf__rp_scratch(gf__replay *rp, uint64_t n) {
    if (!n || n > GF__REPLAY_SCRATCH) return NULL;
    if ((rp->scratch_bytes += n) > GF__REPLAY_SCRATCH) { gf__rp_settle(rp); rp->scratch_bytes = n; }
    return gf__rp_keep(rp, (size_t)n);
}
/* *owned: what a synchronous call's caller frees after it (else NULL). */
static const void *gf__rp_host(gf__replay *rp, const gf__rp_blob *b, gf_buffer *buf, int async, void **owned) {
    *owned = NULL;
    if (!b->given) return NULL;
    if (b->data) return b->bytes;
    if (!b->n || b->n > gf_buffer_size(buf)) return gf__rp_one;
    if (async) return gf__rp_scratch(rp, b->n);
    return *owned = gf__rp_alloc((size_t)b->n, 1);
}

/* The host bytes one side of a 2D copy spans, by its pitch (0: none, or too many to stand in for). */
static uint64_t gf__rp_span(const gf_copy_2d *c, size_t pitch) {
    uint64_t wide = pitch;   /* (a size_t compared with 2^32 is always false on a 32-bit host, and warned of) */
    if (!c->height || !c->width || wide > ((uint64_t)1 << 32) || c->height > ((size_t)1 << 31)) return 0;
    return (uint64_t)(c->height - 1) * pitch + c->width;
}

/* One argument as read back (only the fields of its letter are set). */
typedef struct gf__rp_arg {
    uint32_t id; void *obj; int missing;   /* objects: missing is a number the replay does not have */
    int too_big;                           /* a size or offset this host's size_t cannot hold (a 64-bit recording on 32 bits) */
    int wrong_kind;                        /* an object, not of the kind the call takes */
    uint64_t u; const char *s; gf__rp_blob blob;
    int given;                             /* descs: a pointer was passed */
    gf_stream_desc sd; gf_buffer_desc bd; gf_event_pool_desc pd; gf_copy_2d c2; gf__rp_blob c2src;
    gf_module_desc md; const char *const *names; int name_count;
    gf_launch_dims dims; gf_arg *args; int argc;
    int args_unwritten;                    /* a refused launch's: the file has fewer args than argc */
    gf_acquire_hint hint; gf_stream_pool_desc qd; gf_stream **streams; gf_budget_desc gd;
    int lacking;                           /* a module's stub kernels the replay could not find */
    int c2dst_given;                       /* a 2D copy to host memory */
    gf_external_type type; uint64_t offset;   /* external memory (size in u), a semaphore (timeline in u) */
} gf__rp_arg;

/* The file's BYTES records (a copy's may come after it) and its semaphore signals (a wait may
   come before the signal that ends it), found before the replay starts. */
static int gf__rp_by_snapshot(const void *a, const void *b) {
    uint64_t x = ((const gf__rp_blob *)a)->snapshot, y = ((const gf__rp_blob *)b)->snapshot;
    return x < y ? -1 : x > y;
}
static void gf__rp_index(gf__replay *rp, gf__rp_in in) {
    uint64_t calls = 0;
    while (in.p < in.end && !in.bad) {
        uint32_t size = gf__rp_u32(&in);
        gf__rp_in rec;
        gf__rp_blob b;
        unsigned call;
        if (in.bad || (uint64_t)(in.end - in.p) < size || size < GF__REC_HEADER - 4) break;
        rec.p = in.p; rec.end = in.p + size; rec.bad = 0;
        in.p += size;
        call = (unsigned)gf__rp_le(&rec, 2);
        calls += call != GF__RC_BYTES && call != GF__RC_END && call != GF__RC_CUT;   /* numbered as the replay numbers them */
        if (call == GF__RC_semaphore_signal_async) {
            gf__rp_signal sig;
            rec.p += GF__REC_HEADER - 10;   /* thread, time */
            if ((int32_t)gf__rp_u32(&rec) != GF_OK) continue;   /* only a signal that was made ends a wait */
            (void)gf__rp_u32(&rec);
            sig.call = calls; sig.sem = gf__rp_u32(&rec); sig.value = gf__rp_u64(&rec);
            if (!rec.bad && gf__rp_grow((void **)&rp->signals, &rp->signal_cap, rp->signal_count + 1, sizeof *rp->signals)) rp->signals[rp->signal_count++] = sig;
            continue;
        }
        if (call == GF__RC_semaphore_export) {   /* then another API may signal it too */
            uint32_t sem;
            rec.p += GF__REC_HEADER - 10;
            if ((int32_t)gf__rp_u32(&rec) != GF_OK) continue;
            sem = gf__rp_u32(&rec);
            if (!rec.bad && gf__rp_grow((void **)&rp->exported, &rp->exported_cap, rp->exported_count + 1, sizeof *rp->exported)) rp->exported[rp->exported_count++] = sem;
            continue;
        }
        if (call != GF__RC_BYTES) continue;
        rec.p += GF__REC_HEADER - 6;   /* thread, time, result */
        b.snapshot = gf__rp_u64(&rec);
        b.given = (int)gf__rp_u32(&rec);
        b.n = gf__rp_u64(&rec);
        b.bytes = rec.p;
        b.data = b.given == 3 && !rec.bad && b.n == (uint64_t)(rec.end - rec.p);
        if (!b.data || !gf__rp_grow((void **)&rp->snapshots, &rp->snapshot_cap, rp->snapshot_count + 1, sizeof *rp->snapshots)) continue;
        rp->snapshots[rp->snapshot_count++] = b;
    }
    if (rp->snapshot_count) qsort(rp->snapshots, (size_t)rp->snapshot_count, sizeof *rp->snapshots, gf__rp_by_snapshot);
}
/* A blob whose bytes are a snapshot's: those bytes, when the file has them at that size (else
   none: the replay copies zeros, as for a copy recorded without its bytes). */
static gf__rp_blob gf__rp_snapshot(gf__replay *rp, gf__rp_blob b) {
    const gf__rp_blob *found;
    if (!b.snapshot || !rp->snapshot_count) return b;
    found = (const gf__rp_blob *)bsearch(&b, rp->snapshots, (size_t)rp->snapshot_count, sizeof *rp->snapshots, gf__rp_by_snapshot);
    if (found && found->n == b.n) { b.data = 1; b.bytes = found->bytes; }
    return b;
}

static void gf__rp_object(gf__replay *rp, gf__rp_in *in, char kind, gf__rp_arg *a) {
    gf__rp_obj *o;
    a->id = gf__rp_u32(in);
    a->obj = NULL;
    a->missing = a->wrong_kind = 0;
    if (!a->id) return;
    o = a->id == GF__REC_UNKNOWN ? NULL : gf__rp_slot(rp, a->id);
    if (!o) { a->missing = 1; return; }
    a->obj = o->obj;   /* of another kind too: a live object, which the call refuses by its type as the original did */
    a->wrong_kind = kind != 'x' && o->kind != kind;
}
/* Reads one call's arguments; 0 when the record is malformed. */
static int gf__rp_args(gf__replay *rp, gf__rp_in *in, const char *letters, gf__rp_arg *v) {
    int i, j;
    for (i = 0; letters[i] && !in->bad; i++) {
        gf__rp_arg *a = &v[i];
        memset(a, 0, sizeof *a);
        switch (strchr(GF__REC_OBJECTS, letters[i]) ? 'x' : strchr(GF__REC_MADE, letters[i]) ? 'd' : letters[i]) {
        case 'x': gf__rp_object(rp, in, letters[i], a); break;
        case 'd': a->id = gf__rp_u32(in); break;
        case 'U': a->u = gf__rp_u64(in); break;
        case '0':
            if ((a->given = (int)gf__rp_u32(in)) != 0) {
                a->type = (gf_external_type)(int)gf__rp_u32(in); a->u = gf__rp_u64(in); a->offset = gf__rp_u64(in); (void)gf__rp_u32(in);
            }
            break;
        case '1':
            if ((a->given = (int)gf__rp_u32(in)) != 0) { a->type = (gf_external_type)(int)gf__rp_u32(in); a->u = gf__rp_u32(in); }
            break;
        case '3':
            if ((a->given = (int)gf__rp_u32(in)) != 0) { a->hint.priority = (gf_priority)(int)gf__rp_u32(in); a->hint.workload = (gf_workload)(int)gf__rp_u32(in); }
            break;
        case '4':
            if ((a->given = (int)gf__rp_u32(in)) != 0) {
                a->qd.count = (int)gf__rp_u32(in); a->qd.strategy = (gf_pool_strategy)(int)gf__rp_u32(in);
                a->qd.label = gf__rp_str(in); a->qd.measure_completion = (int)gf__rp_u32(in);
            }
            break;
        case '5': {
            uint32_t given, n;
            a->argc = (int)gf__rp_u32(in);
            given = gf__rp_u32(in);
            n = given && a->argc > 0 && a->argc <= GF__REC_MAX_ARGS ? (uint32_t)a->argc : 0;
            if (given && !(a->streams = (gf_stream **)gf__rp_keep(rp, sizeof *a->streams * (n ? n : 1)))) { in->bad = 1; break; }
            for (j = 0; j < (int)n && !in->bad; j++) {
                gf__rp_arg one;
                gf__rp_object(rp, in, 'S', &one);
                a->missing |= one.missing;
                a->streams[j] = one.wrong_kind ? NULL : (gf_stream *)one.obj;   /* in an array: NULL is refused as safely */
            }
            break;
        }
        case 'i': case 'u': a->u = gf__rp_u32(in); break;
        case 'z': a->u = gf__rp_u64(in); a->too_big = (uint64_t)(size_t)a->u != a->u; break;
        case 'c': a->s = gf__rp_str(in); break;
        case 'h': case 'o': case 'y': a->blob = gf__rp_snapshot(rp, gf__rp_blob_read(in)); break;
        case '6':
            if ((a->given = (int)gf__rp_u32(in)) != 0) { a->sd.label = gf__rp_str(in); a->sd.priority = (gf_priority)(int)gf__rp_u32(in); }
            break;
        case '7':
            if ((a->given = (int)gf__rp_u32(in)) != 0) {
                gf__rp_arg budget;
                a->u = gf__rp_u64(in); a->bd.size = (size_t)a->u; a->too_big = (uint64_t)a->bd.size != a->u; a->bd.managed = (int)gf__rp_u32(in); a->bd.exportable = (int)gf__rp_u32(in);
                gf__rp_object(rp, in, 'V', &budget);
                a->bd.budget = budget.wrong_kind ? NULL : (gf_budget *)budget.obj;
                a->missing = budget.missing;
            }
            break;
        case '9':
            if ((a->given = (int)gf__rp_u32(in)) != 0) {
                uint32_t warn;
                a->gd.label = gf__rp_str(in); a->gd.limit = gf__rp_u64(in);
                warn = gf__rp_u32(in);
                memcpy(&a->gd.warn_at, &warn, sizeof warn);
            }
            break;
        case '8':
            if ((a->given = (int)gf__rp_u32(in)) != 0) { a->pd.capacity = (int)gf__rp_u32(in); a->pd.timing_capacity = (int)gf__rp_u32(in); }
            break;
        case 'l': {
            uint32_t n;
            if (!(a->given = (int)gf__rp_u32(in))) break;
            a->md.source = gf__rp_str(in);
            (void)gf__rp_str(in);   /* source_path: its text is in source */
#define GF__RP_TEXT(field) a->md.field = gf__rp_str(in);
#define GF__RP_BYTES(field, size) { gf__rp_blob b = gf__rp_blob_read(in); a->md.field = b.bytes; a->md.size = (size_t)(b.data ? b.n : 0); }
            GF__MODULE_DESC_FORMS(GF__RP_TEXT, GF__RP_BYTES)   /* bytes the load refused were not written: none stand in */
#undef GF__RP_TEXT
#undef GF__RP_BYTES
            n = gf__rp_u32(in);
            a->name_count = n == GF__REC_NULL ? -1 : (int)n;
            if (n != GF__REC_NULL && n > GF__REC_MAX_ARGS) { in->bad = 1; break; }
            if (a->name_count > 0) {
                const char **names = (const char **)gf__rp_keep(rp, sizeof *names * n);
                if (!names) { in->bad = 1; break; }
                for (j = 0; j < (int)n; j++) names[j] = gf__rp_str(in);
                a->names = names;
            }
            break;
        }
        case 'a': {   /* count entries, zeroed past the written ones (a refused launch's) */
            uint32_t given, n, written;
            for (j = 0; j < 3; j++) a->dims.grid[j] = gf__rp_u32(in);
            for (j = 0; j < 3; j++) a->dims.block[j] = gf__rp_u32(in);
            a->dims.shared_bytes = (size_t)gf__rp_u64(in);
            a->argc = (int)gf__rp_u32(in);
            given = gf__rp_u32(in);
            written = gf__rp_u32(in);
            n = given && a->argc > 0 && a->argc <= GF__REC_MAX_ARGS ? (uint32_t)a->argc : 0;
            if (written > n) { in->bad = 1; break; }
            a->args_unwritten = written < n;
            if (given && !(a->args = (gf_arg *)gf__rp_keep(rp, sizeof *a->args * (n ? n : 1)))) { in->bad = 1; break; }
            for (j = 0; j < (int)written && !in->bad; j++) {
                gf__rp_arg buf;
                gf__rp_blob value;
                gf__rp_object(rp, in, 'B', &buf);
                value = gf__rp_blob_read(in);
                a->missing |= buf.missing;
                a->args[j].buffer = buf.wrong_kind ? NULL : (gf_buffer *)buf.obj;
                a->args[j].size = (size_t)value.n;
                a->args[j].value = value.data ? value.bytes : NULL;
            }
            break;
        }
        case '2': {
            gf__rp_arg dst, src;
            gf__rp_blob dst_host;
            if (!(a->given = (int)gf__rp_u32(in))) break;
            gf__rp_object(rp, in, 'B', &dst); a->c2.dst_offset = (size_t)gf__rp_u64(in); a->c2.dst_pitch = (size_t)gf__rp_u64(in);
            gf__rp_object(rp, in, 'B', &src); a->c2.src_offset = (size_t)gf__rp_u64(in); a->c2.src_pitch = (size_t)gf__rp_u64(in);
            a->c2.width = (size_t)gf__rp_u64(in); a->c2.height = (size_t)gf__rp_u64(in);
            dst_host = gf__rp_blob_read(in);
            a->c2src = gf__rp_snapshot(rp, gf__rp_blob_read(in));
            a->missing = dst.missing || src.missing;
            a->c2.dst = dst.wrong_kind ? NULL : (gf_buffer *)dst.obj; a->c2.src = src.wrong_kind ? NULL : (gf_buffer *)src.obj;
            a->c2dst_given = dst_host.given;   /* its memory is made at the call */
            if (a->c2src.data) {   /* the rows' bytes, exactly as many as the copy reads */
                uint64_t span = gf__rp_span(&a->c2, a->c2.src_pitch);
                if (!span || span != a->c2src.n || a->c2.width > a->c2.src_pitch) in->bad = 1;
                a->c2.src_host = a->c2src.bytes;
            }
            break;
        }
        case 'f': case 'n': break;
        default: in->bad = 1; break;
        }
    }
    return !in->bad;
}

/* A number the file gives an object just made; 0 when the file is malformed. */
/* 1: numbered; 0: a number no call could have given; -1: no host memory for the table. */
static int gf__rp_made(gf__replay *rp, const gf__rp_arg *a, char kind, void *obj, uint32_t device, uint32_t parent) {
    uint64_t cap;
    if (!a->id) {   /* the file names it nothing, so nothing can use it */
        if (obj && !parent) gf__rp_destroy((char)(kind - 'a' + 'A'), obj);
        return 1;
    }
    if (a->id > GF__REC_MAX_ID || a->id > rp->out->calls + 1 ||   /* each call makes one at most, */
        (a->id < rp->obj_cap && rp->objs[a->id].obj)) {               /* and numbers are never given twice */
        if (obj && !parent) gf__rp_destroy((char)(kind - 'a' + 'A'), obj);
        return 0;
    }
    if (a->id >= rp->obj_cap) {
        gf__rp_obj *grown;
        cap = rp->obj_cap ? rp->obj_cap : 64;
        while (cap <= a->id) cap *= 2;   /* at most 2^31 (ids past GF__REC_MAX_ID are refused above) */
        if (cap > SIZE_MAX / sizeof *grown) grown = NULL;
        else {
            gf__alloc_own++;
            grown = (gf__rp_obj *)gf__realloc(rp->objs, sizeof *grown * (size_t)cap);
            gf__alloc_own--;
        }
        if (!grown) {
            if (obj && !parent) gf__rp_destroy((char)(kind - 'a' + 'A'), obj);
            return -1;
        }
        memset(grown + rp->obj_cap, 0, sizeof *grown * (size_t)(cap - rp->obj_cap));
        rp->objs = grown;
        rp->obj_cap = (uint32_t)cap;
    }
    gf__free(rp->objs[a->id].children);   /* a number given again (its object gone): nothing of the last one stays */
    memset(&rp->objs[a->id], 0, sizeof rp->objs[a->id]);
    rp->objs[a->id].obj = obj;
    rp->objs[a->id].kind = (char)(kind - 'a' + 'A');
    rp->objs[a->id].device = kind == 'd' ? a->id : device;
    rp->objs[a->id].parent = 0;
    if (parent) gf__rp_adopt(rp, parent, a->id);
    return 1;
}
static uint32_t gf__rp_device_of(gf__replay *rp, uint32_t id) { gf__rp_obj *o = gf__rp_slot(rp, id); return o ? o->device : 0; }

static void gf__rp_noop(void *user, gf_result status) { (void)user; (void)status; }

static char gf__rp_destroys(gf__rec_call call) {   /* the kind of object a destroy call takes */
    switch (call) {
    case GF__RC_device_close: return 'D';
    case GF__RC_buffer_destroy: case GF__RC_buffer_destroy_async: return 'B';
    case GF__RC_stream_destroy: return 'S';
    case GF__RC_event_destroy: return 'E';
    case GF__RC_event_pool_destroy: return 'P';
    case GF__RC_module_destroy: return 'M';
    case GF__RC_graph_destroy: return 'G';
    case GF__RC_stream_pool_destroy: return 'Q';
    case GF__RC_stream_set_destroy: return 'W';
    case GF__RC_graph_pool_destroy: return 'J';
    case GF__RC_budget_destroy: return 'V';
    case GF__RC_semaphore_destroy: return 'T';
    default: return 0;
    }
}

/* The stub kernels of a module: by name from desc->stub_kernels, the rest from compile_stub. */
static const gf_stub_kernel *gf__rp_stub_kernels(gf__replay *rp, gf__rp_arg *a, gf_device *dev, int *count) {
    const gf_replay_desc *d = rp->desc;
    gf_stub_kernel *table;
    const char **missing;
    int i, j, found = 0, lacking = 0;
    *count = 0;
    if (a->name_count <= 0) return NULL;
    table = (gf_stub_kernel *)gf__rp_keep(rp, sizeof *table * (size_t)a->name_count);
    missing = (const char **)gf__rp_keep(rp, sizeof *missing * (size_t)a->name_count);
    if (!table || !missing) return NULL;
    for (i = 0; i < a->name_count; i++) {
        const gf_stub_kernel *k = NULL;
        for (j = 0; a->names[i] && d->stub_kernels && j < d->stub_kernel_count && !k; j++)
            if (d->stub_kernels[j].name && !strcmp(d->stub_kernels[j].name, a->names[i])) k = &d->stub_kernels[j];
        if (k) table[found++] = *k;
        else if (a->names[i]) missing[lacking++] = a->names[i];
    }
    if (lacking && d->compile_stub) {
        const gf_stub_kernel *made = NULL;
        if (d->compile_stub(d->user, dev, a->md.source, missing, lacking, &made) == GF_OK && made)
            for (i = 0; i < lacking; i++) table[found++] = made[i];
    }
    *count = found;
    a->lacking = a->name_count - found;
    return found ? table : NULL;
}

/* A load or reload that failed where the recording did not, for want of stub kernels the
   replay was not given: the replay's shortfall, not the program's; it is skipped, and said. */
static int gf__rp_short_of_kernels(gf__replay *rp, gf__rec_call call, const gf__rp_arg *a, gf_result r, gf_result recorded) {
    if (r == recorded || r == GF_OK || !a->lacking) return 0;   /* a load that worked is compared (and kept) */
    gf__notice(GF_LOG_WARNING, "gf_replay: call %llu (%s) is skipped: %d of the module's stub kernels were not given "
               "(gf_replay_desc.stub_kernels or compile_stub), and this backend needs them (%s)",
               (unsigned long long)rp->out->calls, gf__rec_calls[call].name, a->lacking, gf__error_text);
    return 1;
}

/* A call skipped on a stream that is capturing (its first argument): the graph that capture
   makes lacks it, so new arguments for that graph's launches are skipped too. */
static void gf__rp_skipped_in_capture(gf__replay *rp, const char *letters, const gf__rp_arg *v) {
    gf_stream *s = letters[0] == 'S' && v[0].obj && !v[0].missing && !v[0].wrong_kind ? (gf_stream *)v[0].obj : NULL;
    uint64_t id;
    int i;
    if (!s || !gf__stream_capturing(s)) return;
    gf__lock(&s->dev->lock);
    id = s->capture ? s->capture->id : 0;
    gf__unlock(&s->dev->lock);
    for (i = 0; id && i < rp->partial_count; i++) if (rp->partial[i] == id) return;
    if (id && gf__rp_grow((void **)&rp->partial, &rp->partial_cap, rp->partial_count + 1, sizeof *rp->partial)) rp->partial[rp->partial_count++] = id;
}

/* Makes one recorded call again; its result, or GF__RP_SKIPPED (no gf_result: an int, since a
   value outside the enum's range is undefined behaviour in C++) when it was skipped. */
#define GF__RP_SKIPPED 100
static int gf__rp_call(gf__replay *rp, gf__rec_call call, gf__rp_arg *v, gf_result recorded) {
    const gf_replay_desc *d = rp->desc;
    int r = GF__RP_SKIPPED;   /* a gf_result once a case has made the call */
    void *made = NULL;
    const char *letters = gf__rec_calls[call].args;
    uint32_t device = 0, parent = 0;
    uint64_t capture = 0;   /* a buffer made now: the capture it belongs to */
    int partial = 0;        /* a graph made now from a capture that skipped calls */
    void *owned = NULL;     /* host memory a synchronous copy used: freed after it */
    int i, out = -1, made_ok;
    if (d->untrusted) {   /* nothing that could run for ever, or make a great many objects */
        if (call == GF__RC_stream_begin_while || call == GF__RC_stream_begin_while_equal) return GF__RP_SKIPPED;
        if (call == GF__RC_device_open || call == GF__RC_device_open_native) {
            uint32_t k;
            int open = 0;
            for (k = 1; k < rp->obj_cap; k++) open += rp->objs[k].obj && rp->objs[k].kind == 'D';
            if (open >= GF__REPLAY_UNTRUSTED_DEVICES) return GF__RP_SKIPPED;
        }
        if (call == GF__RC_launch) {
            uint64_t threads = 1;
            for (i = 0; i < 3; i++) threads *= (uint64_t)(v[2].dims.grid[i] ? v[2].dims.grid[i] : 1) * (v[2].dims.block[i] ? v[2].dims.block[i] : 1);
            if (threads > GF__REPLAY_UNTRUSTED_THREADS) return GF__RP_SKIPPED;
        }
        if ((call == GF__RC_stream_synchronize_timeout || call == GF__RC_event_synchronize_timeout || call == GF__RC_stream_pool_acquire_ready) &&
            v[1].u > 1000)
            v[1].u = 1000;
        if (call == GF__RC_stream_set_wait_frames && v[2].u > 1000) v[2].u = 1000;
        if (call == GF__RC_event_pool_create && v[1].given) {
            if (v[1].pd.capacity > 64) v[1].pd.capacity = 64;
            if (v[1].pd.timing_capacity > 64) v[1].pd.timing_capacity = 64;
        }
        if (call == GF__RC_stream_set_create && v[1].u > 16) v[1].u = 16;
    }
    if (call == GF__RC_graph_set_kernel_args && v[0].obj && rp->objs[v[0].id].partial) return GF__RP_SKIPPED;   /* not its launches */
    if ((gf__rec_calls[call].flags & GF__RCF_STAND_IN) && recorded != GF_OK) return GF__RP_SKIPPED;   /* its handle failed it */
    if (call == GF__RC_semaphore_export) return GF__RP_SKIPPED;   /* a stand-in has no handle to give */
    if ((call == GF__RC_semaphore_signal_async || call == GF__RC_semaphore_wait_async) && (recorded == GF_ERROR_NOT_SUPPORTED || recorded == GF_ERROR_DRIVER))
        return GF__RP_SKIPPED;   /* the backend's semaphore refused it: a stand-in has none to refuse */
    for (i = 0; letters[i]; i++) {
        if (v[i].missing) return GF__RP_SKIPPED;   /* an object the replay does not have */
        if (v[i].too_big)   /* cut to this host's size_t, it would be another call (and match) */
            return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_replay: %s: %llu (a size or offset of argument %d) does not fit this host's "
                            "size_t", gf__rec_calls[call].name, (unsigned long long)v[i].u, i + 1);
        if (letters[i] == 'x' && v[i].obj && rp->objs[v[i].id].kind != gf__rp_destroys(call))
            v[i].wrong_kind = 1;   /* refused as the original was, and it lives on */
        if (letters[i] >= 'a' && letters[i] <= 'z' && strchr(GF__REC_MADE, letters[i])) out = i;
    }
    if (letters[0] && strchr(GF__REC_OBJECTS, letters[0])) device = gf__rp_device_of(rp, v[0].id);
    if (call == GF__RC_kernel_get || call == GF__RC_event_pool_acquire || call == GF__RC_stream_pool_acquire || call == GF__RC_stream_pool_acquire_ready ||
        call == GF__RC_stream_set_get || call == GF__RC_stream_set_next)
        parent = v[0].id;   /* they go with their module, their pool, their set */
#define GF__RPO(i, T) ((T *)v[i].obj)
    switch (call) {
    case GF__RC_device_open: case GF__RC_device_open_native: {   /* a native device: a device of that backend and index */
        gf_device *dev = NULL;
        /* a value no backend has opens GF_BACKEND_COUNT, which fails as it did (kept as an int
           until it is known: C++ leaves a gf_backend out of the enum's range undefined) */
        int known = (int)v[0].u >= GF_BACKEND_AUTO && (int)v[0].u < GF_BACKEND_COUNT;
        gf_backend recorded_on = known ? (gf_backend)(int)v[0].u : GF_BACKEND_COUNT;
        r = gf_device_open(d->backend != GF_BACKEND_AUTO && known ? d->backend : recorded_on, (int)v[1].u, &dev);
        if (r == GF_OK) {
            if (d->memory_limit) (void)gf_device_set_memory_limit(dev, d->memory_limit);
            if (d->flags & GF_REPLAY_RACE_CHECK) (void)gf_race_check_enable(dev, GF_RACE_CHECK_ON);
            if (d->flags & GF_REPLAY_PROFILE) (void)gf_profiler_enable(dev, GF_PROFILE_ON);
        }
        made = dev;
        break;
    }
    case GF__RC_device_close:
        if (!v[0].obj || v[0].wrong_kind) { gf_device_close((gf_device *)v[0].obj); r = GF_OK; break; }
        gf__rp_close(rp, v[0].id);
        return GF_OK;
    case GF__RC_device_synchronize: r = gf_device_synchronize(GF__RPO(0, gf_device)); break;
    case GF__RC_device_set_memory_limit:
        r = gf_device_set_memory_limit(GF__RPO(0, gf_device), d->memory_limit && (!v[1].u || v[1].u > d->memory_limit) ? d->memory_limit : (size_t)v[1].u);
        break;
    case GF__RC_buffer_create: r = gf_buffer_create(GF__RPO(0, gf_device), (size_t)v[1].u, (gf_buffer **)&made); break;
    case GF__RC_buffer_create_desc: r = gf_buffer_create_desc(GF__RPO(0, gf_device), v[1].given ? &v[1].bd : NULL, (gf_buffer **)&made); break;
    case GF__RC_buffer_destroy: gf_buffer_destroy(GF__RPO(0, gf_buffer)); r = GF_OK; break;
    case GF__RC_buffer_view: r = gf_buffer_view(GF__RPO(0, gf_buffer), (size_t)v[1].u, (size_t)v[2].u, (gf_buffer **)&made); break;
    case GF__RC_copy_to_device:
        r = gf_copy_to_device(GF__RPO(0, gf_buffer), (size_t)v[1].u, gf__rp_host(rp, &v[2].blob, GF__RPO(0, gf_buffer), 0, &owned), (size_t)v[2].blob.n);
        break;
    case GF__RC_copy_to_host: {
        gf__rp_blob room = v[0].blob;
        void *dst;
        room.data = 0;
        dst = (void *)gf__rp_host(rp, &room, GF__RPO(1, gf_buffer), 0, &owned);
        r = gf_copy_to_host(dst, GF__RPO(1, gf_buffer), (size_t)v[2].u, (size_t)v[0].blob.n);
        if (r == GF_OK && recorded == GF_OK && v[0].blob.data && memcmp(dst, v[0].blob.bytes, (size_t)v[0].blob.n) != 0) {
            size_t at = 0;
            while (((const unsigned char *)dst)[at] == ((const unsigned char *)v[0].blob.bytes)[at]) at++;
            r = gf__fail(GF_ERROR_INVALID_STATE, "the bytes copied to the host differ from the recorded ones, first at byte %llu", (unsigned long long)at);
        }
        break;
    }
    case GF__RC_copy_to_device_async:
        r = gf_copy_to_device_async(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (size_t)v[2].u,
                                    gf__rp_host(rp, &v[3].blob, GF__RPO(1, gf_buffer), 1, &owned), (size_t)v[3].blob.n);
        break;
    case GF__RC_copy_to_host_async: {
        gf__rp_blob out_blob = v[1].blob;
        out_blob.data = 0;
        r = gf_copy_to_host_async(GF__RPO(0, gf_stream), (void *)gf__rp_host(rp, &out_blob, GF__RPO(2, gf_buffer), 1, &owned), GF__RPO(2, gf_buffer),
                                  (size_t)v[3].u, (size_t)v[1].blob.n);
        break;
    }
    case GF__RC_copy_buffer_async:
        r = gf_copy_buffer_async(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (size_t)v[2].u, GF__RPO(3, gf_buffer), (size_t)v[4].u, (size_t)v[5].u);
        break;
    case GF__RC_fill_async: r = gf_fill_async(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (size_t)v[2].u, (unsigned char)v[3].u, (size_t)v[4].u); break;
    case GF__RC_fill16_async: r = gf_fill16_async(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (size_t)v[2].u, (uint16_t)v[3].u, (size_t)v[4].u); break;
    case GF__RC_fill32_async: r = gf_fill32_async(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (size_t)v[2].u, (uint32_t)v[3].u, (size_t)v[4].u); break;
    case GF__RC_copy_2d_async:   /* host memory as much as the rows span (the call checks the device side) */
        if (v[1].given && v[1].c2src.given && !v[1].c2src.data) v[1].c2.src_host = gf__rp_scratch(rp, gf__rp_span(&v[1].c2, v[1].c2.src_pitch));
        if (v[1].given && v[1].c2dst_given) v[1].c2.dst_host = gf__rp_scratch(rp, gf__rp_span(&v[1].c2, v[1].c2.dst_pitch));
        r = gf_copy_2d_async(GF__RPO(0, gf_stream), v[1].given ? &v[1].c2 : NULL);
        break;
    case GF__RC_prefetch_async: r = gf_prefetch_async(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (int)v[2].u); break;
    case GF__RC_buffer_create_async:
        r = gf_buffer_create_async(GF__RPO(0, gf_stream), (size_t)v[1].u, (gf_buffer **)&made);
        if (r == GF_OK && !v[0].wrong_kind && ((gf_stream *)v[0].obj)->capture) capture = ((gf_stream *)v[0].obj)->capture->id;
        break;
    case GF__RC_buffer_destroy_async: {
        int graphs = v[1].obj && !v[1].wrong_kind && ((gf_buffer *)v[1].obj)->graph_owner;   /* a no-op: its graph's, it lives on */
        r = gf_buffer_destroy_async(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer));
        if (v[1].obj && !v[1].wrong_kind && r == GF_OK && !graphs) { rp->objs[v[1].id].obj = NULL; gf__rp_drop_children(rp, v[1].id); }
        return r;
    }
    case GF__RC_buffer_record_stream: r = gf_buffer_record_stream(GF__RPO(0, gf_buffer), GF__RPO(1, gf_stream)); break;
    case GF__RC_stream_create: r = gf_stream_create(GF__RPO(0, gf_device), v[1].given ? &v[1].sd : NULL, (gf_stream **)&made); break;
    case GF__RC_stream_destroy: gf_stream_destroy(GF__RPO(0, gf_stream)); r = GF_OK; break;
    case GF__RC_stream_synchronize: r = gf_stream_synchronize(GF__RPO(0, gf_stream)); break;
    case GF__RC_stream_synchronize_timeout: r = gf_stream_synchronize_timeout(GF__RPO(0, gf_stream), (unsigned)v[1].u); break;
    case GF__RC_stream_query: r = gf_stream_query(GF__RPO(0, gf_stream)); break;
    case GF__RC_stream_wait_event: r = gf_stream_wait_event(GF__RPO(0, gf_stream), GF__RPO(1, gf_event)); break;
    case GF__RC_stream_wait_stream: r = gf_stream_wait_stream(GF__RPO(0, gf_stream), GF__RPO(1, gf_stream)); break;
    case GF__RC_stream_add_callback: r = gf_stream_add_callback(GF__RPO(0, gf_stream), gf__rp_noop, NULL); break;
    case GF__RC_event_create: r = gf_event_create(GF__RPO(0, gf_device), (unsigned)v[1].u, (gf_event **)&made); break;
    case GF__RC_event_destroy: gf_event_destroy(GF__RPO(0, gf_event)); r = GF_OK; break;
    case GF__RC_event_record: r = gf_event_record(GF__RPO(0, gf_event), GF__RPO(1, gf_stream)); break;
    case GF__RC_event_synchronize: r = gf_event_synchronize(GF__RPO(0, gf_event)); break;
    case GF__RC_event_synchronize_timeout: r = gf_event_synchronize_timeout(GF__RPO(0, gf_event), (unsigned)v[1].u); break;
    case GF__RC_event_query: r = gf_event_query(GF__RPO(0, gf_event)); break;
    case GF__RC_event_elapsed_ms: { float ms; r = gf_event_elapsed_ms(GF__RPO(0, gf_event), GF__RPO(1, gf_event), &ms); break; }
    case GF__RC_event_pool_create: r = gf_event_pool_create(GF__RPO(0, gf_device), v[1].given ? &v[1].pd : NULL, (gf_event_pool **)&made); break;
    case GF__RC_event_pool_acquire: r = gf_event_pool_acquire(GF__RPO(0, gf_event_pool), (unsigned)v[1].u, (gf_event **)&made); break;
    case GF__RC_event_pool_release: r = gf_event_pool_release(GF__RPO(0, gf_event_pool), GF__RPO(1, gf_event)); break;
    case GF__RC_event_pool_destroy: gf_event_pool_destroy(GF__RPO(0, gf_event_pool)); r = GF_OK; break;
    case GF__RC_module_load:
        if (v[1].given && v[0].obj && !v[0].wrong_kind)
            v[1].md.stub_kernels = gf__rp_stub_kernels(rp, &v[1], GF__RPO(0, gf_device), &v[1].md.stub_kernel_count);
        r = gf_module_load(GF__RPO(0, gf_device), v[1].given ? &v[1].md : NULL, (gf_module **)&made);
        if (gf__rp_short_of_kernels(rp, call, &v[1], (gf_result)r, recorded)) return GF__RP_SKIPPED;
        break;
    case GF__RC_module_reload:
        if (v[1].given && v[0].obj && !v[0].wrong_kind)
            v[1].md.stub_kernels = gf__rp_stub_kernels(rp, &v[1], ((gf_module *)v[0].obj)->dev, &v[1].md.stub_kernel_count);
        if (v[1].given && v[0].obj && !v[0].wrong_kind && v[2].u &&   /* the module's own C kernels, where they were */
            rp->objs[gf__rp_device_of(rp, v[0].id)].recorded_on == gf_device_backend(((gf_module *)v[0].obj)->dev)) {
            v[1].md.stub_kernels = ((gf_module *)v[0].obj)->given_stub;
            v[1].md.stub_kernel_count = ((gf_module *)v[0].obj)->given_stub_count;
        }
        r = gf_module_reload(GF__RPO(0, gf_module), v[1].given ? &v[1].md : NULL);
        if (gf__rp_short_of_kernels(rp, call, &v[1], (gf_result)r, recorded)) return GF__RP_SKIPPED;
        break;
    case GF__RC_kernel_get: r = gf_kernel_get(GF__RPO(0, gf_module), v[1].s, (gf_kernel **)&made); break;
    case GF__RC_module_destroy: gf_module_destroy(GF__RPO(0, gf_module)); r = GF_OK; break;
    case GF__RC_launch:
        r = gf_launch(GF__RPO(0, gf_stream), GF__RPO(1, gf_kernel), v[2].dims, v[2].args, v[2].argc);
        if (r != recorded && v[2].args_unwritten) return GF__RP_SKIPPED;   /* refused for args the file lacks (e.g. a destroyed buffer's) */
        break;
    case GF__RC_graph_set_kernel_args:
        r = gf_graph_set_kernel_args(GF__RPO(0, gf_graph), (int)v[1].u, v[2].args, v[2].argc);
        if (r != recorded && v[2].args_unwritten) return GF__RP_SKIPPED;
        break;
    case GF__RC_stream_begin_capture: r = gf_stream_begin_capture(GF__RPO(0, gf_stream), (gf_capture_mode)(int)v[1].u); break;
    case GF__RC_stream_end_capture:
        if (v[0].obj && !v[0].wrong_kind && ((gf_stream *)v[0].obj)->capture) capture = ((gf_stream *)v[0].obj)->capture->id;
        r = gf_stream_end_capture(GF__RPO(0, gf_stream), (gf_graph **)&made);
        for (i = 0; r == GF_OK && capture && i < rp->graph_signal_count; i++)   /* its semaphore signals and waits: the graph's */
            if (rp->graph_signals[i].capture == capture && rp->graph_signals[i].dev == ((gf_stream *)v[0].obj)->dev) {
                rp->graph_signals[i].capture = 0;
                rp->graph_signals[i].graph = v[1].id;
            }
        if (r == GF_OK && capture) {
            uint32_t at = 0, k;
            while ((k = gf__rp_next_captured(rp, &at)) != 0) {
                gf__rp_obj *o = &rp->objs[k];
                if (!o->obj || o->capture != capture) continue;
                if (o->slots) {   /* the flow's slots: the graph's, as gpuflow left them */
                    if (made) (void)gf__graph_keep((gf_graph *)made, (gf_buffer *)o->obj);
                    gf__buffer_free((gf_buffer *)o->obj);
                    o->obj = NULL;
                } else if (v[1].id && v[1].id < rp->obj_cap) {   /* what the capture allocated is the graph's now */
                    o->capture = 0;
                    gf__rp_adopt(rp, v[1].id, k);
                }
            }
        }
        for (i = 0; capture && i < rp->partial_count; i++)   /* a call of this capture was skipped */
            if (rp->partial[i] == capture) { partial = 1; rp->partial[i] = rp->partial[--rp->partial_count]; break; }
        capture = 0;
        break;
    case GF__RC_graph_launch: r = gf__rp_graph_launch(rp, GF__RPO(0, gf_graph), v[0].id, GF__RPO(1, gf_stream)); break;
    case GF__RC_graph_update:
        if ((r = gf_graph_update(GF__RPO(0, gf_graph), GF__RPO(1, gf_graph))) == GF_OK) gf__rp_graph_update(rp, v[0].id, v[1].id);
        break;
    case GF__RC_graph_destroy: gf_graph_destroy(GF__RPO(0, gf_graph)); r = GF_OK; break;   /* its capture's buffers are its children */
    case GF__RC_stream_begin_while: r = gf_stream_begin_while(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (size_t)v[2].u); break;
    case GF__RC_stream_end_while: r = gf_stream_end_while(GF__RPO(0, gf_stream)); break;
    case GF__RC_stream_begin_if: r = gf_stream_begin_if(GF__RPO(0, gf_stream), GF__RPO(1, gf_buffer), (size_t)v[2].u); break;
    case GF__RC_stream_end_if: r = gf_stream_end_if(GF__RPO(0, gf_stream)); break;
    case GF__RC_stream_begin_while_equal: case GF__RC_stream_begin_if_equal: {
        gf__cond_test test;
        test.value = (int32_t)(uint32_t)v[3].u; test.equal = 1;
        if (v[1].obj && rp->objs[v[1].id].slots && !rp->objs[v[1].id].capture && !v[0].wrong_kind && v[0].obj) {
            gf_stream *s = (gf_stream *)v[0].obj;
            uint64_t id;
            gf__lock(&s->dev->lock);
            id = s->capture ? s->capture->id : 0;
            gf__unlock(&s->dev->lock);
            if (id) gf__rp_mark_captured(rp, v[1].id, id);
        }
        r = gf__cond_begin(call == GF__RC_stream_begin_while_equal ? "gf_stream_begin_while" : "gf_stream_begin_if", GF__RPO(0, gf_stream),
                           GF__RPO(1, gf_buffer), (size_t)v[2].u, call == GF__RC_stream_begin_while_equal ? GF__COND_WHILE : GF__COND_IF, test);
        break;
    }
    case GF__RC_race_check_enable: r = gf_race_check_enable(GF__RPO(0, gf_device), (d->flags & GF_REPLAY_RACE_CHECK) ? GF_RACE_CHECK_ON : (unsigned)v[1].u); break;
    case GF__RC_profiler_enable: r = gf_profiler_enable(GF__RPO(0, gf_device), (d->flags & GF_REPLAY_PROFILE) ? GF_PROFILE_ON : (unsigned)v[1].u); break;
    case GF__RC_faults_set: r = gf_faults_set(v[0].s); rp->set_faults = 1; break;
    case GF__RC_stream_pool_create: r = gf_stream_pool_create(GF__RPO(0, gf_device), v[1].given ? &v[1].qd : NULL, (gf_stream_pool **)&made); break;
    case GF__RC_stream_pool_acquire: case GF__RC_stream_pool_acquire_ready: {
        gf_stream_pool *pool = GF__RPO(0, gf_stream_pool);
        int at = (int)v[3].u;
        if (v[0].wrong_kind) pool = NULL;   /* refused by the call; not read here */
        if (call == GF__RC_stream_pool_acquire_ready && pool && at >= 0 && at < pool->count) {   /* the stream it found idle then */
            gf__atomic_add(&pool->lease[at].acquisitions, 1);
            made = pool->streams[at];
            r = GF_OK;
            break;
        }
        r = call == GF__RC_stream_pool_acquire ? gf_stream_pool_acquire(pool, v[1].given ? &v[1].hint : NULL, (gf_stream **)&made)
                                               : gf_stream_pool_acquire_ready(pool, (unsigned)v[1].u, (gf_stream **)&made);
        if (r == GF_OK && pool && at >= 0 && at < pool->count && made != pool->streams[at]) {   /* the recorded stream, not the strategy's */
            int given = gf__pool_index(pool, (gf_stream **)&made, (gf_result)r);
            gf__atomic_add(&pool->lease[given].releases, 1);
            gf__atomic_add(&pool->lease[at].acquisitions, 1);
            made = pool->streams[at];
        }
        break;
    }
    case GF__RC_stream_pool_release: r = gf_stream_pool_release(GF__RPO(0, gf_stream_pool), GF__RPO(1, gf_stream)); break;
    case GF__RC_stream_pool_synchronize: r = gf_stream_pool_synchronize(GF__RPO(0, gf_stream_pool)); break;
    case GF__RC_stream_pool_destroy: gf_stream_pool_destroy(GF__RPO(0, gf_stream_pool)); r = GF_OK; break;
    case GF__RC_stream_set_create: r = gf_stream_set_create(GF__RPO(0, gf_device), (int)v[1].u, v[2].s, (gf_stream_set **)&made); break;
    case GF__RC_stream_set_get: r = (made = gf_stream_set_get(GF__RPO(0, gf_stream_set), (size_t)v[1].u)) != NULL ? GF_OK : GF_ERROR_INVALID_ARGUMENT; break;
    case GF__RC_stream_set_next: r = gf_stream_set_next(GF__RPO(0, gf_stream_set), (size_t)v[1].u, (gf_stream **)&made); break;
    case GF__RC_stream_set_end_frame: r = gf_stream_set_end_frame(GF__RPO(0, gf_stream_set)); break;
    case GF__RC_stream_set_wait_frames: r = gf_stream_set_wait_frames(GF__RPO(0, gf_stream_set), (int)v[1].u, (unsigned)v[2].u); break;
    case GF__RC_stream_set_synchronize: r = gf_stream_set_synchronize(GF__RPO(0, gf_stream_set)); break;
    case GF__RC_stream_set_destroy: gf_stream_set_destroy(GF__RPO(0, gf_stream_set)); r = GF_OK; break;
    case GF__RC_barrier: r = gf_barrier(v[0].streams, v[0].argc); break;
    case GF__RC_synchronize_all: { double ms; r = gf_synchronize_all(v[0].streams, v[0].argc, &ms); break; }
    case GF__RC_graph_pool_create: r = gf_graph_pool_create(GF__RPO(0, gf_device), (gf_graph_pool **)&made); break;
    case GF__RC_graph_pool_destroy: gf_graph_pool_destroy(GF__RPO(0, gf_graph_pool)); r = GF_OK; break;
    case GF__RC_stream_begin_capture_pool:
        r = gf_stream_begin_capture_pool(GF__RPO(0, gf_stream), (gf_capture_mode)(int)v[1].u, GF__RPO(2, gf_graph_pool));
        break;
    case GF__RC_budget_create: r = gf_budget_create(GF__RPO(0, gf_device), v[1].given ? &v[1].gd : NULL, (gf_budget **)&made); break;
    case GF__RC_budget_destroy: gf_budget_destroy(GF__RPO(0, gf_budget)); r = GF_OK; break;
    /* Interop: stand-ins of gpuflow's own for what came from outside (GF__RCF_STAND_IN) */
    case GF__RC_stream_wrap:   /* stand-ins are made outside fault rules and the memory limit, as the originals' handles were */
        gf__faults_inside++; gf__alloc_own++;
        r = gf_stream_create(GF__RPO(0, gf_device), v[1].given ? &v[1].sd : NULL, (gf_stream **)&made);
        gf__faults_inside--; gf__alloc_own--;
        break;
    case GF__RC_buffer_wrap: case GF__RC_buffer_import: {   /* it succeeded: its size was good (its contents came from outside) */
        uint64_t bytes = call == GF__RC_buffer_wrap ? v[1].u : v[1].u - v[1].offset;
        if (!gf__is(v[0].obj, GF__T_DEVICE) || !bytes || bytes > v[1].u || bytes > (uint64_t)SIZE_MAX) { r = GF_ERROR_INVALID_ARGUMENT; break; }
        gf__alloc_own++;
        r = gf__buffer_new_as("gf_replay", GF__RPO(0, gf_device), (size_t)bytes, GF_MEMORY_IMPORTED, 0, (gf_buffer **)&made);
        gf__alloc_own--;
        break;
    }
    case GF__RC_buffer_export: {   /* made, and the handle closed: nothing here takes it */
        gf_external_handle h;
        if ((r = gf_buffer_export(GF__RPO(0, gf_buffer), (gf_external_type)(int)v[1].u, &h)) == GF_OK) gf__external_handle_close(&h);
        break;
    }
    case GF__RC_semaphore_import: case GF__RC_semaphore_create:
        if (v[0].wrong_kind || !v[0].obj || (call == GF__RC_semaphore_import && !v[1].given)) { r = GF_ERROR_INVALID_ARGUMENT; break; }
        r = (made = gf__rp_semaphore_new(rp, GF__RPO(0, gf_device), (int)v[1].u, v[2].id, call == GF__RC_semaphore_create)) != NULL ? GF_OK : GF_ERROR_OUT_OF_MEMORY;
        break;
    case GF__RC_semaphore_signal_async: r = gf__rp_semaphore_signal(rp, GF__RPO(0, gf_stream), v[1].wrong_kind ? NULL : GF__RPO(1, gf__rp_semaphore), v[2].u); break;
    case GF__RC_semaphore_wait_async: r = gf__rp_semaphore_wait(rp, GF__RPO(0, gf_stream), v[1].wrong_kind ? NULL : GF__RPO(1, gf__rp_semaphore), v[2].u); break;
    case GF__RC_semaphore_destroy:
        if (v[0].obj && !v[0].wrong_kind) gf__rp_semaphore_free(GF__RPO(0, gf__rp_semaphore));
        else gf_semaphore_destroy(NULL);   /* refused, as the original was */
        r = GF_OK;
        break;
    case GF__RC_device_enable_peer: r = gf_device_enable_peer(GF__RPO(0, gf_device), GF__RPO(1, gf_device)); break;
    case GF__RC_device_trim: r = gf_device_trim(GF__RPO(0, gf_device), (size_t)v[1].u); break;
    case GF__RC_device_reset_peak: r = gf_device_reset_peak(GF__RPO(0, gf_device)); break;
    case GF__RC_range_push: gf_range_push(GF__RPO(0, gf_stream), v[1].s); r = GF_OK; break;
    case GF__RC_range_pop: gf_range_pop(GF__RPO(0, gf_stream)); r = GF_OK; break;
    case GF__RC_flow_slots:   /* as gf_flow_capture made it: no fault point, no memory limit */
        if (!v[0].obj || v[0].wrong_kind || !v[1].u) r = GF_ERROR_INVALID_ARGUMENT;
        else r = gf__buffer_new("gf_replay", GF__RPO(0, gf_device), (size_t)v[1].u, GF_MEMORY_DEVICE, (gf_buffer **)&made);
        break;
    case GF__RC_stream_abandon_capture:
        if (v[0].obj && !v[0].wrong_kind) gf__capture_abandon(GF__RPO(0, gf_stream));
        r = GF_OK;
        break;
    case GF__RC_semaphore_export:
    case GF__RC_NONE: case GF__RC_COUNT: case GF__RC_BYTES: case GF__RC_END: case GF__RC_CUT: break;
    }
#undef GF__RPO
    if (letters[0] == 'x' && v[0].obj && !v[0].wrong_kind && !gf__refused(gf__rec_calls[call].name)) {   /* destroyed (not refused): its number, and what went with it */
        gf__rp_drop_children(rp, v[0].id);
        rp->objs[v[0].id].obj = NULL;
    }
    if (out >= 0 && (made_ok = gf__rp_made(rp, &v[out], letters[out], r == GF_OK ? made : NULL, device, parent)) != 1) {
        rp->malformed = 1;   /* what it made is gone again */
        if (made_ok < 0)
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_replay: call %llu (%s) makes object number %lu: out of host memory for a "
                            "table of that many objects (numbers are never given twice)", (unsigned long long)rp->out->calls,
                            gf__rec_calls[call].name, (unsigned long)v[out].id);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: call %llu (%s) makes an object numbered past the calls before it",
                        (unsigned long long)rp->out->calls, gf__rec_calls[call].name);
    }
    if (call == GF__RC_device_open && r == GF_OK && v[2].id && v[2].id < rp->obj_cap) rp->objs[v[2].id].recorded_on = (gf_backend)(int)v[0].u;
    if (call == GF__RC_flow_slots && r == GF_OK && v[2].id && v[2].id < rp->obj_cap) rp->objs[v[2].id].slots = 1;
    if (capture && r == GF_OK && v[2].id && v[2].id < rp->obj_cap) gf__rp_mark_captured(rp, v[2].id, capture);
    if (partial && r == GF_OK && v[1].id && v[1].id < rp->obj_cap) rp->objs[v[1].id].partial = 1;   /* the graph end_capture made */
    gf__rp_sweep_captures(rp);
    gf__free(owned);
    return r;
}

static const char *gf__rp_result_name(int r) { return r == GF__RP_SKIPPED ? "skipped" : gf_result_name((gf_result)r); }

GPUFLOW_IMPL gf_result gf_replay(const gf_replay_desc *desc, gf_replay_report *out) {
    char why[sizeof gf__error_text];   /* the caller's error text, kept; then a malformed file's */
    gf__replay rp;
    gf__rp_in in;
    unsigned char *file = NULL;
    gf_result result = GF_OK;
    uint32_t i;
    GF__CHECK_OUT(out);
    memset(out, 0, sizeof *out);
    if (!desc || (!desc->path && !desc->data)) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: desc->path (or data and size) is required");
    if ((unsigned)desc->backend >= (unsigned)GF_BACKEND_COUNT) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: unknown backend %d", (int)desc->backend);
    if (desc->flags & ~(GF_REPLAY_RACE_CHECK | GF_REPLAY_PROFILE)) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: unknown flags 0x%x", desc->flags);
    if (desc->stub_kernel_count < 0 || (desc->stub_kernel_count > 0 && !desc->stub_kernels))
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: stub_kernel_count %d with stub_kernels %s", desc->stub_kernel_count,
                        desc->stub_kernels ? "given" : "NULL");
    if (desc->path) {
        size_t n = 0;
        FILE *f = gf__open_whole(desc->path, &n);
        int read = f != NULL;
        if (read && !(file = (unsigned char *)gf__rp_alloc(n + 1, 0))) {
            fclose(f);
            return gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_replay: out of host memory for '%s'", desc->path);
        }
        if (read) read = fread(file, 1, n, f) == n;
        if (f) fclose(f);
        if (!read) { gf__free(file); return gf__fail(GF_ERROR_NOT_FOUND, "gf_replay: cannot read '%s' (it must be a regular file this process can read)", desc->path); }
        in.p = file; in.end = file + n;
    } else {
        in.p = (const unsigned char *)desc->data; in.end = in.p + desc->size;
    }
    in.bad = 0;
    if (in.end - in.p < 16 || memcmp(in.p, "gpuflowR", 8) != 0) {
        gf__free(file);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: not a gpuflow recording (it begins with \"gpuflowR\")");
    }
    in.p += 8;
    i = gf__rp_u32(&in);
    if (i < 1 || i > GF__REC_VERSION) { gf__free(file); return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: a recording of another version (%u)", i); }
    (void)gf__rp_u32(&in);   /* flags: what a record says is enough */
    memset(&rp, 0, sizeof rp);
    rp.desc = desc;
    rp.out = out;
    gf__rec_depth++;   /* the replay's own calls are not recorded */
    gf__rp_index(&rp, in);
    memcpy(why, gf__error_text, sizeof why);
    out->cut = 1;
    while (in.p < in.end) {
        gf__rp_in rec;
        gf__rp_arg v[8];
        uint32_t size = gf__rp_u32(&in);
        unsigned call, thread;
        double at_ms;
        gf_result recorded;
        int32_t recorded_code;
        int r;
        if (in.bad || (uint64_t)(in.end - in.p) < size || size < GF__REC_HEADER - 4) break;   /* cut in the middle of a record */
        rec.p = in.p; rec.end = in.p + size; rec.bad = 0;
        in.p += size;
        call = (unsigned)gf__rp_le(&rec, 2);
        thread = (unsigned)gf__rp_le(&rec, 2);
        at_ms = (double)gf__rp_u64(&rec) / 1e6;
        recorded_code = (int32_t)gf__rp_u32(&rec);
        if (call == GF__RC_END || call == GF__RC_CUT) { out->cut = call == GF__RC_CUT; break; }
        if (call == GF__RC_BYTES) continue;   /* read by the copy that names it */
        if (call == GF__RC_NONE || call >= GF__RC_COUNT) { result = gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: record %llu names no call (%u)", (unsigned long long)out->calls + 1, call); out->cut = 0; break; }
        if (!gf__result_known(recorded_code)) {   /* checked before it becomes a gf_result (C++: undefined out of range) */
            result = gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: record %llu (%s) holds no result code (%ld)", (unsigned long long)out->calls + 1,
                              gf__rec_calls[call].name, (long)recorded_code);
            out->cut = 0;
            break;
        }
        recorded = (gf_result)recorded_code;
        out->calls++;
        if ((int)thread > out->threads) out->threads = (int)thread;
        if (!gf__rp_args(&rp, &rec, gf__rec_calls[call].args, v) || rec.p != rec.end) {
            result = gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_replay: call %llu (%s) is malformed", (unsigned long long)out->calls, gf__rec_calls[call].name);
            out->cut = 0;
            break;
        }
        gf__copy_str(gf__error_text, sizeof gf__error_text, "");
        r = gf__rp_call(&rp, (gf__rec_call)call, v, recorded);
        if (r == GF__RP_SKIPPED) gf__rp_skipped_in_capture(&rp, gf__rec_calls[call].args, v);
        if (desc->on_call) {
            gf_replay_call c;
            c.index = out->calls; c.thread = (int)thread; c.at_ms = at_ms; c.name = gf__rec_calls[call].name;
            c.recorded = recorded; c.replayed = r == GF__RP_SKIPPED ? GF_OK : (gf_result)r; c.skipped = r == GF__RP_SKIPPED; c.compared = !(gf__rec_calls[call].flags & GF__RCF_NOCMP);
            desc->on_call(desc->user, &c);
        }
        if (r == GF__RP_SKIPPED) { out->skipped++; continue; }
        if (rp.malformed) { result = (gf_result)r; out->cut = 0; break; }
        out->replayed++;
        if (r != recorded && !(gf__rec_calls[call].flags & GF__RCF_NOCMP)) {
            char text[sizeof out->first_mismatch];
            snprintf(text, sizeof text, "call %llu (thread %u, at %.3f ms): %s: recorded %s, replayed %s%s%.300s", (unsigned long long)out->calls,
                     thread, at_ms, gf__rec_calls[call].name, gf_result_name(recorded), gf__rp_result_name(r), gf__error_text[0] ? ": " : "", gf__error_text);
            if (!out->mismatches++) gf__copy_str(out->first_mismatch, sizeof out->first_mismatch, text);
            gf__notice(GF_LOG_WARNING, "gf_replay: %s", text);
        }
    }
    if (in.bad && result == GF_OK) out->cut = 1;
    if (result != GF_OK) gf__copy_str(why, sizeof why, gf__error_text);   /* the clean-up's calls may set their own */
    for (i = 1; i < rp.obj_cap; i++) if (rp.objs[i].obj && rp.objs[i].kind == 'D') gf__rp_close(&rp, i);   /* left open by the file */
    gf__rp_settle(&rp);
    if (rp.set_faults) (void)gf_faults_set(NULL);   /* the recording's rules end with its replay */
    gf__free(rp.kept);
    gf__free(rp.partial);
    gf__free(rp.snapshots);
    gf__free(rp.signals);
    gf__free(rp.exported);
    gf__free(rp.graph_signals);
    gf__free(rp.captured);
    for (i = 1; i < rp.obj_cap; i++) gf__free(rp.objs[i].children);
    gf__free(rp.objs);
    gf__free(file);
    gf__rec_depth--;
    if (result != GF_OK) return gf__fail(result, "%s", why);
    if (out->mismatches) return gf__fail(GF_ERROR_INVALID_STATE, "gf_replay: %llu of %llu calls returned otherwise than recorded; the first: %s",
                                         (unsigned long long)out->mismatches, (unsigned long long)out->replayed, out->first_mismatch);
    memcpy(gf__error_text, why, sizeof why);   /* a success leaves the caller's error text as it was */
    return GF_OK;
}

/* ---- race detector: happens-before over streams, by byte range ----------------------- >>races */
/* Vector clocks: each stream has a slot and a clock per slot; an operation on stream t ticks
   t's own entry; an event record copies the recording stream's clock, a wait joins it into the
   waiter's; a host synchronize joins what it waited for into the host clock, which every
   stream folds in before its next operation. An access (stream slot, tick) is ordered before
   a later operation on t when t's clock has reached that tick in that slot. Each root buffer
   keeps its recent accesses by byte range; two that overlap, one a write, unordered, are a
   race. All of it is under one lock per device, taken only while the detector is on. */
typedef struct gf__race_access {
    uint32_t slot, epoch; uint64_t tick;   /* the stream's label is its slot's (gf__race.slot_label) */
    size_t lo, hi; int write;
    const char *op;                 /* as in gf__race_use */
} gf__race_access;
struct gf__race_buffer { uint32_t id; gf__race_access *acc; int count, cap, overflowed; };
typedef struct gf__race {
    gf__mutex lock;
    uint64_t *host; int host_n; uint64_t host_version;   /* what the host knows has completed */
    int next_slot; uint32_t next_buffer;
    int *free_slots; int free_count, free_cap;             /* slots of destroyed streams the host clock covers */
    const char **slot_label; int slot_label_cap;           /* each slot's stream label, interned (or
                                                              gf__race_unnamed, tried again at its next use) */
    gf__spin names_lock;                                   /* innermost: the interned names */
    char **names; int name_count, name_cap;                /* open addressing, name_cap a power of two */
    uint64_t count; int reports; char report[GF_RACE_REPORTS][512];
    uint64_t *keys; int key_count, key_cap;                /* races reported, by a hash of both sides: a set
                                                              (open addressing, 0 empty, at most half full) */
    uint32_t epoch;                                        /* bumped when turned on again: older accesses are stale */
    int lost;                                              /* an ordering was lost to a failed host allocation since it
                                                              was turned on: a race it reports may not be one (said so) */
} gf__race;
#define GF__RACE_MAX_USES 64   /* accesses one operation has on the stack; more (2D rows) go to the heap */

static int gf__vc_fit(uint64_t **vc, int *n, int need) {   /* zero-extended to need entries */
    uint64_t *grown;
    if (*n >= need) return 1;
    if (!(grown = (uint64_t *)gf__realloc(*vc, sizeof *grown * (size_t)need))) return 0;
    memset(grown + *n, 0, sizeof *grown * (size_t)(need - *n));
    *vc = grown;
    *n = need;
    return 1;
}
static int gf__vc_join(uint64_t **dst, int *dst_n, const uint64_t *src, int src_n) {   /* 0: out of memory, not joined */
    int i;
    if (!gf__vc_fit(dst, dst_n, src_n)) return 0;
    for (i = 0; i < src_n; i++) if (src[i] > (*dst)[i]) (*dst)[i] = src[i];
    return 1;
}

/* text, kept by the detector until the device closes: what accesses and graphs name their
   operations and streams by (one copy per distinct name, not one per access). Out of host
   memory: fallback, a literal. Report texts show at most 63 characters of an operation's
   name, as when each access kept a 64-byte copy (a kernel's name may have 127; a report keeps
   511 characters, and its advice comes last). */
static const char gf__race_unnamed[] = "a stream";   /* a stream whose label found no memory yet */
static uint64_t gf__race_hash(const char *text) {
    uint64_t h = 1469598103934665603u;
    for (; *text; text++) h = (h ^ (unsigned char)*text) * 1099511628211u;
    return h;
}
static const char *gf__race_intern(gf__race *race, const char *text, const char *fallback) {
    const char *found = fallback;
    int i;
    gf__spin_lock(&race->names_lock);
    if (race->name_count * 2 >= race->name_cap) {   /* kept at most half full: the probes stay short */
        int cap = race->name_cap ? race->name_cap * 2 : 64;
        char **grown = (char **)gf__calloc(sizeof *grown * (size_t)cap);
        if (grown) {
            for (i = 0; i < race->name_cap; i++) {
                size_t at;
                if (!race->names[i]) continue;
                for (at = (size_t)gf__race_hash(race->names[i]) & (size_t)(cap - 1); grown[at]; at = (at + 1) & (size_t)(cap - 1)) {}
                grown[at] = race->names[i];
            }
            gf__free(race->names);
            race->names = grown;
            race->name_cap = cap;
        }
    }
    if (race->name_count < race->name_cap - 1) {   /* a free entry ends every probe */
        size_t at = (size_t)gf__race_hash(text) & (size_t)(race->name_cap - 1);
        while (race->names[at] && strcmp(race->names[at], text)) at = (at + 1) & (size_t)(race->name_cap - 1);
        if (race->names[at]) found = race->names[at];
        else if ((race->names[at] = gf__strdup(text)) != NULL) { found = race->names[at]; race->name_count++; }
    }
    gf__spin_unlock(&race->names_lock);
    return found;
}

/* The stream's slot and clock, with the host clock folded in (race->lock held). */
static int gf__race_stream(gf__race *race, gf_stream *s) {
    GF__HELD(&race->lock);
    if (s->race_slot < 0 && race->free_count > 0) {   /* a destroyed stream's: its ticks go on from the host's */
        s->race_slot = race->free_slots[--race->free_count];
        race->slot_label[s->race_slot] = gf__race_unnamed;
        s->race_host_seen = race->host_version - 1;   /* folded in below, the slot's entry with it */
    } else if (s->race_slot < 0) {
        if (!gf__grow((void **)&race->slot_label, &race->slot_label_cap, race->next_slot + 1, sizeof *race->slot_label)) { race->lost = 1; return 0; }
        race->slot_label[race->next_slot] = gf__race_unnamed;
        s->race_slot = race->next_slot++;
    }
    if (race->slot_label[s->race_slot] == gf__race_unnamed)   /* named at its first use, or again until memory allows */
        race->slot_label[s->race_slot] = gf__race_intern(race, s->label, gf__race_unnamed);
    if (!gf__vc_fit(&s->race_vc, &s->race_n, s->race_slot + 1)) { race->lost = 1; return 0; }
    if (s->race_host_seen != race->host_version) {
        if (!gf__vc_join(&s->race_vc, &s->race_n, race->host, race->host_n)) { race->lost = 1; return 0; }
        s->race_host_seen = race->host_version;
    }
    return 1;
}

/* The accesses one command makes: exact byte ranges on root buffers (a view's are its
   parent's, at the view's offset). */
static gf__race_use gf__race_use_of(gf_buffer *buf, size_t offset, size_t bytes, int write, const char *op) {
    gf__race_use u;
    u.root = buf->parent ? buf->parent : buf;
    u.lo = buf->view_offset + offset;
    u.hi = u.lo + bytes;
    u.op = op;
    u.sem = NULL;
    u.write = write;
    u.launch = -1;
    u.sem_wait = 0;
    return u;
}
/* Counts every access; writes those that fit in cap. */
static void gf__race_add_use(gf__race_use *uses, int cap, int *n, gf_buffer *buf, size_t offset, size_t bytes, int write, const char *op) {
    if (!buf) return;
    if (*n < cap) uses[*n] = gf__race_use_of(buf, offset, bytes, write, op);
    (*n)++;
}
/* How many accesses c makes (the first cap of them in uses). */
static int gf__race_uses_of(gf__race *race, const gf__cmd *c, gf__race_use *uses, int cap) {
    static const char *copy_ops[3] = { "copy-to-device", "copy-to-host", "copy-buffer" };
    char text[sizeof ((gf_kernel *)0)->name + 16];
    const char *op;
    size_t name_n;
    int n = 0, i;
    size_t row;
    switch (c->kind) {
    case GF__CMD_COPY:
        gf__race_add_use(uses, cap, &n, c->as.copy.src, c->as.copy.src_offset, c->as.copy.bytes, 0, copy_ops[c->as.copy.kind]);
        gf__race_add_use(uses, cap, &n, c->as.copy.dst, c->as.copy.dst_offset, c->as.copy.bytes, 1, copy_ops[c->as.copy.kind]);
        break;
    case GF__CMD_COPY_2D: {   /* row by row: a 2D copy touches its rows, not what lies between */
        const gf_copy_2d *c2 = &c->as.copy_2d;
        for (row = 0; row < c2->height; row++) {
            gf__race_add_use(uses, cap, &n, c2->src, c2->src_offset + row * c2->src_pitch, c2->width, 0, "2D copy");
            gf__race_add_use(uses, cap, &n, c2->dst, c2->dst_offset + row * c2->dst_pitch, c2->width, 1, "2D copy");
        }
        break;
    }
    case GF__CMD_FILL: gf__race_add_use(uses, cap, &n, c->as.fill.buf, c->as.fill.offset, c->as.fill.bytes, 1, "fill"); break;
    case GF__CMD_LAUNCH: {
        const gf__cmd_launch *l = &c->as.launch;
        if ((name_n = strlen(l->kernel_name)) >= sizeof text - 16) name_n = sizeof text - 16;
        memcpy(text, "launch '", 8);
        memcpy(text + 8, l->kernel_name, name_n);
        memcpy(text + 8 + name_n, "'", 2);
        op = gf__race_intern(race, text, "launch");
        for (i = 0; i < l->arg_count; i++)
            if (l->args[i].buffer) gf__race_add_use(uses, cap, &n, l->args[i].buffer, 0, l->args[i].buffer->size, l->args[i].size != GF_ARG_READ_ONLY, op);
        break;
    }
    case GF__CMD_COND:
        if (c->as.cond.what <= GF__COND_IF) gf__race_add_use(uses, cap, &n, c->as.cond.buf, c->as.cond.offset, 4, 0, "condition");
        break;
    case GF__CMD_PREFETCH: case GF__CMD_CALLBACK: case GF__CMD_GRAPH: case GF__CMD_SIGNAL: case GF__CMD_SEM_WAIT: break;
    }
    return n;
}

/* A race is the pair of operations (op and stream on each side) on one buffer, whichever came
   first: a write-then-read repeated in a loop is one race, reported once. */
static uint64_t gf__race_side(const char *op, const char *stream) {
    uint64_t h = 1469598103934665603u;
    const char *p;
    for (p = op; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
    h = (h ^ 0xff) * 1099511628211u;
    for (p = stream; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
    return h;
}
static uint64_t gf__race_key(const char *a_op, const char *a_stream, const char *b_op, const char *b_stream, uint32_t id) {
    uint64_t x = gf__race_side(a_op, a_stream), y = gf__race_side(b_op, b_stream);
    return (x < y ? x * 31 + y : y * 31 + x) ^ ((uint64_t)id * 0x9e3779b97f4a7c15u);
}
/* A new race (race->lock held): counted and kept once; its text goes to out for logging. */
/* The slot of key in the set of races reported, or the empty one it would go in. */
static int gf__race_key_slot(const uint64_t *keys, int cap, uint64_t key) {
    int h = (int)((key * 0x9e3779b97f4a7c15u) >> 40) & (cap - 1);
    while (keys[h] && keys[h] != key) h = (h + 1) & (cap - 1);
    return h;
}
static int gf__race_found(gf__race *race, uint64_t key, const char *text, char *out, size_t cap) {
    GF__HELD(&race->lock);
    int h, i;
    if (!key) key = 1;   /* 0 marks an empty slot */
    if (race->key_cap && race->keys[gf__race_key_slot(race->keys, race->key_cap, key)]) return 0;   /* told already */
    if ((race->key_count + 1) * 2 > race->key_cap) {   /* grown (out of memory: the race is told, and may be again) */
        int grown_cap = race->key_cap ? race->key_cap * 2 : 64;
        uint64_t *grown = (uint64_t *)gf__calloc(sizeof *grown * (size_t)grown_cap);
        if (grown) {
            for (i = 0; i < race->key_cap; i++) if (race->keys[i]) grown[gf__race_key_slot(grown, grown_cap, race->keys[i])] = race->keys[i];
            gf__free(race->keys);
            race->keys = grown;
            race->key_cap = grown_cap;
        }
    }
    if ((race->key_count + 1) * 2 <= race->key_cap) {
        h = gf__race_key_slot(race->keys, race->key_cap, key);
        race->keys[h] = key;
        race->key_count++;
    }
    race->count++;
    if (race->lost) {   /* said in the report itself: the program's log shows why it may be wrong */
        char said[1200];
        snprintf(said, sizeof said, "%s (gpuflow ran out of host memory earlier and lost an ordering: this one may not be a race)", text);
        if (race->reports < GF_RACE_REPORTS) gf__copy_str(race->report[race->reports++], sizeof race->report[0], said);
        gf__copy_str(out, cap, said);
        return 1;
    }
    if (race->reports < GF_RACE_REPORTS) gf__copy_str(race->report[race->reports++], sizeof race->report[0], text);
    gf__copy_str(out, cap, text);
    return 1;
}

/* Checks one access by stream s against the root buffer's earlier ones, then keeps it
   (race->lock held). A found race's text goes to msg. */
static void gf__race_access_one(gf__race *race, gf_stream *s, const gf__race_use *u, char *msg, size_t cap) {
    GF__HELD(&race->lock);
    struct gf__race_buffer *rb = u->root->race;
    uint64_t tick = s->race_vc[s->race_slot];
    gf__race_access *a;
    int i;
    if (!rb) {
        if (!(rb = (struct gf__race_buffer *)gf__calloc(sizeof *rb))) return;
        rb->id = ++race->next_buffer;
        u->root->race = rb;
    }
    for (i = 0; i < rb->count; ) {
        a = &rb->acc[i];
        if (a->epoch != race->epoch ||   /* from before the detector was last off, or known done: nothing can race it */
            ((int)a->slot < race->host_n && race->host[a->slot] >= a->tick)) { rb->acc[i] = rb->acc[--rb->count]; continue; }
        if (a->lo < u->hi && u->lo < a->hi) {
            int ordered = a->slot == (uint32_t)s->race_slot || ((int)a->slot < s->race_n && s->race_vc[a->slot] >= a->tick);
            if (!ordered && (a->write || u->write)) {
                char text[1024];
                const char *a_stream = race->slot_label[a->slot];
                size_t lo = a->lo > u->lo ? a->lo : u->lo, hi = a->hi < u->hi ? a->hi : u->hi;
                if (s == s->dev->sync_stream)   /* a synchronous call's: its stream is not the program's to order */
                    snprintf(text, sizeof text, "race: buffer %u [%llu, %llu) %s by %.63s on '%s', %s by a synchronous %.63s: nothing orders "
                             "them (synchronize '%s', or an event recorded on it after the %.63s, before the synchronous call)",
                             rb->id, (unsigned long long)lo, (unsigned long long)hi, a->write ? "written" : "read", a->op, a_stream,
                             u->write ? "written" : "read", u->op, a_stream, a->op);
                else
                    snprintf(text, sizeof text, "race: buffer %u [%llu, %llu) %s by %.63s on '%s', %s by %.63s on '%s': no event orders them "
                             "(record an event on '%s' after the %.63s and make '%s' wait on it)",
                             rb->id, (unsigned long long)lo, (unsigned long long)hi, a->write ? "written" : "read", a->op, a_stream,
                             u->write ? "written" : "read", u->op, s->label, a_stream, a->op, s->label);
                if (!msg[0]) gf__race_found(race, gf__race_key(a->op, a_stream, u->op, s->label, rb->id), text, msg, cap);
                else gf__race_found(race, gf__race_key(a->op, a_stream, u->op, s->label, rb->id), text, text, sizeof text);
            }
            /* an earlier access this one orders and covers can never race with later ones */
            if (ordered && u->lo <= a->lo && a->hi <= u->hi && (u->write || !a->write)) { rb->acc[i] = rb->acc[--rb->count]; continue; }
        }
        i++;
    }
    if (rb->count == GF__RACE_ACCESSES) {   /* none known done: the oldest goes, and races with it may be missed */
        if (!rb->overflowed) {
            rb->overflowed = 1;
            gf__notice(GF_LOG_WARNING, "race detector: buffer %u has %d accesses no synchronize has retired; the oldest are forgotten "
                       "from now on, so a race with one of them may be missed (synchronize now and then)", rb->id, GF__RACE_ACCESSES);
        }
        memmove(rb->acc, rb->acc + 1, sizeof *rb->acc * (size_t)(--rb->count));
    }
    if (!gf__grow((void **)&rb->acc, &rb->cap, rb->count + 1, sizeof *rb->acc)) return;
    a = &rb->acc[rb->count++];
    a->slot = (uint32_t)s->race_slot;
    a->epoch = race->epoch;
    a->tick = tick;
    a->lo = u->lo; a->hi = u->hi; a->write = u->write;
    a->op = u->op;
}

/* GPUFLOW_RACE_CHECK=abort (gf__race_abort): the first race found ends the process, said on
   stderr first (a CI job that reads only exit statuses then fails; as a sanitizer's halt on
   error). */
static void gf__race_log(const char *msg) {
    if (!msg[0]) return;
    gf__log_text(GF_LOG_WARNING, GF_OK, msg);
    if (gf__atomic_load_int(&gf__race_abort)) {
        fprintf(stderr, "gpuflow: GPUFLOW_RACE_CHECK=abort: the process ends at its first race: %s\n", msg);
        fflush(stderr);
        abort();
    }
}

/* An operation on s (s->lock held): one tick, then each of its accesses. */
static void gf__race_apply(gf_stream *s, const gf__race_use *uses, int n) {
    GF__HELD(&s->lock);
    gf__race *race = s->dev->race;
    char msg[512];
    int i;
    msg[0] = 0;
    gf__lock(&race->lock);
    if (!gf__atomic_load_int(&s->dev->race_on)) { gf__unlock(&race->lock); return; }   /* switched off since the caller looked */
    if (gf__race_stream(race, s)) {
        s->race_vc[s->race_slot]++;
        /* each device keeps its own clocks: the other side of a copy between devices is not checked */
        for (i = 0; i < n; i++) if (uses[i].root && uses[i].root->dev == s->dev) gf__race_access_one(race, s, &uses[i], msg, sizeof msg);
    }
    gf__unlock(&race->lock);
    gf__race_log(msg);
}
/* c's accesses: in stack when they fit, else on the heap (the caller frees *uses if it is
   not stack); without memory for them, the first GF__RACE_MAX_USES. */
static int gf__race_uses_all(gf__race *race, const gf__cmd *c, gf__race_use *stack, gf__race_use **uses) {
    int n = gf__race_uses_of(race, c, stack, GF__RACE_MAX_USES);
    *uses = stack;
    if (n > GF__RACE_MAX_USES) {
        if ((*uses = (gf__race_use *)gf__malloc(sizeof **uses * (size_t)n)) != NULL) gf__race_uses_of(race, c, *uses, n);
        else { *uses = stack; n = GF__RACE_MAX_USES; }
    }
    return n;
}
/* A graph launch's semaphore waits (wait 1) or signals (wait 0), as captured (g->lock held). */
static void gf__race_graph_sems(gf_stream *s, gf_graph *g, int wait) {
    GF__HELD(&g->lock);
    int i;
    for (i = 0; i < g->race_use_count; i++) {
        if (!g->race_uses[i].sem || g->race_uses[i].sem_wait != wait) continue;
        if (wait) gf__race_sem_wait(s, g->race_uses[i].sem);
        else gf__race_signal(s, g->race_uses[i].sem);
    }
}
static void gf__race_op(gf_stream *s, const gf__cmd *c) {
    gf__race_use stack[GF__RACE_MAX_USES], *uses;
    int n;
    if (c->kind == GF__CMD_GRAPH) {   /* its own order inside; set_kernel_args and update change it under the graph's lock */
        gf__lock(&c->as.child->lock);
        gf__race_graph_sems(s, c->as.child, 1);   /* its waits before its work, its signals after: a race may */
        gf__race_apply(s, c->as.child->race_uses, c->as.child->race_use_count);   /* go unseen, none is made up */
        gf__race_graph_sems(s, c->as.child, 0);
        gf__unlock(&c->as.child->lock);
        return;
    }
    if (c->kind == GF__CMD_SIGNAL) { gf__race_signal(s, c->as.sem.sem); return; }
    if (c->kind == GF__CMD_SEM_WAIT) { gf__race_sem_wait(s, c->as.sem.sem); return; }
    if (c->kind == GF__CMD_FILL) {   /* the commonest: one access, no list to build */
        gf__race_use fill = gf__race_use_of(c->as.fill.buf, c->as.fill.offset, c->as.fill.bytes, 1, "fill");
        gf__race_apply(s, &fill, 1);
        return;
    }
    n = gf__race_uses_all(s->dev->race, c, stack, &uses);
    gf__race_apply(s, uses, n);
    if (uses != stack) gf__free(uses);
}
/* Appends n accesses to what g's replays touch; 0: out of host memory (then g tracks none). */
static int gf__race_keep(gf_graph *g, const gf__race_use *from, int n) {
    if (n <= 0) return 1;   /* none (memcpy of none from NULL is still undefined) */
    if (!gf__grow((void **)&g->race_uses, &g->race_use_cap, g->race_use_count + n, sizeof *g->race_uses)) { g->race_use_count = 0; return 0; }
    memcpy(g->race_uses + g->race_use_count, from, sizeof *from * (size_t)n);
    g->race_use_count += n;
    return 1;
}
/* A capture keeps what its commands touch, for each replay (dev->lock held). A launch's are
   tagged with its index among the graph's launches (launch; -1 for other commands). */
static void gf__race_capture(gf_graph *g, const gf__cmd *c, int launch) {
    GF__HELD(&g->dev->lock);
    gf__race_use stack[GF__RACE_MAX_USES], *uses, marker;
    int n, i;
    if (c->kind == GF__CMD_GRAPH) {   /* a child graph's launches are not the parent's to retarget */
        int first = g->race_use_count;
        if (gf__race_keep(g, c->as.child->race_uses, c->as.child->race_use_count))
            for (i = first; i < g->race_use_count; i++) g->race_uses[i].launch = -1;
        return;
    }
    if (c->kind == GF__CMD_SIGNAL || c->kind == GF__CMD_SEM_WAIT) {   /* each launch signals or waits (the graph holds sem) */
        memset(&marker, 0, sizeof marker);
        marker.launch = -1;
        marker.sem = c->as.sem.sem;
        marker.sem_wait = c->kind == GF__CMD_SEM_WAIT;
        gf__race_keep(g, &marker, 1);
        return;
    }
    n = gf__race_uses_all(g->dev->race, c, stack, &uses);
    for (i = 0; i < n; i++) uses[i].launch = launch;
    if (n == 0 && launch >= 0) {   /* holds the launch's place for arguments given later */
        memset(&marker, 0, sizeof marker);
        marker.launch = launch;
        gf__race_keep(g, &marker, 1);
    } else gf__race_keep(g, uses, n);
    if (uses != stack) gf__free(uses);
}
/* gf_graph_set_kernel_args gave launch its new arguments (g->lock held): the accesses its
   replays check follow. A graph captured with the detector off tracks none: nothing to do. */
static void gf__race_retarget(gf_graph *g, int launch, const gf__cmd *c) {
    GF__HELD(&g->lock);
    gf__race_use stack[GF__RACE_MAX_USES], *uses, *next = NULL, marker;
    int n, i, at = -1, count = 0, cap = 0;
    for (i = 0; i < g->race_use_count && at < 0; i++) if (g->race_uses[i].launch == launch) at = i;
    if (at < 0) return;
    n = gf__race_uses_all(g->dev->race, c, stack, &uses);
    memset(&marker, 0, sizeof marker);
    marker.launch = launch;
    for (i = 0; i < n; i++) uses[i].launch = launch;
    if (gf__grow((void **)&next, &cap, g->race_use_count + n + 1, sizeof *next)) {
        for (i = 0; i < g->race_use_count; i++) {
            if (i == at) {
                memcpy(next + count, n ? uses : &marker, sizeof *next * (size_t)(n ? n : 1));
                count += n ? n : 1;
            }
            if (g->race_uses[i].launch != launch) next[count++] = g->race_uses[i];
        }
    }
    gf__free(g->race_uses);   /* without memory for the new list, the graph tracks none (never a stale one) */
    g->race_uses = next;
    g->race_use_count = count;
    g->race_use_cap = cap;
    if (uses != stack) gf__free(uses);
}
/* gf_graph_update: target replays from's commands, so it checks from's accesses (locks held). */
static void gf__race_take(gf_graph *target, const gf_graph *from) {
    target->race_use_count = 0;
    gf__race_keep(target, from->race_uses, from->race_use_count);
}
static void gf__race_record(gf_event *ev, gf_stream *s) {   /* s->lock held */
    GF__HELD(&s->lock);
    gf__race *race = s->dev->race;
    gf__lock(&race->lock);
    if (!gf__atomic_load_int(&s->dev->race_on)) { gf__unlock(&race->lock); return; }   /* switched off since the caller looked */
    if (gf__race_stream(race, s) && gf__vc_fit(&ev->race_vc, &ev->race_n, s->race_n)) {   /* the whole clock: no tick of an older record stays */
        memcpy(ev->race_vc, s->race_vc, sizeof *s->race_vc * (size_t)s->race_n);
        memset(ev->race_vc + s->race_n, 0, sizeof *ev->race_vc * (size_t)(ev->race_n - s->race_n));
    } else race->lost = 1;
    gf__unlock(&race->lock);
}
/* One clock joined into another, for s (s->lock held): into s's own (a wait: of an event's
   record, of a semaphore's signals), or s's into *vc (a signal: a semaphore carries the clocks
   of all its signals so far, so a wait for an earlier value may order more than it does: a
   race can go unseen, never a false one reported). */
static void gf__race_join(gf_stream *s, uint64_t **vc, int *n, int into_stream) {
    GF__HELD(&s->lock);
    gf__race *race = s->dev->race;
    gf__lock(&race->lock);
    if (gf__atomic_load_int(&s->dev->race_on)) {   /* may have been switched off since the caller looked */
        if (!gf__race_stream(race, s) || !(into_stream ? gf__vc_join(&s->race_vc, &s->race_n, *vc, *n) : gf__vc_join(vc, n, s->race_vc, s->race_n)))
            race->lost = 1;
    }
    gf__unlock(&race->lock);
}
static void gf__race_wait(gf_stream *s, gf_event *ev) { gf__race_join(s, &ev->race_vc, &ev->race_n, 1); }
static void gf__race_signal(gf_stream *s, gf_semaphore *sem) { gf__race_join(s, &sem->race_vc, &sem->race_n, 0); }
static void gf__race_sem_wait(gf_stream *s, gf_semaphore *sem) { gf__race_join(s, &sem->race_vc, &sem->race_n, 1); }
/* The host learnt that what vc describes has completed (a synchronize, a query that said done,
   a waiter that fired): every stream's next operation is ordered after it. */
static void gf__race_host_knows(gf__race *race, uint64_t *const *vc, const int *n) {   /* under race->lock */
    if (!*n) return;
    if (!gf__vc_join(&race->host, &race->host_n, *vc, *n)) race->lost = 1;
    race->host_version++;
}
static gf__race_seen gf__race_seen_of(gf_device *dev, uint64_t *const *vc, const int *n) {
    gf__race_seen seen = { NULL, 0 };
    gf__race *race;
    if (!GF__RACE_ON(dev)) return seen;
    race = dev->race;   /* made by the first enable, before it turned race_on */
    gf__lock(&race->lock);
    if (gf__atomic_load_int(&dev->race_on) && *n && (seen.vc = (uint64_t *)gf__malloc(sizeof **vc * (size_t)*n)) != NULL) {
        memcpy(seen.vc, *vc, sizeof **vc * (size_t)*n);
        seen.n = *n;
    } else if (gf__atomic_load_int(&dev->race_on) && *n) race->lost = 1;   /* the wait teaches nothing: a race may be made up, none missed */
    gf__unlock(&race->lock);
    return seen;
}
static gf__race_seen gf__race_seen_stream(gf_stream *s) { return gf__race_seen_of(s->dev, &s->race_vc, &s->race_n); }
static gf__race_seen gf__race_seen_event(gf_event *ev) { return gf__race_seen_of(ev->dev, &ev->race_vc, &ev->race_n); }
/* The wait ended (done: what it waited for completed): the host learns the clock it began with. */
static void gf__race_seen_done(gf_device *dev, gf__race_seen *seen, int done) {
    if (!seen->vc) return;
    if (done) {
        gf__race *race = dev->race;
        gf__lock(&race->lock);
        if (gf__atomic_load_int(&dev->race_on)) gf__race_host_knows(race, &seen->vc, &seen->n);   /* switched off since: nothing to learn */
        gf__unlock(&race->lock);
    }
    gf__free(seen->vc);
    seen->vc = NULL;
}
/* A buffer's memory is going (s: freed on that stream, a write ordered there; NULL: a destroy on
   the host, which is no access: the memory waits for the work queued before it, so it races
   with nothing). Either way the root's accesses are forgotten. */
static void gf__race_free(gf_buffer *buf, gf_stream *s) {
    gf__race *race = buf->dev->race;
    gf_buffer *root = buf->parent ? buf->parent : buf;
    char msg[512];
    msg[0] = 0;
    gf__lock(&race->lock);
    if (!gf__atomic_load_int(&buf->dev->race_on)) {}   /* switched off since the caller looked: nothing to judge */
    else if (s && root == buf) {
        gf__race_use u;
        memset(&u, 0, sizeof u);
        u.root = root; u.lo = 0; u.hi = root->capacity; u.write = 1;
        u.op = "free (gf_buffer_destroy_async)";
        if (gf__race_stream(race, s)) { s->race_vc[s->race_slot]++; gf__race_access_one(race, s, &u, msg, sizeof msg); }
    }
    if (root == buf && root->race) { gf__free(root->race->acc); gf__free(root->race); root->race = NULL; }
    gf__unlock(&race->lock);
    gf__race_log(msg);
}
/* A stream goes, synchronized: its slot is another stream's next if the host clock covers its
   every tick (then every later operation is ordered after all it did, and the next owner's
   ticks go on above them). Else (the detector off, the wait failed) the slot stays unused. */
static void gf__race_slot_release(gf_stream *s) {
    gf__race *race;
    int slot = s->race_slot;
    if (slot < 0 || !GF__RACE_ON(s->dev)) return;   /* off: its slot stays taken */
    race = s->dev->race;   /* read once known on, as gf__race_seen_of does: the first enable makes it */
    gf__lock(&race->lock);
    if (gf__atomic_load_int(&s->dev->race_on) && slot < s->race_n && slot < race->host_n && race->host[slot] >= s->race_vc[slot] &&
        gf__grow((void **)&race->free_slots, &race->free_cap, race->free_count + 1, sizeof *race->free_slots))
        race->free_slots[race->free_count++] = slot;
    gf__unlock(&race->lock);
}
static void gf__race_forget(gf_buffer *buf) {   /* the memory is gone: so are its accesses */
    gf__race *race = buf->dev->race;
    gf__lock(&race->lock);
    gf__free(buf->race->acc);
    gf__free(buf->race);
    buf->race = NULL;
    gf__unlock(&race->lock);
}

static gf_result gf__call_race_check_enable(gf_device *dev, unsigned flags) {
    gf_result r = GF_OK;
    GF__CHECK(dev, GF__T_DEVICE);
    if (flags & ~GF_RACE_CHECK_ON) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_race_check_enable: unknown flags 0x%x", flags);
    gf__lock(&dev->lock);
    if (flags && !dev->race) {
        if (!(dev->race = (gf__race *)gf__calloc(sizeof *dev->race))) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_race_check_enable: out of host memory");
        else gf__mutex_init(&dev->race->lock);
    }
    /* on again: what happened while it was off was not seen, so older accesses are forgotten.
       The epoch and the switch change together under the detector's lock, and each recorder
       looks at the switch again under that lock: an operation that saw "on" before a toggle
       cannot land in the new epoch while a later one of the same thread saw "off". */
    if (r == GF_OK && dev->race) {
        gf__lock(&dev->race->lock);
        if (flags && !gf__atomic_load_int(&dev->race_on)) { dev->race->epoch++; dev->race->lost = 0; }
        gf__atomic_store_int(&dev->race_on, flags ? 1 : 0);
        gf__unlock(&dev->race->lock);
    }
    gf__unlock(&dev->lock);
    return r;
}

GPUFLOW_IMPL gf_result gf_race_report(gf_device *dev, gf_race_info *out) {
    gf__race *race;
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    memset(out, 0, sizeof *out);
    gf__lock(&dev->lock);   /* as the first gf_race_check_enable made it: a report meanwhile sees it whole or not at all */
    race = dev->race;
    gf__unlock(&dev->lock);
    if (!race) return GF_OK;
    gf__lock(&race->lock);
    out->count = race->count;
    out->reports = race->reports;
    memcpy(out->report, race->report, sizeof out->report);
    gf__unlock(&race->lock);
    return GF_OK;
}

static void gf__race_close(gf_device *dev) {
    int i;
    if (!dev->race) return;
    for (i = 0; i < dev->race->name_cap; i++) gf__free(dev->race->names[i]);
    gf__free(dev->race->names);
    gf__free(dev->race->slot_label);
    gf__free(dev->race->free_slots);
    gf__free(dev->race->host);
    gf__free(dev->race->keys);
    gf__mutex_destroy(&dev->race->lock);
    gf__free(dev->race);
    dev->race = NULL;
}

/* ---- hang diagnostics: the device's state as text ------------------------------------ >>hangs */
/* Per stream: what is not known to be done (from the ring of its latest operations), what it
   waits on, a callback running now; then captures in progress and async waiters. Queries the
   driver but never waits. */
static void gf__describe(gf_device *dev, gf__text *t) {
    uint64_t after = 0, last = gf__atomic_load(&dev->next_id);
    gf__capture *c;
    int i;
    gf__say(t, "device %s:\n", dev->tag);
    for (;;) {   /* streams in id order, each held as a device synchronize holds it */
        gf_stream *s = NULL;
        uint64_t sub, ret;
        int capturing = 0, k;
        gf__lock(&dev->lock);
        for (i = 0; i < dev->stream_count; i++)
            if (dev->streams[i]->id > after && dev->streams[i]->id <= last && (!s || dev->streams[i]->id < s->id)) s = dev->streams[i];
        if (s) { s->sync_refs++; capturing = s->capture != NULL; }
        gf__unlock(&dev->lock);
        if (!s) break;
        after = s->id;
        sub = gf__atomic_load(&s->submitted);   /* before the query: work queued after it is not covered */
        if (!capturing && s->dev->be->stream_query(s) == GF_OK) gf__stream_retire(s, sub);
        ret = gf__atomic_load(&s->retired);   /* retired first, then submitted: ret <= sub */
        sub = gf__atomic_load(&s->submitted);
        if (s->dev->be->describe_stream) s->dev->be->describe_stream(s, t);
        if (sub != ret || gf__atomic_load_int(&s->callback_running) || capturing) {
            gf__say(t, "  stream '%s': %llu operation%s not known to be done%s%s\n", s->label, (unsigned long long)(sub - ret),
                    sub - ret == 1 ? "" : "s", gf__atomic_load_int(&s->callback_running) ? "; a host callback is running now" : "",
                    capturing ? "; capturing" : "");
            gf__lock(&s->lock);
            for (k = 0; k < GF__RECENT_OPS; k++) {
                const gf__op_note *n = &s->recent[(sub + 1 + (uint64_t)k) % GF__RECENT_OPS];
                if (!n->seq || n->seq <= ret || n->seq > sub) continue;
                if (n->has_value)
                    gf__say(t, "    #%llu %s '%s: %llu'\n", (unsigned long long)n->seq, gf__op_name(n->kind), n->name, (unsigned long long)n->value);
                else if (n->across)
                    gf__say(t, "    #%llu %s\n       waits for the event recorded on %s\n", (unsigned long long)n->seq, gf__op_name(n->kind), n->name);
                else
                    gf__say(t, "    #%llu %s%s%s%s\n", (unsigned long long)n->seq, gf__op_name(n->kind),
                            n->name[0] ? " '" : "", n->name, n->name[0] ? "'" : "");
                if (n->waits_on) {
                    char label[80];
                    gf__stream_label_of(dev, n->waits_on, label, sizeof label);
                    gf__say(t, "       waits for the event recorded on %s\n", label);
                }
            }
            gf__unlock(&s->lock);
        }
        gf__lock(&dev->lock);
        s->sync_refs--;
        gf__cond_broadcast(&dev->released);
        gf__unlock(&dev->lock);
    }
    gf__lock(&dev->lock);
    for (c = dev->captures; c; c = c->next)
        gf__say(t, "  capture in progress on stream '%s' (%d stream%s in it)\n", c->origin->label, c->member_count, c->member_count == 1 ? "" : "s");
    gf__unlock(&dev->lock);
    if (dev->waiter) {
        gf__waiter *w = dev->waiter;
        gf__waiter_lock(w);
        for (i = 0; i < w->count; i++) {
            gf__record_info rec = gf__event_latest(w->waits[i].ev);
            char label[80] = "";
            if (rec.recorded) gf__stream_label_of(dev, rec.stream_id, label, sizeof label);
            gf__say(t, "  async waiter %llu: on an event %s%s\n", (unsigned long long)w->waits[i].id,
                    rec.recorded ? "recorded on " : "never recorded", label);
        }
        if (w->firing) gf__say(t, "  async waiter %llu: its callback is running now\n", (unsigned long long)w->firing);
        gf__unlock(&w->lock);
    }
}

GPUFLOW_IMPL gf_result gf_device_write_state(gf_device *dev, char *text, size_t size) {
    gf__text t;
    GF__CHECK(dev, GF__T_DEVICE);
    if (!text || size == 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_device_write_state: text is NULL or size is 0");
    t.p = text; t.cap = size; t.used = 0;
    text[0] = 0;
    gf__describe(dev, &t);
    return GF_OK;
}

/* GPUFLOW_HANG_MS: a wait past its bound logs the state, once per wait. */
static void gf__hang_report(gf_device *dev, const char *what) {
    char text[4096];
    gf__text t;
    t.p = text; t.cap = sizeof text; t.used = 0;
    text[0] = 0;
    gf__say(&t, "gpuflow: %s for more than %u ms (GPUFLOW_HANG_MS); still waiting. ", what, dev->hang_ms);
    gf__describe(dev, &t);
    gf__log_text(GF_LOG_WARNING, GF_TIMEOUT, text);
}

/* ---- profiler --------------------------------------------------------------------- >>profiler */
/* Every operation is bracketed by two timing events from the device's event pool; they are
   read, and given back, when a report or trace resolves them. Times are relative to a base
   event recorded before the first timed operation. */
#define GF__PROFILE_MAX_RECORDS (1 << 20)
/* open: end not yet recorded; held: a blocking resolve waits for it; refused: the op itself
   failed, so it was never enqueued (no time to report, and not dropped either) */
enum { GF__REC_OPEN, GF__REC_IN_FLIGHT, GF__REC_HELD, GF__REC_RESOLVED, GF__REC_FAILED, GF__REC_REFUSED };
typedef struct gf__prof_rec {
    uint64_t id, stream_id, flow_from;
    char label[64], name[48];
    gf_op_kind kind;
    uint64_t bytes;
    gf_event *start, *end;
    int state;                       /* GF__REC_OPEN, _IN_FLIGHT, _HELD, _RESOLVED, _FAILED */
    double start_ms, dur_ms;
} gf__prof_rec;
struct gf__profiler {
    gf__mutex lock;
    gf__mutex wait_lock;            /* one blocking resolve at a time (taken before lock) */
    gf__prof_rec *recs; int count, cap;   /* in id order */
    uint64_t next_id;               /* the last record's id: ids outlive a restart (waits' arrows name them) */
    uint64_t dropped;
    gf_event *base; int base_recorded;
    uint64_t base_host_ns;          /* the host's clock when base was known complete: host samples (budgets) line up by it */
};

static const char *gf__op_name(gf_op_kind k) {
    static const char *names[GF_OP_KIND_COUNT] = { "copy", "fill", "launch", "callback", "graph", "wait", "range", "signal" };
    return k < GF_OP_KIND_COUNT ? names[k] : "op";
}

static int gf__prof_begin(gf_stream *s, gf_op_kind kind, const char *name, uint64_t bytes, uint64_t flow_from) {
    gf_device *dev = s->dev;
    gf__profiler *p;
    gf__prof_rec *rec;
    gf_event *start, *end;
    int idx;
    if (!gf__atomic_load_int(&dev->profiling)) return -1;
    p = dev->profiler;
    gf__lock(&p->lock);
    if (p->count >= GF__PROFILE_MAX_RECORDS ||
        !gf__grow((void **)&p->recs, &p->cap, p->count + 1, sizeof *p->recs) ||
        gf__event_pool_take(dev->events, GF_EVENT_TIMING, &start) != GF_OK) {
        p->dropped++;
        gf__unlock(&p->lock);
        return -1;
    }
    if (gf__event_pool_take(dev->events, GF_EVENT_TIMING, &end) != GF_OK) {
        gf__event_pool_give(dev->events, start);
        p->dropped++;
        gf__unlock(&p->lock);
        return -1;
    }
    /* an op whose start is not recorded has no time: dropped rather than reported wrong */
    if (dev->be->event_record(start, s) != GF_OK) {
        gf__event_pool_give(dev->events, start);
        gf__event_pool_give(dev->events, end);
        p->dropped++;
        gf__unlock(&p->lock);
        return -1;
    }
    idx = p->count++;
    rec = &p->recs[idx];
    memset(rec, 0, sizeof *rec);
    rec->id = ++p->next_id;
    rec->stream_id = s->id;
    rec->flow_from = flow_from;
    gf__copy_str(rec->label, sizeof rec->label, s->label);
    gf__copy_str(rec->name, sizeof rec->name, name ? name : gf__op_name(kind));
    rec->kind = kind;
    rec->bytes = bytes;
    rec->start = start;
    rec->end = end;
    if (kind != GF_OP_RANGE) s->last_trace_id = rec->id;   /* a span is no arrow's source */
    gf__unlock(&p->lock);
    return idx;
}

static void gf__prof_end(gf_stream *s, int idx, gf_result r) {
    gf__profiler *p;
    gf__prof_rec *rec;
    if (idx < 0) return;   /* before the profiler is read: gf_profiler_enable may be setting it (TSan) */
    p = s->dev->profiler;   /* set before gf__prof_begin gave idx, and kept while profiling is on */
    gf__lock(&p->lock);
    rec = &p->recs[idx];
    if (r == GF_OK && s->dev->be->event_record(rec->end, s) == GF_OK) {
        rec->state = GF__REC_IN_FLIGHT;
    } else {
        rec->state = r == GF_OK ? GF__REC_FAILED : GF__REC_REFUSED;
        gf__event_pool_give(s->dev->events, rec->start);
        gf__event_pool_give(s->dev->events, rec->end);
    }
    gf__unlock(&p->lock);
}

/* A record whose end was waited for or queried (r, not GF_NOT_READY): its times read against
   the base, or it is dropped (a driver failure: it will never have a time); its events go back
   either way (p->lock held). Returns the failure, if any. */
static gf_result gf__prof_settle(gf_device *dev, gf__profiler *p, gf__prof_rec *rec, gf_result r) {
    float a = 0, b = 0;
    if (r == GF_OK && (r = dev->be->event_elapsed_ms(p->base, rec->start, &a)) == GF_OK) r = dev->be->event_elapsed_ms(rec->start, rec->end, &b);
    if (r == GF_OK) {
        rec->state = GF__REC_RESOLVED;
        rec->start_ms = a;
        rec->dur_ms = b > 0 ? b : 0;
    } else {
        rec->state = GF__REC_FAILED;
    }
    gf__event_pool_give(dev->events, rec->start);
    gf__event_pool_give(dev->events, rec->end);
    return r;
}

/* Reads the times of finished records (blocking: waits for all there are now) and returns
   their events. A record whose time cannot be read (a driver failure) is dropped, and a
   blocking resolve then fails with that failure, so a report never looks whole when it is not.
   A blocking resolve waits with p->lock let go, one record at a time: every profiled enqueue
   takes that lock, and the work waited for may sit behind a host callback that enqueues (held
   across the wait, the two never moved). The record waited for is HELD meanwhile, so that no
   other resolve gives its events back; blocking resolves take turns (wait_lock). */
static gf_result gf__prof_resolve(gf_device *dev, int blocking) {
    gf__profiler *p = dev->profiler;
    const gf__backend *be = dev->be;
    gf_result r, first = GF_OK;
    int i, n;
    if (!p) return GF_OK;
    /* every time is read against the base: it must have completed first (it never changes once enabled) */
    if (p->base_recorded && (r = blocking ? be->event_synchronize(p->base) : be->event_query(p->base)) != GF_OK) return blocking ? r : GF_OK;
    if (!blocking) {
        gf__lock(&p->lock);
        for (i = 0; i < p->count; i++)
            if (p->recs[i].state == GF__REC_IN_FLIGHT && (r = be->event_query(p->recs[i].end)) != GF_NOT_READY) (void)gf__prof_settle(dev, p, &p->recs[i], r);
        gf__unlock(&p->lock);
        return GF_OK;
    }
    gf__lock(&p->wait_lock);
    gf__lock(&p->lock);
    for (i = 0, n = p->count; i < n; i++) {
        gf_event *end;
        if (p->recs[i].state != GF__REC_IN_FLIGHT) continue;
        p->recs[i].state = GF__REC_HELD;
        end = p->recs[i].end;
        gf__unlock(&p->lock);
        r = be->event_synchronize(end);
        gf__lock(&p->lock);   /* recs may have moved meanwhile: by index */
        if ((r = gf__prof_settle(dev, p, &p->recs[i], r)) != GF_OK && first == GF_OK) first = r;
    }
    gf__unlock(&p->lock);
    gf__unlock(&p->wait_lock);
    return first;
}

static void gf__profiler_free(gf_device *dev) {
    gf__profiler *p = dev->profiler;
    if (!p) return;
    gf__atomic_store_int(&dev->profiling, 0);
    gf__prof_resolve(dev, 1);
    gf__event_pool_give(dev->events, p->base);
    gf__free(p->recs);
    gf__mutex_destroy(&p->lock);
    gf__mutex_destroy(&p->wait_lock);
    gf__free(p);
    dev->profiler = NULL;
}

/* The record with id (p->lock held), or NULL: gone with a restart, or never made. */
static const gf__prof_rec *gf__prof_find(const gf__profiler *p, uint64_t id) {
    int lo = 0, hi = p->count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (p->recs[mid].id == id) return &p->recs[mid];
        if (p->recs[mid].id < id) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* Switching the profiler on again starts a new history, so that a program that profiles a
   window at a time holds no more than a window's records: what has been read (resolved,
   failed) is dropped, with the dropped count. Records still in flight stay, moved down (their
   ids stay); none is dropped while a record is open (its op's gf__prof_end holds its index)
   or held (a blocking resolve waits on it by index). Called while profiling is off. */
static void gf__prof_restart(gf_device *dev) {
    gf__profiler *p = dev->profiler;
    int i, kept = 0;
    (void)gf__prof_resolve(dev, 0);   /* what has finished since: read now, and dropped */
    gf__lock(&p->lock);
    for (i = 0; i < p->count; i++)
        if (p->recs[i].state == GF__REC_OPEN || p->recs[i].state == GF__REC_HELD) { gf__unlock(&p->lock); return; }
    for (i = 0; i < p->count; i++)
        if (p->recs[i].state == GF__REC_IN_FLIGHT) p->recs[kept++] = p->recs[i];
    p->count = kept;
    p->dropped = 0;
    gf__unlock(&p->lock);
}

static gf_result gf__call_profiler_enable(gf_device *dev, unsigned flags) {
    gf_result r = GF_OK;
    int restart;
    GF__CHECK(dev, GF__T_DEVICE);
    if (flags & ~GF_PROFILE_ON) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_profiler_enable: unknown flags 0x%x", flags);
    gf__lock(&dev->lock);
    restart = flags && dev->profiler && !gf__atomic_load_int(&dev->profiling);
    gf__unlock(&dev->lock);
    if (restart) gf__prof_restart(dev);   /* not under dev->lock: its reads call the driver */
    gf__lock(&dev->lock);
    if (flags && !dev->profiler) {
        /* The base every time is read against: recorded and completed now, on the device's own
           stream, so that every profiled op on any stream comes after it. */
        gf__profiler *p = (gf__profiler *)gf__calloc(sizeof *p);
        if (!p) r = gf__fail(GF_ERROR_OUT_OF_MEMORY, "gf_profiler_enable: out of host memory");
        else if ((r = gf__event_pool_take(dev->events, GF_EVENT_TIMING, &p->base)) != GF_OK) gf__free(p);
        else if ((r = dev->be->event_record(p->base, dev->sync_stream)) != GF_OK || (r = dev->be->event_synchronize(p->base)) != GF_OK) {
            gf__event_pool_give(dev->events, p->base);
            gf__free(p);
        } else {
            p->base_recorded = 1;
            p->base_host_ns = gf__now_ns();
            gf__mutex_init(&p->lock);
            gf__mutex_init(&p->wait_lock);
            dev->profiler = p;
        }
    }
    if (r == GF_OK) gf__atomic_store_int(&dev->profiling, flags ? 1 : 0);
    gf__unlock(&dev->lock);
    return r;
}

GPUFLOW_IMPL gf_result gf_stream_get_stats(gf_stream *s, gf_stream_stats *out) {
    gf__profiler *p;
    GF__CHECK(s, GF__T_STREAM);
    GF__CHECK_OUT(out);
    memset(out, 0, sizeof *out);
    out->ops = gf__atomic_load(&s->ops);
    out->copies = gf__atomic_load(&s->copies);
    out->bytes_copied = gf__atomic_load(&s->bytes_copied);
    out->launches = gf__atomic_load(&s->launches);
    out->callbacks = gf__atomic_load(&s->callbacks);
    out->staged_copies = gf__atomic_load(&s->staged_copies);
    out->bridged_waits = gf__atomic_load(&s->bridged_waits);
    out->pending = gf__stream_unsettled(s);
    gf__lock(&s->dev->lock);
    p = s->dev->profiler;
    gf__unlock(&s->dev->lock);
    if (p) {
        int i;
        gf__prof_resolve(s->dev, 0);
        gf__lock(&p->lock);
        for (i = 0; i < p->count; i++)
            if (p->recs[i].state == GF__REC_RESOLVED && p->recs[i].stream_id == s->id && p->recs[i].kind != GF_OP_RANGE)
                out->busy_ms += p->recs[i].dur_ms;
        gf__unlock(&p->lock);
    }
    return GF_OK;
}

/* The profiler, every record it holds timed (a wait for the device's profiled work: refused
   from a host callback of the device, whose stream's later work it would wait for). */
static gf_result gf__profiler_ready(gf_device *dev, const char *fn, gf__profiler **out) {
    gf_result r;
    gf__lock(&dev->lock);
    *out = dev->profiler;
    gf__unlock(&dev->lock);
    if (!*out) return gf__fail(GF_ERROR_INVALID_STATE, "%s: the profiler was never enabled on this device", fn);
    if ((r = gf__refuse_self_wait(fn, dev, NULL)) != GF_OK) return r;
    if (gf__prof_resolve(dev, 1) != GF_OK)
        return gf__fail(GF_ERROR_DRIVER, "%s: some profiled operations could not be timed (dropped): %s", fn, gf__error_text);
    return GF_OK;
}

GPUFLOW_IMPL gf_result gf_profiler_report(gf_device *dev, gf_profile_report *out) {
    gf__profiler *p;
    gf_result r;
    double first = 0, last = 0;
    int i, any = 0;
    GF__CHECK(dev, GF__T_DEVICE);
    GF__CHECK_OUT(out);
    if ((r = gf__profiler_ready(dev, __func__, &p)) != GF_OK) return r;
    memset(out, 0, sizeof *out);
    gf__lock(&p->lock);
    out->dropped_ops = p->dropped;
    for (i = 0; i < p->count; i++) {
        const gf__prof_rec *rec = &p->recs[i];
        gf_profile_stream *ps = NULL;
        int k, j;
        if (rec->state == GF__REC_FAILED) out->dropped_ops++;   /* enqueued, but its time is unknown */
        if (rec->state != GF__REC_RESOLVED) continue;
        for (k = 0; k < out->stream_count; k++) if (out->streams[k].id == rec->stream_id) { ps = &out->streams[k]; break; }
        if (!ps) {
            if (out->stream_count == GF_PROFILE_MAX_STREAMS) { out->dropped_ops++; continue; }
            ps = &out->streams[out->stream_count++];
            ps->id = rec->stream_id;
            gf__copy_str(ps->label, sizeof ps->label, rec->label);
        }
        ps->ops[rec->kind]++;
        if (rec->kind == GF_OP_RANGE) continue;   /* spans around work: counted, not busy time */
        ps->bytes += rec->bytes;
        ps->busy_ms += rec->dur_ms;
        out->total_ops++;
        for (k = 0; k < GF_PROFILE_LONGEST; k++)   /* keep the longest, longest first */
            if (ps->longest[k].duration_ms < rec->dur_ms || (!ps->longest[k].name[0])) break;
        if (k < GF_PROFILE_LONGEST) {
            for (j = GF_PROFILE_LONGEST - 1; j > k; j--) ps->longest[j] = ps->longest[j - 1];
            ps->longest[k].kind = rec->kind;
            gf__copy_str(ps->longest[k].name, sizeof ps->longest[k].name, rec->name);
            ps->longest[k].bytes = rec->bytes;
            ps->longest[k].start_ms = rec->start_ms;
            ps->longest[k].duration_ms = rec->dur_ms;
        }
        if (!any || rec->start_ms < first) first = rec->start_ms;
        if (!any || rec->start_ms + rec->dur_ms > last) last = rec->start_ms + rec->dur_ms;
        any = 1;
    }
    gf__unlock(&p->lock);
    out->span_ms = last - first;
    return GF_OK;
}

static void gf__call_range_push(gf_stream *s, const char *name) {
    GF__CHECK_VOID(s, GF__T_STREAM);
    if (!name) name = "range";
    if (s->dev->be->range) s->dev->be->range(s, name);
    gf__lock(&s->lock);
    if (s->range_depth < GF__RANGE_DEPTH) s->ranges[s->range_depth] = s->capture ? -1 : gf__prof_begin(s, GF_OP_RANGE, name, 0, 0);
    s->range_depth++;
    gf__unlock(&s->lock);
}

static void gf__call_range_pop(gf_stream *s) {
    int open;
    GF__CHECK_VOID(s, GF__T_STREAM);
    gf__lock(&s->lock);
    if ((open = s->range_depth > 0) != 0) {
        s->range_depth--;
        if (s->range_depth < GF__RANGE_DEPTH) gf__prof_end(s, s->ranges[s->range_depth], GF_OK);
    }
    gf__unlock(&s->lock);
    if (open && s->dev->be->range) s->dev->be->range(s, NULL);
}

/* JSON string contents: quotes, backslashes and control bytes escaped; bytes >= 0x80 as \u00XX,
   so the file is valid JSON whatever a label holds. */
/* The length of the well-formed UTF-8 sequence of 2 to 4 bytes at s, or 0 (RFC 3629: no
   overlong form, surrogate or code point past U+10FFFF; a NUL ends it). */
static int gf__utf8_sequence(const unsigned char *s) {
    unsigned c = s[0];
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0, i;
    for (i = 1; i < n; i++) if ((s[i] & 0xc0) != 0x80) return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f)) return 0;
    return n;
}
/* A JSON string: UTF-8 as it is (names are UTF-8), a byte that is not as U+FFFD. */
static void gf__json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int n;
        if (ch == '"' || ch == '\\') { fputc('\\', f); fputc(ch, f); }
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else if (ch < 0x80) fputc(ch, f);
        else if ((n = gf__utf8_sequence((const unsigned char *)s)) != 0) { fwrite(s, 1, (size_t)n, f); s += n - 1; }
        else fputs("\\ufffd", f);
    }
    fputc('"', f);
}

/* x with three decimals, as JSON writes numbers whatever the C locale (printf's %.3f writes
   "22,833" where the program set a locale with a decimal comma: the trace was not JSON).
   Rounded from x * 1000, so a last digit at an exact half may differ from printf's by one. */
static const char *gf__fixed3(char *out, size_t cap, double x) {
    double scaled = x * 1000.0;
    unsigned long long whole;
    const char *sign = "";
    if (!(scaled > -9e18 && scaled < 9e18)) scaled = 0;   /* NaN, or past what fits: no time is */
    if (scaled < 0) { sign = "-"; scaled = -scaled; }
    whole = (unsigned long long)(scaled + 0.5);
    snprintf(out, cap, "%s%llu.%03u", sign, whole / 1000u, (unsigned)(whole % 1000u));
    return out;
}

/* dev's spans, tracks and counters, as trace events on process pid, each after ",\n" but the
   first of a file's (first); times in us after origin_ms, read as the device's profiled times
   are (ms after its base event). p->lock held. */
static void gf__trace_events(gf_device *dev, gf__profiler *p, FILE *f, int first, int pid, double origin_ms) {
    GF__HELD(&p->lock);
    unsigned long long ids = (unsigned long long)pid << 40;   /* arrows' ids, apart by device */
    char ts[32], dur[32];
    int i, k;
    fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", first ? "" : ",\n", pid);
    gf__json_string(f, dev->info.name);
    fputs("}}", f);
    for (i = 0; i < p->count; i++) {   /* one track per stream, named by its label */
        const gf__prof_rec *rec = &p->recs[i];
        for (k = 0; k < i; k++) if (p->recs[k].stream_id == rec->stream_id) break;
        if (k < i) continue;
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%llu,\"args\":{\"name\":", pid, (unsigned long long)rec->stream_id);
        gf__json_string(f, rec->label);
        fputs("}}", f);
    }
    for (i = 0; i < p->count; i++) {
        const gf__prof_rec *rec = &p->recs[i];
        if (rec->state != GF__REC_RESOLVED) continue;
        fputs(",\n{\"name\":", f);
        gf__json_string(f, rec->name);
        fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%llu,\"ts\":%s,\"dur\":%s,\"args\":{\"bytes\":%llu}}",
                gf__op_name(rec->kind), pid, (unsigned long long)rec->stream_id, gf__fixed3(ts, sizeof ts, (rec->start_ms - origin_ms) * 1000.0),
                gf__fixed3(dur, sizeof dur, rec->dur_ms * 1000.0), (unsigned long long)rec->bytes);
        if (rec->kind == GF_OP_WAIT && rec->flow_from) {
            const gf__prof_rec *src = gf__prof_find(p, rec->flow_from);   /* the op the waited event followed */
            if (src && src->state == GF__REC_RESOLVED) {
                fprintf(f, ",\n{\"name\":\"wait\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":%llu,\"pid\":%d,\"tid\":%llu,\"ts\":%s}",
                        ids + rec->id, pid, (unsigned long long)src->stream_id, gf__fixed3(ts, sizeof ts, (src->start_ms - origin_ms) * 1000.0));
                fprintf(f, ",\n{\"name\":\"wait\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"pid\":%d,\"tid\":%llu,\"ts\":%s}",
                        ids + rec->id, pid, (unsigned long long)rec->stream_id, gf__fixed3(ts, sizeof ts, (rec->start_ms - origin_ms) * 1000.0));
            }
        }
    }
    gf__spin_lock(&dev->mem_lock);   /* each budget a counter track: its bytes at each change, by the host's clock */
    for (i = 0; i < dev->budget_count; i++) {
        const gf_budget *b = dev->budgets[i];
        for (k = 0; k < b->sample_count; k++) {
            double ms = (double)(int64_t)(b->samples[k][0] - p->base_host_ns) / 1e6 - origin_ms;
            fputs(",\n{\"name\":", f);
            {
                char name[80];
                snprintf(name, sizeof name, "budget %s", b->label);
                gf__json_string(f, name);
            }
            fprintf(f, ",\"ph\":\"C\",\"pid\":%d,\"ts\":%s,\"args\":{\"bytes\":%llu}}", pid, gf__fixed3(ts, sizeof ts, ms * 1000.0), (unsigned long long)b->samples[k][1]);
        }
    }
    gf__spin_unlock(&dev->mem_lock);
}

#define GF__TRACE_END "\n]}\n"
#if defined(_WIN32)   /* a long is 32 bits there: a trace past 2 GiB was started anew */
#  define GF__FSEEK(f, at, whence) _fseeki64((f), (at), (whence))
#  define GF__FTELL(f) _ftelli64(f)
#else                 /* fseeko may be hidden by a <stdio.h> read first under strict C: a long (64 bits on 64-bit hosts) */
#  define GF__FSEEK(f, at, whence) fseek((f), (long)(at), (whence))
#  define GF__FTELL(f) ftell(f)
#endif
/* A trace file's first line; run: the GPUFLOW_TRACE run it belongs to ("" for none). */
static void gf__trace_begin(FILE *f, const char *run) {
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"gpuflow_run\":\"%s\"},\"traceEvents\":[\n", run);
}

GPUFLOW_IMPL gf_result gf_profiler_write_trace(gf_device *dev, const char *path) {
    gf__profiler *p;
    gf_result r;
    FILE *f;
    double t0 = 0;
    int i, any = 0;
    GF__CHECK(dev, GF__T_DEVICE);
    if (!path || !*path) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_profiler_write_trace: path is %s", path ? "empty" : "NULL");
    if ((r = gf__profiler_ready(dev, __func__, &p)) != GF_OK) return r;
    if (!(f = gf__fopen(path, "w"))) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_profiler_write_trace: cannot open '%s' for writing", path);
    gf__lock(&p->lock);
    for (i = 0; i < p->count; i++)   /* the first span at 0 */
        if (p->recs[i].state == GF__REC_RESOLVED && (!any || p->recs[i].start_ms < t0)) { t0 = p->recs[i].start_ms; any = 1; }
    gf__trace_begin(f, "");
    gf__trace_events(dev, p, f, 1, 1, t0);
    gf__unlock(&p->lock);
    fputs(GF__TRACE_END, f);
    if (fclose(f) != 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_profiler_write_trace: writing '%s' failed", path);
    return GF_OK;
}

/* GPUFLOW_TRACE: one file for the process, whatever the devices. Each device's close adds its
   events as a process of its own (numbered after those in the file), on one clock (the host's,
   from the first traced device's profiler base, which the file's first line names with the
   process's id and start): to the file if this process wrote it, else to a new file. Another copy of
   gpuflow in the process (a plugin's own) adds to the same file on the file's clock: it
   replaced the file, silently (found by review). Holds no memory between closes. */
static struct { gf__spin lock; uint64_t epoch_ns; } gf__trace_run;
static void gf__trace_run_begin(const gf_device *dev) {   /* dev's profiler just began */
    gf__spin_lock(&gf__trace_run.lock);
    if (!gf__trace_run.epoch_ns) gf__trace_run.epoch_ns = dev->profiler->base_host_ns;
    gf__spin_unlock(&gf__trace_run.lock);
}
/* When this process began (Linux: /proc/self/stat's start time, in clock ticks since boot), so
   that a trace of an earlier process of the same id (a container's pid 1 every run) is not
   taken for this one's; 0 where unknown (then a copy's own first trace time tells). */
static unsigned long long gf__process_start(void) {
    unsigned long long start = 0;
#if defined(__linux__)
    char text[1024], *at;
    size_t n;
    int field;
    FILE *f = gf__fopen("/proc/self/stat", "r");
    if (!f) return 0;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    if (!(at = strrchr(text, ')'))) return 0;   /* the name may hold spaces and parentheses */
    for (field = 2; field < 22 && at; field++) at = strchr(at + 1, ' ');   /* field 22: starttime */
    if (at) start = strtoull(at + 1, NULL, 10);
#endif
    return start;
}
/* The trace file, for reading and writing, made if missing, locked against other copies of
   gpuflow in this process and other processes (POSIX: the open file description's lock where
   Linux has one, else the process's), or NULL where it is not a plain file (or cannot be
   opened): two copies closing at once interleaved their appends (found by review). */
static int gf__trace_file_plain(const char *path) {
    gf__stat_t st;
    return gf__stat(path, &st) != 0 || (st.st_mode & S_IFMT) == S_IFREG;   /* missing: made plain */
}
#if defined(_WIN32)
static FILE *gf__trace_file_open(const char *path, int *fd) {   /* _wfopen denies no one: as before, unlocked */
    FILE *f;
    if (!gf__trace_file_plain(path)) return NULL;
    if (!(f = gf__fopen(path, "r+b"))) f = gf__fopen(path, "w+b");
    if (f) *fd = _fileno(f);
    return f;
}
static int gf__trace_file_cut(int fd) { return _chsize_s(fd, 0) == 0 ? 0 : -1; }
#else
static FILE *gf__trace_file_open(const char *path, int *out_fd) {   /* (fileno: hidden where <stdio.h> came first) */
    struct flock whole;
    FILE *f;
    int fd, locked;
    if (!gf__trace_file_plain(path) || (fd = gf__fd_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0) return NULL;
    memset(&whole, 0, sizeof whole);
    whole.l_type = F_WRLCK; whole.l_whence = SEEK_SET;   /* l_len 0: to the end */
#  if defined(GF__F_OFD_SETLKW)
    while ((locked = fcntl(fd, GF__F_OFD_SETLKW, &whole)) != 0 && errno == EINTR) {}
    if (locked != 0)
#  endif
        while (fcntl(fd, F_SETLKW, &whole) != 0 && errno == EINTR) {}   /* refused too: written unlocked, as before */
    if (!(f = fdopen(fd, "r+b"))) close(fd);
    *out_fd = fd;
    return f;
}
static int gf__trace_file_cut(int fd) { return ftruncate(fd, 0); }
#endif
/* How many processes (devices) f already holds, read from its start; f is left at its start. */
static int gf__trace_processes(FILE *f) {
    static const char mark[] = "\"process_name\"";
    char chunk[4096 + sizeof mark];
    size_t kept = 0, n, i;
    int count = 0;
    while ((n = fread(chunk + kept, 1, sizeof chunk - kept - 1, f)) > 0) {
        n += kept;
        chunk[n] = 0;
        for (i = 0; i + sizeof mark - 1 <= n; i++)
            if (chunk[i] == '"' && !memcmp(chunk + i, mark, sizeof mark - 1)) count++;
        kept = n < sizeof mark - 2 ? n : sizeof mark - 2;   /* a mark cut by the chunk's end is found whole next time */
        memmove(chunk, chunk + n - kept, kept);
    }
    rewind(f);
    return count;
}
static gf_result gf__trace_run_write(gf_device *dev, const char *path) {
    char run[64], head[256];
    const char *named;
    unsigned long long epoch = 0, started = gf__process_start(), file_started = 0;
    unsigned long file_pid = 0;
    gf__profiler *p;
    gf_result r;
    FILE *f;
    size_t n;
    int ours = 0, processes = 0, fd = -1;
    if ((r = gf__profiler_ready(dev, "GPUFLOW_TRACE", &p)) != GF_OK) return r;
    gf__spin_lock(&gf__trace_run.lock);   /* a close at a time: each reads what the last wrote */
    epoch = gf__trace_run.epoch_ns;
    f = gf__trace_file_open(path, &fd);   /* another copy of gpuflow: the file's lock, held until fclose */
    if (f) {   /* ours: the first line names this process, and the file ends whole */
        n = fread(head, 1, sizeof head - 1, f);
        head[n] = 0;
        named = strstr(head, "\"gpuflow_run\":\"");
        ours = named && sscanf(named + 15, "%lu-%llu-%llu", &file_pid, &file_started, &epoch) == 3 && file_pid == gf__getpid() &&
               (started ? file_started == started : epoch == gf__trace_run.epoch_ns);
        if (ours) {
            char tail[sizeof GF__TRACE_END];
            int64_t at;
            rewind(f);
            processes = gf__trace_processes(f);
            at = GF__FSEEK(f, -(int64_t)(sizeof tail - 1), SEEK_END) == 0 ? (int64_t)GF__FTELL(f) : -1;
            ours = at > 0 && fread(tail, 1, sizeof tail - 1, f) == sizeof tail - 1 && !memcmp(tail, GF__TRACE_END, sizeof tail - 1) &&
                   GF__FSEEK(f, at, SEEK_SET) == 0;
        }
        if (!ours) {   /* replaced: cut here, under the lock (a new file: nothing to cut) */
            epoch = gf__trace_run.epoch_ns;
            processes = 0;
            rewind(f);
            if (gf__trace_file_cut(fd) != 0) { fclose(f); f = NULL; }
        }
    } else if (!gf__trace_file_plain(path)) {
        f = gf__fopen(path, "wb");   /* a FIFO, a terminal, /dev/stdout: written whole, not read (a read waited for ever) */
    }
    if (!f) {
        gf__spin_unlock(&gf__trace_run.lock);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "GPUFLOW_TRACE: cannot open '%s' for writing", path);
    }
    snprintf(run, sizeof run, "%lu-%llu-%llu", gf__getpid(), started, epoch);
    if (!ours) gf__trace_begin(f, run);
    gf__lock(&p->lock);
    gf__trace_events(dev, p, f, !ours, processes + 1, (double)(int64_t)(epoch - p->base_host_ns) / 1e6);
    gf__unlock(&p->lock);
    fputs(GF__TRACE_END, f);
    r = fclose(f) == 0 ? GF_OK : gf__fail(GF_ERROR_INVALID_ARGUMENT, "GPUFLOW_TRACE: writing '%s' failed", path);
    gf__spin_unlock(&gf__trace_run.lock);
    return r;
}

/* ======================================================================================== */
/*  Stub backend: a CPU emulation of a GPU                                          >>stub   */
/* ======================================================================================== */
/* Each stream is a FIFO run by its own worker thread, so asynchronous calls return before
   their work runs, exactly as on a GPU. Each record of an event is a mark: the record item
   completes it, a wait item blocks on the mark that was current when the wait was enqueued.
   Device memory is host memory, counted against a nominal capacity so that out-of-memory is
   reachable. GPUFLOW_STUB_INLINE runs each command in the calling thread instead. */
#ifndef GPUFLOW_STUB_MEMORY
#  define GPUFLOW_STUB_MEMORY ((uint64_t)8 << 30)
#endif
/* What the stub device holds: GPUFLOW_STUB_MEMORY, but no more than half of what a size_t counts
   (a 32-bit host: total and free memory fit their size_t, and a buffer's guard zones cannot wrap
   its size) */
#define GF__STUB_CAPACITY ((uint64_t)(GPUFLOW_STUB_MEMORY) < (uint64_t)(SIZE_MAX / 2) ? (uint64_t)(GPUFLOW_STUB_MEMORY) : (uint64_t)(SIZE_MAX / 2))

/* One record of an event. A wait holds the record that was current when it was enqueued, so
   recording the event again elsewhere does not release it (CUDA's meaning). */
typedef struct gf__stub_mark {
    gf__mutex lock;
    gf__cond cond;
    int refs;                       /* the event (while latest), record and wait items */
    int done;
    uint64_t when_ns;               /* when it completed */
    gf_result status;               /* the stream's failure when it was reached (GF_OK: none), */
    char *message;                  /* and its text (NULL: no memory for it); set before done */
} gf__stub_mark;

typedef struct gf__stub_event {
    gf__mutex lock;
    gf__stub_mark *latest;          /* NULL until first recorded */
} gf__stub_event;

typedef enum gf__stub_kind {
    GF__STUB_COPY, GF__STUB_FILL, GF__STUB_LAUNCH, GF__STUB_CALLBACK, GF__STUB_RECORD, GF__STUB_WAIT, GF__STUB_NOP,
    GF__STUB_SIGNAL, GF__STUB_SEM_WAIT
} gf__stub_kind;

typedef struct gf__stub_item {
    struct gf__stub_item *next;
    gf__stub_kind kind;
    unsigned char *dst; const unsigned char *src; size_t bytes; unsigned char value;
    uint32_t pattern; int width;    /* FILL of 2- or 4-byte values (width 0: value) */
    void (*fn)(void *); void *user; gf_stream *stream;   /* CALLBACK: fn(user), on stream */
    gf__stub_mark *mark;            /* RECORD, WAIT */
    int spread;                     /* WAIT: the mark's failure becomes this stream's (not on a device's own streams) */
    void (*kernel)(const gf_kernel_ctx *, void *const *); gf_launch_dims dims; void **argv;
    void (*threads)(gf_kernel_ctx *, void *const *, unsigned);   /* LAUNCH: a block row as one loop (NULL: none) */
    int per_block;                  /* LAUNCH: kernel runs a whole block (a block kernel) */
    const char *name;               /* LAUNCH: the kernel's name (a copy the item holds); SIGNAL,
                                       SEM_WAIT: the semaphore's label (a copy) */
    struct gf__stub_sem *sem; uint64_t sem_value;   /* SIGNAL, SEM_WAIT */
    struct gf__stub_guard *guards; int guard_count;   /* LAUNCH under GPUFLOW_DEBUG: buffers to check */
} gf__stub_item;

#define GF__STUB_SPENT_MAX 64   /* run items a stream keeps for its next push to free */
typedef struct gf__stub_stream {
    gf__mutex lock;
    gf__cond cond;
    gf__stub_item *head, *tail;
    uint64_t enqueued, done;
    int stop;
    int idle;                       /* the worker sleeps on cond: a push must wake it */
    int waiters;                    /* threads in synchronize: a finished item must wake them */
    struct gf__stub_item *spent;    /* run items the next push frees, on the thread that made */
    int spent_count;                /* them (malloc's per-thread cache takes them back there) */
    gf__thread thread;
    int running;                    /* the head item runs now (for the state report) */
    struct gf__grid *grid;          /* the launch running now (q->lock): the blocks it is at */
    struct gf__block_pool *pool;    /* the device's block workers */
    gf_result error;                /* the first failure of a launch (barrier misuse, a guard */
    char message[384];              /* zone written), returned by every later synchronize */
} gf__stub_stream;

/* One launch's blocks run on every core: the stream's own thread takes blocks, and so do its
   device's block workers (GPUFLOW_STUB_THREADS in all, default one per core), started at the
   first launch of more than one block. Blocks are independent on a GPU too; the stream still
   runs the launch as one command that ends when its last block has, so the stream's order and
   every rule around it hold as before. */
#define GF__GRID_SLOTS 64               /* runners whose block the state report can name */
#define GF__GRID_CHUNK_PER_RUNNER 16    /* blocks are taken in chunks: about this many per runner */
typedef struct gf__grid {
    struct gf__stub_stream *q; struct gf__stub_item *it;
    uint64_t total, chunk;          /* chunk: how many blocks a runner takes at once */
    gf__atomic64 next;              /* atomic: the next block to take */
    int stop;                       /* atomic: a block could not run: take no more */
    int active;                     /* workers inside it (the pool's lock) */
    int runners;                    /* atomic: threads that took part, each its own slot */
    struct { gf__atomic64 block; char pad[56]; } at[GF__GRID_SLOTS];   /* atomic: 1 + the block a runner is in, 0 idle; a line each */
    struct gf__grid *link;
} gf__grid;
/* A fiber's stack, kept by its device for the next launch that syncs (gf__fiber_stack_take). */
typedef struct gf__fiber_stack { void *stack, *block; unsigned valgrind_id; } gf__fiber_stack;
typedef struct gf__block_pool {
    gf__mutex lock;
    gf__cond wake, left;            /* a grid to help with; a worker left a grid */
    gf__grid *grids;                /* launches with blocks left to take */
    gf__thread *threads; int want, started, stop;
    gf__mutex stacks_lock;          /* fiber stacks kept (at most GF__FIBER_STACKS_KEPT) */
    gf__fiber_stack *stacks; int stack_count, stack_cap;
} gf__block_pool;
typedef struct gf__stub_device { gf__atomic64 allocated; gf__block_pool pool; } gf__stub_device;
/* An exportable buffer or an import (buf->external): the mapping, and the fd an export
   duplicates (-1: none). Made and freed in "the stub's interop" below. */
typedef struct gf__stub_mapping { unsigned char *base; size_t bytes; int fd; int imported; } gf__stub_mapping;
static gf_result gf__stub_alloc_shared(gf_buffer *buf);
static void gf__stub_mapping_free(gf__stub_mapping *m);

/* Stub semaphores: a 64-bit counter (a timeline's value; a binary's 1 when signalled), in a
   shared memory object where the host has them (another process maps the exported fd), else
   in the object itself. A wait polls the counter, backing off to GF__WAIT_NAP_MAX_US. */
typedef struct gf__stub_sem { uint64_t *value; size_t mapped; int fd; int timeline; gf__atomic64 own; } gf__stub_sem;
/* An exported stub semaphore's shared object: the counter, then what it is, so that an import
   as the other kind is refused (a binary wait would set a timeline back to 0 for every holder).
   An fd of 8 bytes is taken as a bare counter of the kind asked. */
typedef struct gf__stub_sem_shared { uint64_t value; uint32_t magic, timeline; } gf__stub_sem_shared;
#define GF__STUB_SEM_MAGIC 0x67667353u   /* "Ssfg" */
static void gf__stub_sem_signal(gf__stub_sem *m, uint64_t value) {
    uint64_t seen = gf__atomic_load(m->value);
    if (!m->timeline) { gf__atomic_store(m->value, (uint64_t)1); return; }
    while (seen < value && !gf__atomic_cas(m->value, seen, value)) seen = gf__atomic_load(m->value);   /* a timeline never goes back */
}
static void gf__stub_sem_wait(gf__stub_sem *m, uint64_t value) {
    unsigned nap = GF__WAIT_NAP_MIN_US;
    for (;;) {
        uint64_t seen = gf__atomic_load(m->value);
        if (m->timeline ? seen >= value : seen != 0 && gf__atomic_cas(m->value, seen, (uint64_t)0)) return;
        gf__sleep_us(nap);
        if (nap < GF__WAIT_NAP_MAX_US) nap *= 2;
    }
}

static gf__stub_mark *gf__stub_mark_new(void) {
    gf__stub_mark *m = (gf__stub_mark *)gf__calloc(sizeof *m);
    if (!m) return NULL;
    gf__mutex_init(&m->lock);
    gf__cond_init(&m->cond);
    m->refs = 1;
    return m;
}
static gf__stub_mark *gf__stub_mark_ref(gf__stub_mark *m) {
    if (m) { gf__lock(&m->lock); m->refs++; gf__unlock(&m->lock); }
    return m;
}
static void gf__stub_mark_unref(gf__stub_mark *m) {
    int last;
    if (!m) return;
    gf__lock(&m->lock);
    last = --m->refs == 0;
    gf__unlock(&m->lock);
    if (last) { gf__cond_destroy(&m->cond); gf__mutex_destroy(&m->lock); gf__free(m->message); gf__free(m); }
}
/* A completed mark's answer: the failure of the stream it was recorded on, as a GPU's event
   reports the fault of the work before it (m->lock held). */
static gf_result gf__stub_mark_status(gf__stub_mark *m) {
    GF__HELD(&m->lock);
    if (!m->status) return GF_OK;
    return gf__fail(m->status, "%s", m->message ? m->message : "stub: the work before the event failed");
}
static void gf__stub_mark_wait(gf__stub_mark *m) {
    gf__lock(&m->lock);
    while (!m->done) gf__cond_wait(&m->cond, &m->lock);
    gf__unlock(&m->lock);
}
/* The event's latest mark, with a reference the caller releases (NULL: never recorded). */
static gf__stub_mark *gf__stub_latest(gf_event *ev) {
    gf__stub_event *e = (gf__stub_event *)ev->native;
    gf__stub_mark *m;
    gf__lock(&e->lock);
    m = gf__stub_mark_ref(e->latest);
    gf__unlock(&e->lock);
    return m;
}

static gf_result gf__stub_load(void) { return GF_OK; }
/* GPUFLOW_STUB_DEVICES=N: N stub devices (1 to 16), so every multi-device path runs anywhere;
   a value not understood is said once and one device is kept. */
#define GF__STUB_MAX_DEVICES 16

static gf_result gf__stub_device_count(int *count) {
    static int warned;
    const char *v = getenv("GPUFLOW_STUB_DEVICES");
    uint64_t n = 0;
    *count = 1;
    if (!v || !*v) return GF_OK;
    if (!gf__env_digits(v, GF__STUB_MAX_DEVICES, &n) || n < 1) {
        if (!gf__atomic_add_int(&warned, 1))
            gf__env_warn("gpuflow: GPUFLOW_STUB_DEVICES=%s is not understood (a count, 1 to %d); the stub has one device", v, GF__STUB_MAX_DEVICES);
        return GF_OK;
    }
    *count = (int)n;
    return GF_OK;
}

static void gf__block_pool_init(struct gf__block_pool *p);    /* the block workers, below */
static void gf__block_pool_close(struct gf__block_pool *p);
static void gf__fiber_stacks_release(struct gf__block_pool *p);   /* the fiber stacks it keeps, freed */
static gf_result gf__stub_device_open(gf_device *dev, int index) {
    if (!(dev->native = gf__calloc(sizeof(gf__stub_device)))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    gf__block_pool_init(&((gf__stub_device *)dev->native)->pool);
    if (index == 0) gf__copy_str(dev->info.name, sizeof dev->info.name, "gpuflow CPU stub");
    else snprintf(dev->info.name, sizeof dev->info.name, "gpuflow CPU stub #%d", index);
    dev->info.total_memory = (size_t)GF__STUB_CAPACITY;
    dev->info.compute_units = 1;
    dev->info.managed_memory = 1;
    /* CUDA's limits, so that a launch the stub runs is one a GPU takes. */
    dev->info.max_threads_per_block = 1024;
    dev->info.max_block[0] = 1024; dev->info.max_block[1] = 1024; dev->info.max_block[2] = 64;
    dev->info.max_grid[0] = 2147483647u; dev->info.max_grid[1] = 65535; dev->info.max_grid[2] = 65535;
    dev->info.max_shared_per_block = 48 << 10;
    return GF_OK;
}
static void gf__stub_trim(gf_device *dev, size_t keep_bytes) {   /* host memory: all of it goes */
    (void)keep_bytes;
    gf__fiber_stacks_release(&((gf__stub_device *)dev->native)->pool);
}
static void gf__stub_device_close(gf_device *dev) {
    gf__block_pool_close(&((gf__stub_device *)dev->native)->pool);
    gf__free(dev->native);
}

static gf_result gf__stub_memory_info(gf_device *dev, size_t *free_bytes, size_t *total_bytes) {
    uint64_t used = gf__atomic_load(&((gf__stub_device *)dev->native)->allocated);
    *total_bytes = (size_t)GF__STUB_CAPACITY;
    *free_bytes = (size_t)(GF__STUB_CAPACITY - used);
    return GF_OK;
}

/* GPUFLOW_DEBUG: each stub buffer lies between two guard zones of a known fill, checked after
   every launch that was given the buffer (or a view of it): a kernel that wrote outside its
   buffer is named, with the argument, as its stream's failure. Reads outside are not seen. */
typedef struct gf__stub_guard { unsigned char *host; size_t size; int arg; const char *param; } gf__stub_guard;
#ifdef GPUFLOW_DEBUG
#define GF__GUARD_BYTES 64
#define GF__GUARD_FILL 0xa5
static void gf__guard_fill(unsigned char *host, size_t size) {
    memset(host - GF__GUARD_BYTES, GF__GUARD_FILL, GF__GUARD_BYTES);
    memset(host + size, GF__GUARD_FILL, GF__GUARD_BYTES);
}
/* Bytes of each zone a kernel changed; the zones are filled again for the next check. */
static int gf__guard_check(const gf__stub_guard *g, size_t *before, size_t *after) {
    size_t i;
    *before = *after = 0;
    for (i = 0; i < GF__GUARD_BYTES; i++) {
        *before += g->host[(ptrdiff_t)i - GF__GUARD_BYTES] != GF__GUARD_FILL;
        *after += g->host[g->size + i] != GF__GUARD_FILL;
    }
    if (*before || *after) gf__guard_fill(g->host, g->size);
    return *before || *after;
}
#else
#define GF__GUARD_BYTES 0
#define gf__guard_fill(host, size) ((void)0)
static int gf__guard_check(const gf__stub_guard *g, size_t *before, size_t *after) { (void)g; *before = *after = 0; return 0; }
#endif

/* A stream callback that enqueues, allocates or waits: the stub does it, but CUDA and HIP
   refuse every driver call in a stream callback (CALLBACKS), so a program that works here would
   fail there. Said once, as a warning (an outside review: the stub let it pass silently). */
static void gf__stub_callback_calls(const char *what) {
    static int said;
    if (gf__callback_stream && !gf__atomic_xchg_int(&said, 1))
        gf__notice(GF_LOG_WARNING, "stub: a stream callback %s: the stub does it, but on CUDA and HIP a stream callback must not "
                   "call into the driver, and that call fails there (see CALLBACKS in gpuflow.h); said once", what);
}
static gf_result gf__stub_buffer_alloc(gf_buffer *buf) {
    gf__stub_device *sd = (gf__stub_device *)buf->dev->native;
    unsigned char *raw;
    uint64_t before;
    gf__stub_callback_calls("allocated device memory");
    if ((uint64_t)buf->size > GF__STUB_CAPACITY)   /* checked first: a size near SIZE_MAX would wrap the sum */
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: cannot allocate %llu bytes (the device has %llu)",
                        (unsigned long long)buf->size, (unsigned long long)GF__STUB_CAPACITY);
    before = gf__atomic_add(&sd->allocated, (uint64_t)buf->size);
    if (buf->exportable && before <= GF__STUB_CAPACITY - (uint64_t)buf->size) {   /* shared memory another process can map */
        gf_result r = gf__stub_alloc_shared(buf);
        if (r != GF_OK) gf__atomic_add(&sd->allocated, (uint64_t)0 - (uint64_t)buf->size);
        return r;
    }
    if (before > GF__STUB_CAPACITY - (uint64_t)buf->size || !(raw = (unsigned char *)gf__malloc(buf->size + 2 * GF__GUARD_BYTES))) {
        gf__atomic_add(&sd->allocated, (uint64_t)0 - (uint64_t)buf->size);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: cannot allocate %llu bytes (%llu of %llu in use)", (unsigned long long)buf->size,
                        (unsigned long long)before, (unsigned long long)GF__STUB_CAPACITY);
    }
    buf->host = raw + GF__GUARD_BYTES;
    buf->native = (uint64_t)(uintptr_t)buf->host;
    if (GF__GUARD_BYTES) gf__guard_fill(raw + GF__GUARD_BYTES, buf->size);
    return GF_OK;
}
static void gf__stub_buffer_free(gf_buffer *buf) {
    gf__stub_mapping *m = (gf__stub_mapping *)buf->external;
    if (buf->borrowed) return;   /* wrapped host memory stays its owner's */
    if (buf->kind != GF_MEMORY_IMPORTED) gf__atomic_add(&((gf__stub_device *)buf->dev->native)->allocated, (uint64_t)0 - (uint64_t)buf->size);
    if (m) gf__stub_mapping_free(m);
    else gf__free((unsigned char *)buf->host - GF__GUARD_BYTES);
}
/* The stub's "native" buffer is host memory: wrapping one makes a gf_buffer over it. */
static gf_result gf__stub_buffer_wrap(gf_buffer *buf, uint64_t native) {
    uint64_t last = native + (uint64_t)buf->size - 1;   /* the stub's "device address" is a host pointer */
    if (last < native || last > (uint64_t)UINTPTR_MAX)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_buffer_wrap: 0x%llx + %llu bytes is no host address range of this %u-bit process (the "
                        "stub's device addresses are host pointers)", (unsigned long long)native, (unsigned long long)buf->size,
                        (unsigned)(sizeof(void *) * 8));
    buf->host = (void *)(uintptr_t)native;
    buf->native = native;
    return GF_OK;
}
static gf_result gf__stub_host_alloc(gf_device *dev, size_t bytes, void **out) {
    (void)dev;
    if (!(*out = gf__malloc(bytes))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: cannot allocate %llu bytes of host memory", (unsigned long long)bytes);
    return GF_OK;
}
static void gf__stub_host_free(gf_device *dev, void *ptr) { (void)dev; gf__free(ptr); }

/* A launch's blocks run on every core (the block workers, below), each block's threads in
   order. A kernel that syncs its block (gf_block_sync) needs the block's threads to run
   together: they become fibers on the thread that runs the block, each running until it
   reaches the barrier, then handing on to the next (fiber to fiber), released when all have.
   Each block's first thread runs alone first, on the worker's own stack, to find out: at its
   first barrier the others become fibers; if it finishes without one, they run as plain calls
   (so a block that never syncs makes no fiber). A block kernel (GF_BLOCK_KERNEL) is one call
   per block, its regions loops over the threads. Shared arrays (GF_SHARED) are thread-local
   statics, so a block's fibers share them and blocks running on other threads do not. */
/* ThreadSanitizer must be told about fiber switches; nothing else needs to be. */
#if defined(__SANITIZE_THREAD__)
#  define GF__TSAN_FIBERS 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define GF__TSAN_FIBERS 1
#  endif
#endif
/* A switch is a few instructions where one is written out below: swapcontext also sets the
   signal mask, a system call each time (~0.5 us). The sanitizers keep swapcontext (Windows:
   its fibers), which they follow. */
#if defined(__SANITIZE_ADDRESS__) || defined(GF__TSAN_FIBERS)
#  define GF__FIBER_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#    define GF__FIBER_SANITIZED 1
#  endif
#endif
/* GF__FIBER_ASM: which switch below, 0 for none (then ucontext, or Windows fibers); building
   with -DGF__FIBER_ASM=0 takes those anywhere, to compare. ELF only off Windows: Mach-O
   (macOS) names symbols and sections otherwise, and takes ucontext. Not for 4-byte pointers
   (x32, ILP32): the switches store 8. */
#ifndef GF__FIBER_ASM
#  if defined(GF__FIBER_SANITIZED) || !(defined(__GNUC__) || defined(__clang__)) || defined(__ILP32__)
#    define GF__FIBER_ASM 0
#  elif defined(__x86_64__) && defined(__ELF__)
#    define GF__FIBER_ASM 1   /* x86-64, System V */
#  elif defined(__aarch64__) && defined(__ELF__) && !defined(__APPLE__)
#    define GF__FIBER_ASM 2   /* AArch64 */
#  elif defined(__x86_64__) && defined(_WIN32) && defined(__GNUC__)
#    define GF__FIBER_ASM 3   /* x64 Windows, MinGW (clang-cl, MSVC: Windows fibers) */
#  else
#    define GF__FIBER_ASM 0
#  endif
#endif
#if !GF__FIBER_ASM && defined(_WIN32)
#  define GF__FIBER_WINDOWS 1   /* CreateFiber, SwitchToFiber */
#endif

#if defined(GF__FIBER_WINDOWS)
typedef struct gf__fiber { void *fiber; void *tsan; } gf__fiber;
#elif GF__FIBER_ASM
typedef struct gf__fiber { void *sp; void *stack, *block; void *tsan; unsigned valgrind_id; /* its stack's, + 1; 0: none */ } gf__fiber;
#else
typedef struct gf__fiber { ucontext_t ctx; void *stack, *block; void *tsan; unsigned valgrind_id; } gf__fiber;
#endif
#if !defined(GF__FIBER_WINDOWS)
/* A fiber's stack: GF__FIBER_STACK bytes at f->stack, in a block (f->block) that has, on POSIX,
   a page just below the stack that faults: a kernel deeper than its stack stops there at once
   (SIGSEGV) instead of writing over the heap below it, silently (found by review: corrupted
   malloc's bookkeeping, or wrote outside with GF_OK). The page is made writable again before
   the block goes back. Elsewhere (MinGW) the block is the stack, unguarded. */
static void *gf__fiber_stack_alloc(gf__fiber *f) {
#  if !defined(_WIN32)
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *guard;
    if (!(f->block = gf__malloc(GF__FIBER_STACK + 2 * page))) return NULL;
    guard = (char *)(((uintptr_t)f->block + page - 1) & ~(uintptr_t)(page - 1));
    (void)mprotect(guard, page, PROT_NONE);   /* refused: the stack works, unguarded */
    f->stack = guard + page;
#    if defined(GF__VALGRIND_STACKS)   /* not under DRD, which aborts when a thread that ran on them ends */
    if (!DRD_GET_VALGRIND_THREADID)
        f->valgrind_id = 1 + (unsigned)VALGRIND_STACK_REGISTER((char *)f->stack, (char *)f->stack + GF__FIBER_STACK);
#    endif
    return f->stack;
#  else
    return f->stack = f->block = gf__malloc(GF__FIBER_STACK);
#  endif
}
static void gf__fiber_stack_free(gf__fiber *f) {
#  if !defined(_WIN32)
    if (f->block) {
#    if defined(GF__VALGRIND_STACKS)
        if (f->valgrind_id) VALGRIND_STACK_DEREGISTER(f->valgrind_id - 1);
        f->valgrind_id = 0;
#    endif
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        (void)mprotect((char *)f->stack - page, page, PROT_READ | PROT_WRITE);
    }
#  endif
    gf__free(f->block);
    f->block = f->stack = NULL;
}
/* Stacks come from the device's kept ones and go back there: a launch of 256-thread blocks that
   sync made and freed 255 of them (a mapping and a guard page each) per runner, 7-9 ms a launch
   on the 2-core CI machine whatever its size (a review: 200x PoCL for a 4099-element stencil). */
static void *gf__fiber_stack_take(gf__block_pool *p, gf__fiber *f) {
    int kept;
    gf__lock(&p->stacks_lock);
    if ((kept = p->stack_count > 0) != 0) {
        const gf__fiber_stack *st = &p->stacks[--p->stack_count];
        f->stack = st->stack; f->block = st->block; f->valgrind_id = st->valgrind_id;
    }
    gf__unlock(&p->stacks_lock);
    return kept ? f->stack : gf__fiber_stack_alloc(f);
}
static void gf__fiber_stack_give(gf__block_pool *p, gf__fiber *f) {
    int kept = 0;
    if (!f->block) return;
    gf__lock(&p->stacks_lock);
    if (p->stack_count < GF__FIBER_STACKS_KEPT && gf__grow((void **)&p->stacks, &p->stack_cap, p->stack_count + 1, sizeof *p->stacks)) {
        gf__fiber_stack *st = &p->stacks[p->stack_count++];
        st->stack = f->stack; st->block = f->block; st->valgrind_id = f->valgrind_id;
        kept = 1;
    }
    gf__unlock(&p->stacks_lock);
    if (kept) { f->block = f->stack = NULL; f->valgrind_id = 0; }
    else gf__fiber_stack_free(f);
}
#endif
/* Every kept stack freed: at gf_device_trim and close. */
static void gf__fiber_stacks_release(gf__block_pool *p) {
    gf__fiber_stack *stacks;
    int i, count;
    gf__lock(&p->stacks_lock);
    stacks = p->stacks; count = p->stack_count;
    p->stacks = NULL; p->stack_count = p->stack_cap = 0;
    gf__unlock(&p->stacks_lock);
#if !defined(GF__FIBER_WINDOWS)
    for (i = 0; i < count; i++) {
        gf__fiber f;
        memset(&f, 0, sizeof f);
        f.stack = stacks[i].stack; f.block = stacks[i].block; f.valgrind_id = stacks[i].valgrind_id;
        gf__fiber_stack_free(&f);
    }
#else
    (void)i; (void)count;
#endif
    gf__free(stacks);
}

#if GF__FIBER_ASM
/* Saves the callee-saved registers on the current stack, stores the stack pointer in *from,
   takes to as the new one and restores what is saved there; the return goes on where that
   fiber left off (or, the first time, at its entry). The floating-point modes (MXCSR and the
   x87 control word, FPCR) are left alone: a block's fibers share the thread's, which kernels
   do not change (and restoring them costs more than the rest of the switch).
   A fresh fiber's frame (gf__fiber_start): GF__FIBER_WORDS words, the first GF__FIBER_BELOW
   below the stack's top, the entry's address in word GF__FIBER_ENTRY, the rest 0. */
/* The symbol is global (a local one defined in top-level asm is lost when gcc's LTO puts its
   callers in another partition) and hidden (not exported from a shared library). Two copies of
   the implementation in one program (GPUFLOW_STATIC) keep one: it is weak (Windows: a COMDAT),
   and an LTO partition that holds both assembles the second away (.ifndef). Its name says the
   frame's layout: change it with the layout. */
#  define GF__FIBER_SWAP "gf__fiber_swap_v1"
#  if defined(_WIN32)
#    define GF__FIBER_SWAP_BEGIN ".ifndef " GF__FIBER_SWAP "\n\t.section .text$" GF__FIBER_SWAP ",\"xr\"\n\t.linkonce discard\n\t" \
                                 ".p2align 4\n\t.globl " GF__FIBER_SWAP "\n\t.def " GF__FIBER_SWAP "; .scl 2; .type 32; .endef\n" \
                                 GF__FIBER_SWAP ":\n\t"
#    define GF__FIBER_SWAP_END ".text\n\t.endif\n"
#  else
#    define GF__FIBER_SWAP_BEGIN ".ifndef " GF__FIBER_SWAP "\n\t.pushsection .text\n\t.p2align 4\n\t.weak " GF__FIBER_SWAP \
                                 "\n\t.hidden " GF__FIBER_SWAP "\n\t.type " GF__FIBER_SWAP ", %function\n" GF__FIBER_SWAP ":\n\t"
#    define GF__FIBER_SWAP_END ".size " GF__FIBER_SWAP ", .-" GF__FIBER_SWAP "\n\t.popsection\n\t.endif\n"
#  endif
void gf__fiber_swap(void **from, void *to) __asm__(GF__FIBER_SWAP);
#endif
#if GF__FIBER_ASM == 1
/* from in rdi, to in rsi. Frame: r15 ... rbp, ret's address (the top), the entry's own return
   address (never taken). */
#  define GF__FIBER_BELOW 6
#  define GF__FIBER_ENTRY 6
#  define GF__FIBER_WORDS 8
__asm__(GF__FIBER_SWAP_BEGIN
        "pushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n\t"
        "movq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n\t"
        "popq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n\tret\n\t"
        GF__FIBER_SWAP_END);
#elif GF__FIBER_ASM == 2
/* from in x0, to in x1; ret goes to the lr restored. d8-d15 are the halves of v8-v15 that the
   procedure call standard keeps. Frame: x19 ... x28, fp, lr (the entry), d8 ... d15; sp, 16-byte
   aligned, is the top once they are popped. */
#  define GF__FIBER_BELOW 20
#  define GF__FIBER_ENTRY 11
#  define GF__FIBER_WORDS 20
__asm__(GF__FIBER_SWAP_BEGIN
        "stp x19, x20, [sp, #-160]!\n\tstp x21, x22, [sp, #16]\n\tstp x23, x24, [sp, #32]\n\t"
        "stp x25, x26, [sp, #48]\n\tstp x27, x28, [sp, #64]\n\tstp x29, x30, [sp, #80]\n\t"
        "stp d8, d9, [sp, #96]\n\tstp d10, d11, [sp, #112]\n\tstp d12, d13, [sp, #128]\n\tstp d14, d15, [sp, #144]\n\t"
        "mov x9, sp\n\tstr x9, [x0]\n\tmov sp, x1\n\t"
        "ldp x21, x22, [sp, #16]\n\tldp x23, x24, [sp, #32]\n\tldp x25, x26, [sp, #48]\n\t"
        "ldp x27, x28, [sp, #64]\n\tldp x29, x30, [sp, #80]\n\t"
        "ldp d8, d9, [sp, #96]\n\tldp d10, d11, [sp, #112]\n\tldp d12, d13, [sp, #128]\n\tldp d14, d15, [sp, #144]\n\t"
        "ldp x19, x20, [sp], #160\n\tret\n\t"
        GF__FIBER_SWAP_END);
#elif GF__FIBER_ASM == 3
/* from in rcx, to in rdx. The thread's stack bounds in its TEB (StackBase gs:8, StackLimit
   gs:16, DeallocationStack gs:0x1478) go with the stack: exception dispatch, unwinding and
   stack probes check against them. Frame: xmm6 ... xmm15, DeallocationStack, StackLimit,
   StackBase (word GF__FIBER_TEB on), r15 ... rbp, ret's address (the top), the entry's own
   return address and its 32 bytes of shadow space. movups: a fresh frame sits 8 bytes off
   the alignment of one that a switch saved (its ret lands as a call would, not as a return).
   COFF has no .previous: the asm ends in .text, where GCC puts top-level asm. */
#  define GF__FIBER_BELOW 31
#  define GF__FIBER_ENTRY 31
#  define GF__FIBER_WORDS 37
#  define GF__FIBER_TEB 20
__asm__(GF__FIBER_SWAP_BEGIN
        "pushq %rbp\n\tpushq %rbx\n\tpushq %rdi\n\tpushq %rsi\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n\t"
        "pushq %gs:8\n\tpushq %gs:16\n\tpushq %gs:0x1478\n\tsubq $160, %rsp\n\t"
        "movups %xmm6, (%rsp)\n\tmovups %xmm7, 16(%rsp)\n\tmovups %xmm8, 32(%rsp)\n\tmovups %xmm9, 48(%rsp)\n\t"
        "movups %xmm10, 64(%rsp)\n\tmovups %xmm11, 80(%rsp)\n\tmovups %xmm12, 96(%rsp)\n\tmovups %xmm13, 112(%rsp)\n\t"
        "movups %xmm14, 128(%rsp)\n\tmovups %xmm15, 144(%rsp)\n\t"
        "movq %rsp, (%rcx)\n\tmovq %rdx, %rsp\n\t"
        "movups (%rsp), %xmm6\n\tmovups 16(%rsp), %xmm7\n\tmovups 32(%rsp), %xmm8\n\tmovups 48(%rsp), %xmm9\n\t"
        "movups 64(%rsp), %xmm10\n\tmovups 80(%rsp), %xmm11\n\tmovups 96(%rsp), %xmm12\n\tmovups 112(%rsp), %xmm13\n\t"
        "movups 128(%rsp), %xmm14\n\tmovups 144(%rsp), %xmm15\n\taddq $160, %rsp\n\t"
        "popq %gs:0x1478\n\tpopq %gs:16\n\tpopq %gs:8\n\t"
        "popq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rsi\n\tpopq %rdi\n\tpopq %rbx\n\tpopq %rbp\n\tret\n\t"
        GF__FIBER_SWAP_END);
#endif
#ifdef GF__TSAN_FIBERS
#  ifdef __cplusplus
extern "C" {   /* ThreadSanitizer's runtime exports them unmangled */
#  endif
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#  ifdef __cplusplus
}
#  endif
#endif

typedef struct gf__block_run {
    void (*kernel)(const gf_kernel_ctx *, void *const *); void **argv;
    int count, current, hit_barrier;   /* current 0: thread 0, which runs on the worker's own stack */
    int started;                    /* threads [0, started) run: thread 0 and fibers 1.. */
    int waiting, finished;          /* of those: at the barrier (state 1), returned (state 2) */
    int no_stacks;                  /* a fiber could not be made: the block's barriers did not hold */
    int plain;                      /* threads run as plain calls: a barrier reached now is misuse */
    int per_block;                  /* a block kernel's one call: a gf_block_sync in a region is misuse */
    int in_region;                  /* a block kernel is inside a GF_EACH_THREAD region */
    int plain_barriers;             /* threads of this block that reached one so */
    const gf_kernel_ctx *plain_ctx; /* the plain calls' context: which thread runs now */
    uint64_t plain_hit;             /* 1 + the last thread counted in plain_barriers (0: none) */
    unsigned char *state;           /* per thread: 0 runnable, 1 at the barrier, 2 finished */
    int *site;                      /* per thread at the barrier: which gf_block_sync it called */
    gf_kernel_ctx *ctx;             /* per thread */
    gf__fiber *fibers, main;
    struct gf__block_pool *pool;    /* the device's workers, and the fiber stacks it keeps */
    int converted;                  /* Windows: the thread was made a fiber for this run (made a thread again after) */
    char misuse[160];               /* the block's first barrier misuse, "" if none */
} gf__block_run;
static GF__TLS gf__block_run *gf__running_block;   /* the block this thread runs */

static void gf__fiber_switch(gf__fiber *from, gf__fiber *to) {
#ifdef GF__TSAN_FIBERS
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
#if defined(GF__FIBER_WINDOWS)
    (void)from;
    SwitchToFiber(to->fiber);
#elif GF__FIBER_ASM
    gf__fiber_swap(&from->sp, to->sp);
#else
    swapcontext(&from->ctx, &to->ctx);
#endif
}
/* Thread b->current stops (at a barrier, or finished): on to the next thread that can run,
   fiber to fiber, else back to the worker's stack (thread 0 at its barrier, or the block's
   loop once it finished), where the barrier opens. One switch per thread and round, not two. */
static void gf__fiber_yield(gf__block_run *b) {
    int from = b->current, next;
    for (next = from + 1; next < b->started && b->state[next] != 0; next++) {}
    if (next < b->started) { b->current = next; gf__fiber_switch(&b->fibers[from], &b->fibers[next]); }
    else gf__fiber_switch(&b->fibers[from], &b->main);
}
static void gf__fiber_body(void) {
    gf__block_run *b = gf__running_block;
    int i = b->current;
    b->kernel(&b->ctx[i], b->argv);
    b->state[i] = 2;
    b->finished++;
    gf__fiber_yield(b);   /* never resumed */
}
#if defined(GF__FIBER_WINDOWS)
static VOID CALLBACK gf__fiber_main(LPVOID unused) { (void)unused; gf__fiber_body(); }
#else
static void gf__fiber_main(void) { gf__fiber_body(); }
#endif
static int gf__fiber_start(gf__block_run *b, int i) {   /* a fresh fiber for thread i */
    gf__fiber *f = &b->fibers[i];
#if defined(GF__FIBER_WINDOWS)
    if (f->fiber) DeleteFiber(f->fiber);
    if (!(f->fiber = CreateFiber(GF__FIBER_STACK, gf__fiber_main, NULL))) return 0;
#elif GF__FIBER_ASM
    {   /* the first switch "returns" into gf__fiber_main with the stack aligned as by a call */
        void (*entry)(void) = gf__fiber_main;
        uintptr_t top;
        void **frame;
        if (!f->stack && !gf__fiber_stack_take(b->pool, f)) return 0;
        /* stack tops staggered by thread: 128 KiB apart they would all fall in one cache set */
        top = ((uintptr_t)f->stack + GF__FIBER_STACK - (GF__FIBER_WORDS - GF__FIBER_BELOW) * sizeof(void *)
               - (uintptr_t)(i % 61) * 64) & ~(uintptr_t)15;
        frame = (void **)top - GF__FIBER_BELOW;
        memset(frame, 0, GF__FIBER_WORDS * sizeof *frame);   /* registers 0: a 0 frame pointer ends a debugger's walk */
        memcpy(&frame[GF__FIBER_ENTRY], &entry, sizeof entry);
#  ifdef GF__FIBER_TEB   /* the TEB's bounds while it runs: all of its stack, committed (malloc) */
        frame[GF__FIBER_TEB] = frame[GF__FIBER_TEB + 1] = f->stack;
        frame[GF__FIBER_TEB + 2] = (char *)f->stack + GF__FIBER_STACK;
#  endif
        f->sp = frame;
    }
#else
    if (!f->stack && !gf__fiber_stack_take(b->pool, f)) return 0;
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = GF__FIBER_STACK;
    f->ctx.uc_link = NULL;
    makecontext(&f->ctx, gf__fiber_main, 0);
#endif
#ifdef GF__TSAN_FIBERS
    if (!f->tsan) f->tsan = __tsan_create_fiber(0);
#endif
    b->state[i] = 0;
    return 1;
}
/* Threads 1.. of a block as fibers, made at thread 0's first barrier (thread 0 runs on the
   worker's own stack: a block that never syncs makes none). 0: out of memory. */
static void gf__next_thread(gf_kernel_ctx *c);
static int gf__block_start_fibers(gf__block_run *b) {
    gf_kernel_ctx c = b->ctx[0];
    int i;
    for (i = 1; i < b->count; i++) { gf__next_thread(&c); b->ctx[i] = c; }
    for (i = 1; i < b->count; i++) {
        if (!gf__fiber_start(b, i)) return 0;
        b->started = i + 1;
    }
    return 1;
}
/* One round: each fiber that can run runs until it waits at a barrier or finishes (they hand
   on fiber to fiber, the last back here); then, when every thread still running waits, the
   barrier opens. If some returned without reaching it, or the waiting ones called different
   gf_block_sync calls (a barrier in divergent code), that is the block's misuse: it opens all
   the same, so nothing hangs. Returns how many threads are still running. */
static int gf__block_round(gf__block_run *b) {
    int i, alive, other = -1, one = -1;
    for (i = 1; i < b->started; i++)   /* the first that can run hands on to every later one */
        if (b->state[i] == 0) { b->current = i; gf__fiber_switch(&b->main, &b->fibers[i]); break; }
    b->current = 0;
    alive = b->started - b->finished;
    if (!alive || b->waiting != alive) return alive;
    b->waiting = 0;
    for (i = 0; i < b->started; i++) {
        if (b->state[i] != 1) continue;
        if (one < 0) one = i;
        else if (other < 0 && b->site[i] && b->site[one] && b->site[i] != b->site[one]) other = i;
        b->state[i] = 0;   /* all arrived */
    }
    if (b->misuse[0] || b->no_stacks) return alive;
    if (alive < b->count)
        snprintf(b->misuse, sizeof b->misuse, "%d of its %d threads reached gf_block_sync; the other %d returned without it",
                 alive, b->count, b->count - alive);
    else if (other >= 0)
        snprintf(b->misuse, sizeof b->misuse, "its threads %d and %d waited at different gf_block_sync calls (a barrier in divergent code)",
                 one, other);
    return alive;
}

/* Thread 0 (on the worker's stack) at a barrier: the others run up to it, then it goes on. Not
   inlined into gf_stub_barrier_at, whose fiber path (255 of 256 calls) stays a few registers. */
static GF__NOINLINE void gf__thread0_waits(gf__block_run *b) {
    if (b->started == 1 && !b->no_stacks && !gf__block_start_fibers(b)) b->no_stacks = 1;   /* never later: they would start behind */
    while (b->state[0] == 1 && gf__block_round(b)) {}
}
GPUFLOW_IMPL void gf_stub_barrier_at(int site) {
    gf__block_run *b = gf__running_block;
    if (!b) return;   /* a one-thread block, or no kernel at all */
    if (b->per_block) {   /* between regions the block is together already; in one, its loop cannot stop */
        if (b->in_region && !b->misuse[0])
            snprintf(b->misuse, sizeof b->misuse, "gf_block_sync inside a GF_EACH_THREAD region of a block kernel, which cannot hold there: "
                     "the region's end is its barrier");
        return;
    }
    if (b->plain) {   /* count threads, not calls: a thread may reach several */
        const gf_kernel_ctx *c = b->plain_ctx;
        uint64_t t = 1 + c->thread_idx[0] + (uint64_t)c->block[0] * (c->thread_idx[1] + (uint64_t)c->block[1] * c->thread_idx[2]);
        if (t != b->plain_hit) { b->plain_hit = t; b->plain_barriers++; }
        return;
    }
    b->hit_barrier = 1;
    b->state[b->current] = 1;
    b->waiting++;
    b->site[b->current] = site;
    if (b->current) gf__fiber_yield(b);
    else gf__thread0_waits(b);
}
GPUFLOW_IMPL void gf_stub_barrier(void) { gf_stub_barrier_at(0); }

/* A block kernel's GF_EACH_THREAD: where its regions start and end, and a thread that left
   one with break (on a GPU it would skip the block's barrier). */
GPUFLOW_IMPL void gf_stub_region(gf_stub_region_event what) {
    gf__block_run *b = gf__running_block;
    if (!b || !b->per_block) return;
    if (what == GF_STUB_REGION_ENTER) b->in_region = 1;
    else if (what == GF_STUB_REGION_LEAVE) b->in_region = 0;
    else if (!b->misuse[0])
        snprintf(b->misuse, sizeof b->misuse, "a thread left a GF_EACH_THREAD region with break (on a GPU it skips the block's barrier; "
                 "continue ends a thread's part)");
}

static int gf__u32_as_int(unsigned x) { return x <= 0x7fffffffu ? (int)x : -(int)~x - 1; }   /* two's complement, defined */
GPUFLOW_IMPL unsigned gf_stub_atomic(gf_stub_atomic_op op, unsigned *p, unsigned v, unsigned desired) {
    unsigned old = gf__atomic_load_u32(p), next;
    for (;;) {   /* one compare-and-swap loop for all five: the stub's atomics need only be right */
        switch (op) {
        case GF_STUB_ATOMIC_ADD:  next = old + v; break;
        case GF_STUB_ATOMIC_MIN:  next = v < old ? v : old; break;
        case GF_STUB_ATOMIC_MAX:  next = v > old ? v : old; break;
        case GF_STUB_ATOMIC_MIN_INT: next = gf__u32_as_int(v) < gf__u32_as_int(old) ? v : old; break;
        case GF_STUB_ATOMIC_MAX_INT: next = gf__u32_as_int(v) > gf__u32_as_int(old) ? v : old; break;
        case GF_STUB_ATOMIC_XCHG: next = v; break;
        default:                  if (old != v) return old; next = desired; break;   /* CAS: v is the expected value */
        }
        if (gf__atomic_cas_u32(p, &old, next)) return old;
    }
}

/* The first failure of a launch on q: kept, and returned by every later synchronize. */
static void gf__stub_fail_async(gf__stub_stream *q, gf_result code, const char *fmt, ...) GF__PRINTF(3, 4);
static void gf__stub_fail_async(gf__stub_stream *q, gf_result code, const char *fmt, ...) {
    va_list ap;
    gf__lock(&q->lock);
    if (!q->error) {
        va_start(ap, fmt);
        vsnprintf(q->message, sizeof q->message, fmt, ap);
        va_end(ap);
        q->error = code;
    }
    gf__unlock(&q->lock);
}

/* Threads [from, count) of a block as plain calls from ctx on: row by row through the kernel's
   thread loop where it has one (x fastest), else one call each. */
static void gf__run_plain(gf__block_run *b, void (*threads)(gf_kernel_ctx *, void *const *, unsigned), gf_kernel_ctx *ctx,
                          int from, int count) {
    int i = from;
    b->plain_ctx = ctx;
    b->plain_hit = 0;
    while (i < count) {
        if (threads) {
            unsigned row = ctx->block[0] - ctx->thread_idx[0];
            threads(ctx, b->argv, row);   /* leaves thread_idx[0] at block[0] */
            i += (int)row;
            ctx->thread_idx[0] = ctx->block[0] - 1;
            gf__next_thread(ctx);
        } else {
            b->kernel(ctx, b->argv);
            i++;
            gf__next_thread(ctx);
        }
    }
}

/* The next thread of a block, x fastest (a division per thread costs more than most kernels). */
static void gf__next_thread(gf_kernel_ctx *c) {
    if (++c->thread_idx[0] < c->block[0]) return;
    c->thread_idx[0] = 0;
    if (++c->thread_idx[1] < c->block[1]) return;
    c->thread_idx[1] = 0;
    c->thread_idx[2]++;
}

/* Every thread of blocks taken from g until none is left: plain calls, or fibers for a block
   whose threads sync, or one call for a block kernel's block. Each block's thread 0 runs
   first, alone, to find out: if it finishes without reaching a barrier, the block's other
   threads run as plain calls (and one that reaches a barrier then is misuse). Misuse of barriers and (GPUFLOW_DEBUG) writes outside
   buffers fail the stream, naming the kernel, the block and what happened; the launch runs to
   its end. Without memory for the fibers a block that syncs cannot run right: the stream fails
   and no more blocks are taken. Each thread that runs blocks has its own fibers. */
static void gf__grid_run(gf__grid *g) {
    gf__stub_stream *q = g->q;
    gf__stub_item *it = g->it;
    gf__block_run b;
    gf_kernel_ctx ctx;
    uint64_t n, last;
    unsigned bx, by, bz;
    int slot, per_block = (int)(it->dims.block[0] * it->dims.block[1] * it->dims.block[2]), fibers = per_block > 1 && !it->per_block, i;
    memset(&b, 0, sizeof b);
    memcpy(ctx.grid, it->dims.grid, sizeof ctx.grid);
    memcpy(ctx.block, it->dims.block, sizeof ctx.block);
    b.kernel = it->kernel; b.argv = it->argv; b.count = per_block;
    b.pool = q->pool;
    if (fibers) {
        b.state = (unsigned char *)gf__calloc((size_t)per_block);
        b.site = (int *)gf__calloc(sizeof *b.site * (size_t)per_block);
        b.ctx = (gf_kernel_ctx *)gf__malloc(sizeof *b.ctx * (size_t)per_block);
        b.fibers = (gf__fiber *)gf__calloc(sizeof *b.fibers * (size_t)per_block);
#if defined(GF__FIBER_WINDOWS)
        b.main.fiber = ConvertThreadToFiber(NULL);
        b.converted = b.main.fiber != NULL;
        if (!b.main.fiber) b.main.fiber = GetCurrentFiber();   /* already a fiber (the program's own) */
#endif
#ifdef GF__TSAN_FIBERS
        b.main.tsan = __tsan_get_current_fiber();
#endif
        fibers = b.state && b.site && b.ctx && b.fibers;
    }
    slot = gf__atomic_add_int(&g->runners, 1);
    for (last = 0, n = 0, bx = by = bz = 0; !gf__atomic_load_int(&g->stop); n++) {
        int probed = 0, reported = 0;   /* probed: thread 0 ran alone first */
        if (n == last) {   /* the next chunk: fewer atomics on the shared counter */
            if ((n = gf__atomic_add(&g->next, g->chunk)) >= g->total) break;
            last = n + g->chunk < g->total ? n + g->chunk : g->total;
            bx = (unsigned)(n % ctx.grid[0]); by = (unsigned)(n / ctx.grid[0] % ctx.grid[1]);
            bz = (unsigned)(n / ((uint64_t)ctx.grid[0] * ctx.grid[1]));
        } else if (++bx == ctx.grid[0]) {   /* the next block, x fastest: no division per block */
            bx = 0;
            if (++by == ctx.grid[1]) { by = 0; bz++; }
        }
        if (slot < GF__GRID_SLOTS) gf__atomic_store(&g->at[slot].block, n + 1);
        ctx.block_idx[0] = bx; ctx.block_idx[1] = by; ctx.block_idx[2] = bz;
        b.plain = b.plain_barriers = b.hit_barrier = 0;
        b.misuse[0] = 0;
        ctx.thread_idx[0] = ctx.thread_idx[1] = ctx.thread_idx[2] = 0;
        if (it->per_block) {   /* a block kernel: one call runs the block, its regions as loops */
            gf__running_block = &b;
            b.per_block = 1;
            b.in_region = 0;
            it->kernel(&ctx, it->argv);
            if (b.in_region && !b.misuse[0])   /* on a GPU the others would wait at its barrier */
                snprintf(b.misuse, sizeof b.misuse, "it returned from inside a GF_EACH_THREAD region (on a GPU the other threads wait at "
                         "the block's barrier); the rest of the block did not run");
        } else if (!fibers) {   /* one thread, or no memory for fibers: a barrier reached now cannot hold */
            gf__running_block = per_block > 1 ? &b : NULL;
            b.plain = 1;
            gf__run_plain(&b, it->threads, &ctx, 0, per_block);
        } else {   /* thread 0 alone first, here: at its first barrier the others become fibers */
            gf__running_block = &b;
            b.started = 1; b.current = 0; b.no_stacks = 0; b.waiting = b.finished = 0;
            b.state[0] = 0;
            b.ctx[0] = ctx;
            it->kernel(&b.ctx[0], it->argv);
            b.state[0] = 2;
            b.finished++;
            probed = 1;
            if (b.hit_barrier) {
                while (gf__block_round(&b)) {}
                if (b.no_stacks) {   /* the threads that had no fiber never ran */
                    gf__stub_fail_async(q, GF_ERROR_OUT_OF_MEMORY, "stub: kernel '%s', block (%u, %u, %u): no host memory for its threads' fiber stacks "
                                        "(%d x %llu bytes); the launch stopped there", it->name, bx, by, bz, per_block - 1, (unsigned long long)GF__FIBER_STACK);
                    gf__atomic_store_int(&g->stop, 1);
                    reported = 1;
                }
            } else {   /* thread 0 reached no barrier: none for the block, the others as plain calls */
                b.plain = 1;
                gf__next_thread(&ctx);
                gf__run_plain(&b, it->threads, &ctx, 1, per_block);
            }
        }
        gf__running_block = NULL;
        if (b.plain_barriers && !reported++) {
            if (probed)
                gf__stub_fail_async(q, GF_ERROR_DRIVER, "stub: kernel '%s', block (%u, %u, %u): %d of its %d threads reached gf_block_sync; thread 0 returned without it",
                                    it->name, bx, by, bz, b.plain_barriers, per_block);
            else
                gf__stub_fail_async(q, GF_ERROR_OUT_OF_MEMORY, "stub: kernel '%s', block (%u, %u, %u): %d of its %d threads reached gf_block_sync, "
                                    "which did not hold: no host memory to run them as fibers", it->name, bx, by, bz, b.plain_barriers, per_block);
        }
        if (b.misuse[0] && !reported++)
            gf__stub_fail_async(q, GF_ERROR_DRIVER, "stub: kernel '%s', block (%u, %u, %u): %s", it->name, bx, by, bz, b.misuse);
    }
    if (slot < GF__GRID_SLOTS) gf__atomic_store(&g->at[slot].block, 0);
    gf__running_block = NULL;
    for (i = 0; b.fibers && i < per_block; i++) {
#if defined(GF__FIBER_WINDOWS)
        if (b.fibers[i].fiber) DeleteFiber(b.fibers[i].fiber);
#else
        gf__fiber_stack_give(b.pool, &b.fibers[i]);
#endif
#ifdef GF__TSAN_FIBERS
        if (b.fibers[i].tsan) __tsan_destroy_fiber(b.fibers[i].tsan);
#endif
    }
    gf__free(b.fibers);
    gf__free(b.ctx);
    gf__free(b.site);
    gf__free(b.state);
#if defined(GF__FIBER_WINDOWS)
    if (b.converted) ConvertFiberToThread();   /* as it was: the program's thread (GPUFLOW_STUB_INLINE) may make fibers of its own */
#endif
}

/* A block worker: helps with any grid that has blocks left, sleeps when none has. */
static void gf__block_worker(void *arg) {
    gf__block_pool *p = (gf__block_pool *)arg;
    gf__lock(&p->lock);
    for (;;) {
        gf__grid *g;
        for (g = p->grids; g && (gf__atomic_load(&g->next) >= g->total || gf__atomic_load_int(&g->stop)); g = g->link) {}
        if (!g) {
            if (p->stop) break;
            gf__cond_wait(&p->wake, &p->lock);
            continue;
        }
        g->active++;
        gf__unlock(&p->lock);
        gf__grid_run(g);
        gf__lock(&p->lock);
        if (--g->active == 0) gf__cond_broadcast(&p->left);
    }
    gf__unlock(&p->lock);
}
/* How many threads run one launch's blocks: GPUFLOW_STUB_THREADS, else the cores. */
static int gf__stub_threads(void) {
    const char *v = getenv("GPUFLOW_STUB_THREADS");
    uint64_t count = 0;
    long n = 0;
    if (v && *v) {
        if (gf__env_digits(v, 1024, &count) && count >= 1) n = (long)count;
        else gf__env_warn("gpuflow: GPUFLOW_STUB_THREADS=%s is not understood (a count, 1 to 1024); one per core", v);
    }
    if (n < 1) {
#if defined(_WIN32)
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        n = (long)si.dwNumberOfProcessors;
#else
        n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    }
    return n < 1 ? 1 : (int)n;
}
static void gf__block_pool_init(gf__block_pool *p) {
    memset(p, 0, sizeof *p);
    gf__mutex_init(&p->lock);
    gf__mutex_init(&p->stacks_lock);
    gf__cond_init(&p->wake);
    gf__cond_init(&p->left);
    p->want = gf__stub_threads() - 1;   /* the stream's own thread is one */
}
static void gf__block_pool_close(gf__block_pool *p) {
    int i;
    gf__lock(&p->lock);
    p->stop = 1;
    gf__cond_broadcast(&p->wake);
    gf__unlock(&p->lock);
    for (i = 0; i < p->started; i++) gf__thread_join(p->threads[i]);
    gf__free(p->threads);
    gf__fiber_stacks_release(p);
    gf__mutex_destroy(&p->stacks_lock);
    gf__cond_destroy(&p->left);
    gf__cond_destroy(&p->wake);
    gf__mutex_destroy(&p->lock);
}
/* The workers, started at the first grid that can use them (p->lock held); as many as start. */
static int gf__block_pool_start(gf__block_pool *p) {
    GF__HELD(&p->lock);
    if (p->started >= p->want) return p->started;
    if (!p->threads && !(p->threads = (gf__thread *)gf__calloc(sizeof *p->threads * (size_t)p->want))) { p->want = 0; return 0; }
    while (p->started < p->want && gf__thread_create(&p->threads[p->started], gf__block_worker, p)) p->started++;
    p->want = p->started;   /* one that failed to start is not tried again */
    return p->started;
}

/* A launch: its blocks on the stream's thread and, for more than one block, on the device's
   block workers; returns when every block has run. Then the guard zones are checked. */
static void gf__stub_launch_run(gf__stub_stream *q, gf__stub_item *it) {
    gf__grid g;
    gf__block_pool *p = q->pool;
    int helped = 0, i;
    memset(&g, 0, sizeof g);
    g.q = q; g.it = it;
    g.total = (uint64_t)it->dims.grid[0] * it->dims.grid[1] * it->dims.grid[2];
    g.chunk = g.total;   /* one runner takes them all at once */
    gf__lock(&q->lock);
    q->grid = &g;
    gf__unlock(&q->lock);
    if (g.total > 1 && p) {
        gf__lock(&p->lock);
        if (gf__block_pool_start(p) > 0) {
            g.chunk = g.total / ((uint64_t)(p->started + 1) * GF__GRID_CHUNK_PER_RUNNER);
            if (g.chunk < 1) g.chunk = 1;
            g.link = p->grids;
            p->grids = &g;
            gf__cond_broadcast(&p->wake);
            helped = 1;
        }
        gf__unlock(&p->lock);
    }
    gf__grid_run(&g);
    if (helped) {   /* every block is taken: off the list, then wait for the workers still in one */
        gf__grid **link;
        gf__lock(&p->lock);
        for (link = &p->grids; *link != &g; link = &(*link)->link) {}
        *link = g.link;
        while (g.active) gf__cond_wait(&p->left, &p->lock);
        gf__unlock(&p->lock);
    }
    gf__lock(&q->lock);
    q->grid = NULL;
    gf__unlock(&q->lock);
    for (i = 0; i < it->guard_count; i++) {
        size_t before, after;
        const gf__stub_guard *gd = &it->guards[i];
        if (gf__guard_check(gd, &before, &after))
            gf__stub_fail_async(q, GF_ERROR_DRIVER, "stub: kernel '%s' wrote outside its buffer argument %d%s%s%s of %llu bytes: %llu of the %d guard bytes "
                                "before it and %llu of the %d after it changed (GPUFLOW_DEBUG)", it->name, gd->arg,
                                gd->param ? " '" : "", gd->param ? gd->param : "", gd->param ? "'" : "", (unsigned long long)gd->size,
                                (unsigned long long)before, GF__GUARD_BYTES, (unsigned long long)after, GF__GUARD_BYTES);
    }
}

static void gf__stub_run(gf__stub_stream *q, gf__stub_item *it) {
    switch (it->kind) {
    case GF__STUB_COPY: memmove(it->dst, it->src, it->bytes); break;
    case GF__STUB_FILL:
        if (it->width < 2) memset(it->dst, it->value, it->bytes);
        else {
            size_t at;
            unsigned char v[4];
            memcpy(v, &it->pattern, 4);   /* host order: the low width bytes of the value */
            if (it->width == 2) { uint16_t h = (uint16_t)it->pattern; memcpy(v, &h, 2); }
            for (at = 0; at < it->bytes; at += (size_t)it->width) memcpy(it->dst + at, v, (size_t)it->width);
        }
        break;
    case GF__STUB_CALLBACK: {
        gf_result failed;
        gf__lock(&q->lock);
        failed = q->error;
        gf__unlock(&q->lock);
        if (failed) gf__stream_failed(it->stream, failed);   /* a launch before it failed: the callback is told */
        it->fn(it->user);
        break;
    }
    case GF__STUB_RECORD: {   /* q->lock held: the worker's loop, or the inline push */
        char *message = NULL;
        GF__HELD(&q->lock);
        if (q->error && (message = (char *)gf__malloc(strlen(q->message) + 1)) != NULL) strcpy(message, q->message);
        gf__lock(&it->mark->lock);
        it->mark->status = q->error;
        it->mark->message = message;
        it->mark->done = 1;
        it->mark->when_ns = gf__now_ns();
        gf__cond_broadcast(&it->mark->cond);
        gf__unlock(&it->mark->lock);
        gf__stub_mark_unref(it->mark);
        break;
    }
    case GF__STUB_WAIT:   /* work after a wait on failed work fails with it, as OpenCL's wait lists */
        gf__stub_mark_wait(it->mark);
        if (it->spread && it->mark->status)   /* written before done, which the wait saw under the mark's lock */
            gf__stub_fail_async(q, it->mark->status, "%s (the stream waited for that work)",
                                it->mark->message ? it->mark->message : "stub: the work before the event failed");
        gf__stub_mark_unref(it->mark);
        break;
    case GF__STUB_LAUNCH: gf__stub_launch_run(q, it); break;
    case GF__STUB_NOP: break;
    case GF__STUB_SIGNAL: gf__stub_sem_signal(it->sem, it->sem_value); break;
    case GF__STUB_SEM_WAIT: gf__stub_sem_wait(it->sem, it->sem_value); break;
    }
}

#ifndef GPUFLOW_STUB_INLINE   /* inline: no worker, the caller runs each item */
static void gf__stub_worker(void *arg) {
    gf__stub_stream *q = (gf__stub_stream *)arg;
    gf__lock(&q->lock);
    for (;;) {
        gf__stub_item *it;
        while (!q->head && !q->stop) { q->idle = 1; gf__cond_wait(&q->cond, &q->lock); q->idle = 0; }
        if (!q->head) break;
        it = q->head;
        /* A record completes its mark under the queue lock, together with the count: whoever
           sees the event complete then sees the stream idle, and the other way round. */
        if (it->kind == GF__STUB_RECORD) gf__stub_run(q, it);
        else {
            q->running = 1;
            gf__unlock(&q->lock);
            gf__stub_run(q, it);   /* stays at the head until done: FIFO, one at a time */
            gf__lock(&q->lock);
            q->running = 0;
        }
        q->head = it->next;
        if (!q->head) q->tail = NULL;
        q->done++;
        if (q->waiters) gf__cond_broadcast(&q->cond);
        if (q->spent_count < GF__STUB_SPENT_MAX) { it->next = q->spent; q->spent = it; q->spent_count++; }
        else gf__free(it);   /* nobody pushes: do not hold on to more */
    }
    gf__unlock(&q->lock);
}
#endif

static void gf__stub_items_free(gf__stub_item *it) {
    gf__stub_item *next;
    for (; it; it = next) { next = it->next; gf__free(it); }
}
static gf__stub_item *gf__stub_item_new(gf__stub_kind kind, size_t extra) {
    gf__stub_item *it = (gf__stub_item *)gf__malloc(sizeof *it + extra);
    if (it) { memset(it, 0, sizeof *it); it->kind = kind; }
    return it;
}

/* Queues it on s (or runs it now under GPUFLOW_STUB_INLINE); takes ownership. The worker is
   woken after q->lock is let go, or it would wake only to wait for that lock (q lives on: a
   program's stream is pushed to under s->lock, which its destroy takes first; the device's
   own streams live until it closes), and the items it has run are freed here: a malloc and a
   free on two threads meet on the allocator's lock, on one they stay in its cache. */
static gf_result gf__stub_push(gf_stream *s, gf__stub_item *it) {
    gf__stub_stream *q = (gf__stub_stream *)s->native;
    if (!it) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    gf__stub_callback_calls("enqueued work");
#ifdef GPUFLOW_STUB_INLINE
    if (it->kind == GF__STUB_RECORD) gf__lock(&q->lock);   /* a record runs under it, as on the worker */
    gf__stub_run(q, it);
    if (it->kind == GF__STUB_RECORD) gf__unlock(&q->lock);
    gf__free(it);
#else
    {
        gf__stub_item *spent;
        int wake;
        gf__lock(&q->lock);
        if (q->tail) q->tail->next = it; else q->head = it;
        q->tail = it;
        q->enqueued++;
        wake = q->idle;
        spent = q->spent;
        q->spent = NULL;
        q->spent_count = 0;
        gf__unlock(&q->lock);
        if (wake) gf__cond_broadcast(&q->cond);
        gf__stub_items_free(spent);
    }
#endif
    return GF_OK;
}

static gf_result gf__stub_stream_create(gf_stream *s) {
    gf__stub_stream *q = (gf__stub_stream *)gf__calloc(sizeof *q);
    if (!q) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    gf__mutex_init(&q->lock);
    gf__cond_init(&q->cond);
    q->pool = &((gf__stub_device *)s->dev->native)->pool;
#ifndef GPUFLOW_STUB_INLINE
    if (!gf__thread_create(&q->thread, gf__stub_worker, q)) {
        gf__cond_destroy(&q->cond); gf__mutex_destroy(&q->lock); gf__free(q);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: cannot start a stream's worker thread (out of host memory, or of threads)");
    }
#endif
    s->native = q;
    return GF_OK;
}
static void gf__stub_stream_destroy(gf_stream *s) {
    gf__stub_stream *q = (gf__stub_stream *)s->native;
    gf__lock(&q->lock);
    q->stop = 1;
    gf__cond_broadcast(&q->cond);
    gf__unlock(&q->lock);
#ifndef GPUFLOW_STUB_INLINE
    gf__thread_join(q->thread);
#endif
    gf__stub_items_free(q->spent);
    gf__cond_destroy(&q->cond);
    gf__mutex_destroy(&q->lock);
    gf__free(q);
}
/* A failure a launch left on q (q->lock held): the stream's sticky error, as a GPU's fault. */
static gf_result gf__stub_stream_failed(gf__stub_stream *q) {
    GF__HELD(&q->lock);
    char message[sizeof q->message];
    gf_result error = q->error;
    memcpy(message, q->message, sizeof message);
    gf__unlock(&q->lock);
    return gf__fail(error, "%s", message);
}
static gf_result gf__stub_stream_synchronize(gf_stream *s) {
    gf__stub_stream *q = (gf__stub_stream *)s->native;
    uint64_t target;
    gf__stub_callback_calls("waited for a stream");
    gf__lock(&q->lock);
    target = q->enqueued;
    q->waiters++;
    while (q->done < target) gf__cond_wait(&q->cond, &q->lock);
    q->waiters--;
    if (q->error) return gf__stub_stream_failed(q);
    gf__unlock(&q->lock);
    return GF_OK;
}
static gf_result gf__stub_stream_query(gf_stream *s) {
    gf__stub_stream *q = (gf__stub_stream *)s->native;
    int idle;
    gf__lock(&q->lock);
    if (q->error) return gf__stub_stream_failed(q);
    idle = q->done == q->enqueued;
    gf__unlock(&q->lock);
    return idle ? GF_OK : GF_NOT_READY;
}
static void gf__stub_describe_stream(gf_stream *s, gf__text *t) {
    gf__stub_stream *q = (gf__stub_stream *)s->native;
    gf__lock(&q->lock);
    if (q->running && q->head && q->head->kind == GF__STUB_LAUNCH && q->grid) {   /* the lowest block running: a stuck one stays named */
        const unsigned *grid = q->head->dims.grid;
        uint64_t low = 0, at;
        int i;
        for (i = 0; i < GF__GRID_SLOTS; i++)
            if ((at = gf__atomic_load(&q->grid->at[i].block)) != 0 && (!low || at < low)) low = at;
        if (low--)
            gf__say(t, "  stream '%s': kernel '%s' is running now, at block (%u, %u, %u) of (%u, %u, %u)\n", s->label, q->head->name,
                    (unsigned)(low % grid[0]), (unsigned)(low / grid[0] % grid[1]), (unsigned)(low / ((uint64_t)grid[0] * grid[1])),
                    grid[0], grid[1], grid[2]);
    }
    if (q->running && q->head && q->head->kind == GF__STUB_SEM_WAIT)
        gf__say(t, "  stream '%s': waiting for %s to reach %llu (it is at %llu)\n", s->label, q->head->name,
                (unsigned long long)q->head->sem_value, (unsigned long long)gf__atomic_load(q->head->sem->value));
    if (q->error) gf__say(t, "  stream '%s' failed: %s\n", s->label, q->message);
    gf__unlock(&q->lock);
}

static gf_result gf__stub_copy(gf_stream *s, const gf__copy *c) {
    gf__stub_item *it = gf__stub_item_new(GF__STUB_COPY, 0);
    if (it) {
        it->dst = c->kind == GF__COPY_D2H ? (unsigned char *)c->host : (unsigned char *)c->dst->host + c->dst_offset;
        it->src = c->kind == GF__COPY_H2D ? (const unsigned char *)c->host : (const unsigned char *)c->src->host + c->src_offset;
        it->bytes = c->bytes;
    }
    return gf__stub_push(s, it);
}
static gf_result gf__stub_fill(gf_stream *s, gf_buffer *buf, size_t offset, unsigned char value, size_t bytes) {
    gf__stub_item *it = gf__stub_item_new(GF__STUB_FILL, 0);
    if (it) { it->dst = (unsigned char *)buf->host + offset; it->value = value; it->bytes = bytes; }
    return gf__stub_push(s, it);
}
static gf_result gf__stub_fill_wide(gf_stream *s, gf_buffer *buf, size_t offset, uint32_t value, int width, size_t count) {
    gf__stub_item *it = gf__stub_item_new(GF__STUB_FILL, 0);
    if (it) { it->dst = (unsigned char *)buf->host + offset; it->pattern = value; it->width = width; it->bytes = count * (size_t)width; }
    return gf__stub_push(s, it);
}
static gf_result gf__stub_prefetch(gf_stream *s, gf_buffer *buf, int to_device) {
    (void)buf; (void)to_device;   /* host memory is already everywhere */
    return gf__stub_push(s, gf__stub_item_new(GF__STUB_NOP, 0));
}
static gf_result gf__stub_host_callback(gf_stream *s, void (*fn)(void *), void *user) {
    gf__stub_item *it = gf__stub_item_new(GF__STUB_CALLBACK, 0);
    if (it) { it->fn = fn; it->user = user; it->stream = s; }
    return gf__stub_push(s, it);
}

static gf_result gf__stub_event_create(gf_event *ev) {
    gf__stub_event *e = (gf__stub_event *)gf__calloc(sizeof *e);
    if (!e) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    gf__mutex_init(&e->lock);
    ev->native = e;
    return GF_OK;
}
static void gf__stub_event_destroy(gf_event *ev) {
    gf__stub_event *e = (gf__stub_event *)ev->native;
    gf__stub_mark_unref(e->latest);
    gf__mutex_destroy(&e->lock);
    gf__free(e);
}
static gf_result gf__stub_event_record(gf_event *ev, gf_stream *s) {
    gf__stub_event *e = (gf__stub_event *)ev->native;
    gf__stub_item *it = gf__stub_item_new(GF__STUB_RECORD, 0);
    gf__stub_mark *m = gf__stub_mark_new(), *old;
    if (!it || !m) { gf__free(it); gf__stub_mark_unref(m); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory"); }
    it->mark = gf__stub_mark_ref(m);   /* one reference for the event, one for the item */
    gf__lock(&e->lock);
    old = e->latest;
    e->latest = m;
    gf__unlock(&e->lock);
    gf__stub_mark_unref(old);
    return gf__stub_push(s, it);
}
static gf_result gf__stub_stream_wait_event(gf_stream *s, gf_event *ev) {
    gf__stub_mark *m = gf__stub_latest(ev);
    gf__stub_item *it;
    if (!m) return GF_OK;
    if (!(it = gf__stub_item_new(GF__STUB_WAIT, 0))) { gf__stub_mark_unref(m); return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory"); }
    it->mark = m;
    /* the device's own streams wait for the library's orderings, never asked for by the program:
       a failure there would stay for good on a stream nobody synchronizes */
    it->spread = s != s->dev->sync_stream && s != s->dev->peer_stream && s != s->dev->outside_stream;
    return gf__stub_push(s, it);
}
static int gf__stub_peer_can_access(gf_device *a, gf_device *b) { (void)a; (void)b; return 1; }
static gf_result gf__stub_peer_enable(gf_device *a, gf_device *b) { (void)a; (void)b; return GF_OK; }
/* The event's state: GF_NOT_READY or GF_OK (complete, whether its work failed or not: what
   the core's bookkeeping asks); *when_ns (may be NULL) the time it completed (0: never
   recorded); *failure (may be NULL) the failure of the work before it. wait: until complete. */
static gf_result gf__stub_event_state(gf_event *ev, int wait, uint64_t *when_ns, gf_result *failure) {
    gf__stub_mark *m = gf__stub_latest(ev);
    gf_result r = GF_OK;
    if (when_ns) *when_ns = 0;
    if (failure) *failure = GF_OK;
    if (!m) return GF_OK;
    gf__lock(&m->lock);
    while (wait && !m->done) gf__cond_wait(&m->cond, &m->lock);
    if (!m->done) r = GF_NOT_READY;
    else {
        if (when_ns) *when_ns = m->when_ns;
        if (failure) *failure = gf__stub_mark_status(m);
    }
    gf__unlock(&m->lock);
    gf__stub_mark_unref(m);
    return r;
}
static gf_result gf__stub_event_synchronize(gf_event *ev) { return gf__stub_event_state(ev, 1, NULL, NULL); }
static gf_result gf__stub_event_query(gf_event *ev) { return gf__stub_event_state(ev, 0, NULL, NULL); }
static gf_result gf__stub_event_failure(gf_event *ev) {
    gf_result failure;
    return gf__stub_event_state(ev, 0, NULL, &failure) == GF_OK ? failure : GF_OK;
}
static gf_result gf__stub_event_elapsed_ms(gf_event *start, gf_event *end, float *ms) {
    uint64_t a, b;
    (void)gf__stub_event_state(start, 0, &a, NULL);   /* both complete: the core asked */
    (void)gf__stub_event_state(end, 0, &b, NULL);
    *ms = (float)((double)(int64_t)(b - a) / 1e6);
    return GF_OK;
}

static gf_result gf__stub_module_load(gf_module *mod, const gf_module_desc *desc) {
    if (desc->stub_kernel_count == 0)
        return gf__fail(GF_ERROR_NOT_SUPPORTED, "stub: the module has no stub kernels: include the .gfk once more with "
                        "GF_KERNELS_AS_C and list them in gf_module_desc.stub_kernels (GF_STUB_KERNEL(name))");
    if (!(mod->stub_kernels = (gf_stub_kernel *)gf__malloc(sizeof *mod->stub_kernels * (size_t)desc->stub_kernel_count)))
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    memcpy(mod->stub_kernels, desc->stub_kernels, sizeof *mod->stub_kernels * (size_t)desc->stub_kernel_count);
    mod->stub_kernel_count = desc->stub_kernel_count;
    return GF_OK;
}
static void gf__stub_module_unload(gf_module *mod) { gf__free(mod->stub_kernels); }
static gf_result gf__stub_kernel_get(gf_kernel *k) {
    int i;
    for (i = 0; i < k->mod->stub_kernel_count; i++)
        if (k->mod->stub_kernels[i].name && !strcmp(k->mod->stub_kernels[i].name, k->name) && k->mod->stub_kernels[i].fn) {
            k->stub_fn = k->mod->stub_kernels[i].fn;
            k->stub_threads = k->mod->stub_kernels[i].threads;
            k->stub_per_block = k->mod->stub_kernels[i].per_block != 0;
            k->param_count = k->mod->stub_kernels[i].param_count;
            k->params = k->mod->stub_kernels[i].params;
            k->buffer_params = gf__buffer_params(k->params, k->param_count);
            return GF_OK;
        }
    {   /* name the ones it has: the usual cause is a typo */
        char list[256] = "";
        size_t used = 0;
        for (i = 0; i < k->mod->stub_kernel_count && used + 1 < sizeof list; i++) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                             k->mod->stub_kernels[i].name ? k->mod->stub_kernels[i].name : "(unnamed)");
            if (n < 0) break;
            used += (size_t)n < sizeof list - used ? (size_t)n : sizeof list - used - 1;
        }
        return gf__fail(GF_ERROR_NOT_FOUND, "stub: its stub kernels are %s", list);
    }
}

/* The item carries argv (one pointer per argument) and the values the pointers point at. */
/* The item carries its guard list (GPUFLOW_DEBUG: one per buffer argument whose memory has
   guard zones), then argv, then the values, then the kernel's name. */
static gf_result gf__stub_launch(gf_stream *s, gf_kernel *k, const gf_launch_dims *dims, const gf_arg *args, int count) {
    size_t name = strlen(k->name) + 1, guards = GF__GUARD_BYTES ? sizeof(gf__stub_guard) * (size_t)count : 0;
    size_t extra = guards + sizeof(void *) * (size_t)count + 16 + name, at;
    gf__stub_item *it;
    unsigned char *values;
    int i;
    for (i = 0; i < count; i++) extra += ((args[i].buffer ? sizeof(void *) : args[i].size) + 15) & ~(size_t)15;
    if (!(it = gf__stub_item_new(GF__STUB_LAUNCH, extra))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    it->kernel = k->stub_fn;
    it->threads = k->stub_threads;
    it->per_block = k->stub_per_block;
    it->dims = *dims;
    it->guards = (gf__stub_guard *)(void *)(it + 1);
    it->argv = (void **)(void *)((unsigned char *)(it + 1) + guards);
    values = (unsigned char *)(it->argv + count);
    values += (16 - ((uintptr_t)values & 15)) & 15;
    for (i = 0, at = 0; i < count; i++) {
        it->argv[i] = values + at;
        if (args[i].buffer) { memcpy(values + at, &args[i].buffer->host, sizeof(void *)); at += (sizeof(void *) + 15) & ~(size_t)15; }
        else { memcpy(values + at, args[i].value, args[i].size); at += (args[i].size + 15) & ~(size_t)15; }
    }
    it->name = (const char *)memcpy(values + at, k->name, name);
    for (i = 0; guards && i < count; i++) {
        gf_buffer *root = args[i].buffer;
        while (root && root->parent) root = root->parent;
        if (!root || root->borrowed || root->external) continue;   /* wrapped, imported or shared memory has no guard zones */
        it->guards[it->guard_count].host = (unsigned char *)root->host;
        it->guards[it->guard_count].size = root->capacity;
        it->guards[it->guard_count].arg = i;
        it->guards[it->guard_count].param = k->params && i < k->param_count ? k->params[i].name : NULL;
        it->guard_count++;
    }
    return gf__stub_push(s, it);
}

/* Stream-ordered allocation and graphs stay NULL: the core's cache and recorded replay. */
/* ---- the stub's interop: memory and semaphores the host maps ----------------------------- */
#if !defined(_WIN32)
static unsigned gf__stub_external_types(gf_device *dev, int use) { (void)dev; (void)use; return GF__EXT_BIT(GF_EXTERNAL_HOST_FD); }
#if defined(__linux__)
/* A memfd of bytes sealed against shrinking, so that no holder of an exported fd can cut the
   memory under this process's mapping (its next touch would die of SIGBUS); -1 where the C
   library or the kernel has none. memfd_create is looked up at run time: glibc declares it only
   under _GNU_SOURCE, and C libraries before glibc 2.27 lack it. */
#  if defined(RTLD_DEFAULT)
#    define GF__RTLD_DEFAULT RTLD_DEFAULT
#  else
#    define GF__RTLD_DEFAULT ((void *)0)   /* glibc's and musl's RTLD_DEFAULT, named only under _GNU_SOURCE */
#  endif
static int gf__stub_memfd(size_t bytes) {
    enum { MEMFD_CLOEXEC = 1, MEMFD_ALLOW_SEALING = 2, ADD_SEALS = 1033, SEAL_SEAL = 1, SEAL_SHRINK = 2 };   /* <linux/memfd.h>, <linux/fcntl.h> */
    int (*memfd_create_fn)(const char *, unsigned);
    void *sym = dlsym(GF__RTLD_DEFAULT, "memfd_create");
    int fd;
    if (!sym) return -1;
    memcpy(&memfd_create_fn, &sym, sizeof sym);
    if ((fd = gf__fd_high(memfd_create_fn("gpuflow", MEMFD_CLOEXEC | MEMFD_ALLOW_SEALING))) < 0) return -1;
    if (ftruncate(fd, (off_t)bytes) != 0 || fcntl(fd, ADD_SEALS, SEAL_SHRINK | SEAL_SEAL) != 0) { close(fd); return -1; }
    return fd;
}
#else
static int gf__stub_memfd(size_t bytes) { (void)bytes; return -1; }
#endif
/* A fresh shared-memory object of bytes that only fds reach: a sealed memfd where Linux has
   them, else a POSIX one whose name is gone at once (which a holder can shrink: README). */
static int gf__stub_shm(size_t bytes) {
    static int serial;
    char name[64];
    int tries, fd = gf__stub_memfd(bytes);
    if (fd >= 0) return fd;
    for (tries = 0; tries < 16 && fd < 0; tries++) {
        snprintf(name, sizeof name, "/gpuflow-%ld-%d", (long)getpid(), gf__atomic_add_int(&serial, 1));
        if ((fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600)) >= 0) { shm_unlink(name); fd = gf__fd_high(fd); }
    }
    if (fd >= 0 && ftruncate(fd, (off_t)bytes) != 0) { close(fd); fd = -1; }
    return fd;
}
static void *gf__stub_map(int fd, size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}
/* What fd holds, where the host can tell (memfd, POSIX shm, files: 1 and *bytes, 0 bytes
   included); 0 where it cannot (a dma-buf). Mapping past what a file holds succeeds, and the
   first touch then kills the process (SIGBUS). */
static int gf__stub_fd_bytes(int fd, uint64_t *bytes) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    *bytes = (uint64_t)st.st_size;
    return 1;
}
static gf_result gf__stub_alloc_shared(gf_buffer *buf) {
    gf__stub_mapping *m = (gf__stub_mapping *)gf__calloc(sizeof *m);
    if (!m) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    m->bytes = buf->size;
    if ((m->fd = gf__stub_shm(m->bytes)) < 0 || !(m->base = (unsigned char *)gf__stub_map(m->fd, m->bytes))) {
        int err = errno;
        if (m->fd >= 0) close(m->fd);
        gf__free(m);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: cannot make %llu bytes of exportable shared memory (%s)",
                        (unsigned long long)buf->size, strerror(err));
    }
    buf->external = m;
    buf->host = m->base;
    buf->native = (uint64_t)(uintptr_t)m->base;
    return GF_OK;
}
static void gf__stub_mapping_free(gf__stub_mapping *m) {
    munmap(m->base, m->bytes);
    if (m->fd >= 0) close(m->fd);
    gf__free(m);
}
static gf_result gf__stub_buffer_import(gf_buffer *buf, const gf_external_memory_desc *d) {
    gf__stub_mapping *m;
    uint64_t has = 0;
    if (gf__stub_fd_bytes(d->fd, &has) && d->size > has)
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_buffer_import: size %llu is past the %llu bytes fd %d holds",
                        (unsigned long long)d->size, (unsigned long long)has, d->fd);
    if (d->size > (uint64_t)SIZE_MAX) return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_buffer_import: size does not fit this host");
    if (!(m = (gf__stub_mapping *)gf__calloc(sizeof *m))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    m->bytes = (size_t)d->size;
    m->fd = -1;   /* the caller's fd stays the caller's: the mapping outlives it */
    m->imported = 1;
    if (!(m->base = (unsigned char *)gf__stub_map(d->fd, m->bytes))) {
        int err = errno;
        gf__free(m);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_import: fd %d cannot be mapped (%s); the stub takes fds the host maps "
                        "(memfd, POSIX shm, dma-buf), not a driver's opaque fd", d->fd, strerror(err));
    }
    buf->external = m;
    buf->host = m->base + d->offset;
    buf->native = (uint64_t)(uintptr_t)buf->host;
    return GF_OK;
}
static gf_result gf__stub_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out) {
    gf__stub_mapping *m = (gf__stub_mapping *)buf->external;
    (void)type;
    if (!m || m->fd < 0) return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_buffer_export: the buffer has no exportable memory");
    if ((out->fd = gf__fd_dup(m->fd)) < 0) return gf__fail(GF_ERROR_DRIVER, "gf_buffer_export: dup failed (%s)", strerror(errno));
    out->size = m->bytes;
    return GF_OK;
}
static gf_result gf__stub_semaphore_create(gf_semaphore *sem) {
    gf__stub_sem *m = (gf__stub_sem *)gf__calloc(sizeof *m);
    if (!m) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    gf__stub_sem_shared *shared = NULL;
    m->timeline = sem->timeline;
    if ((m->fd = gf__stub_shm(sizeof *shared)) < 0 || !(shared = (gf__stub_sem_shared *)gf__stub_map(m->fd, sizeof *shared))) {
        int err = errno;
        if (m->fd >= 0) close(m->fd);
        gf__free(m);
        return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: cannot make a shared semaphore (%s)", strerror(err));
    }
    shared->magic = GF__STUB_SEM_MAGIC;
    shared->timeline = (uint32_t)(sem->timeline != 0);
    m->value = &shared->value;
    m->mapped = sizeof *shared;
    sem->native = m;
    return GF_OK;
}
static gf_result gf__stub_semaphore_import(gf_semaphore *sem, const gf_semaphore_desc *d) {
    gf__stub_sem *m;
    uint64_t has = 0;
    size_t mapped;
    int known = gf__stub_fd_bytes(d->fd, &has);
    if (known && has < sizeof(uint64_t))
        return gf__fail(GF_ERROR_OUT_OF_RANGE, "gf_semaphore_import: fd %d holds %llu bytes; a stub semaphore is 8", d->fd, (unsigned long long)has);
    mapped = known && has >= sizeof(gf__stub_sem_shared) ? sizeof(gf__stub_sem_shared) : sizeof(uint64_t);
    if (!(m = (gf__stub_sem *)gf__calloc(sizeof *m))) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    m->timeline = sem->timeline;
    m->fd = -1;
    if (!(m->value = (uint64_t *)gf__stub_map(d->fd, mapped))) {
        int err = errno;
        gf__free(m);
        return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_import: fd %d cannot be mapped (%s); the stub takes a host fd "
                        "whose first 8 bytes are the counter (what a stub semaphore exports)", d->fd, strerror(err));
    }
    if (mapped == sizeof(gf__stub_sem_shared)) {
        const gf__stub_sem_shared *shared = (const gf__stub_sem_shared *)(void *)m->value;
        int timeline = shared->timeline != 0;
        if (shared->magic == GF__STUB_SEM_MAGIC && timeline != (sem->timeline != 0)) {
            munmap((void *)m->value, mapped);
            gf__free(m);
            return gf__fail(GF_ERROR_INVALID_ARGUMENT, "gf_semaphore_import: fd %d is a %s semaphore's; import it as one (gf_semaphore_desc.timeline %d)",
                            d->fd, timeline ? "timeline" : "binary", timeline);
        }
    }
    m->mapped = mapped;
    sem->native = m;
    return GF_OK;
}
static gf_result gf__stub_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out) {
    gf__stub_sem *m = (gf__stub_sem *)sem->native;
    (void)type;
    if ((out->fd = gf__fd_dup(m->fd)) < 0) return gf__fail(GF_ERROR_DRIVER, "gf_semaphore_export: dup failed (%s)", strerror(errno));
    out->size = m->mapped;
    return GF_OK;
}
static void gf__stub_semaphore_destroy(gf_semaphore *sem) {
    gf__stub_sem *m = (gf__stub_sem *)sem->native;
    munmap((void *)m->value, m->mapped);
    if (m->fd >= 0) close(m->fd);
    gf__free(m);
}
#else   /* Windows: no host fds; semaphores live in the process */
static unsigned gf__stub_external_types(gf_device *dev, int use) { (void)dev; (void)use; return 0; }
static gf_result gf__stub_alloc_shared(gf_buffer *buf) { (void)buf; return gf__fail(GF_ERROR_NOT_SUPPORTED, "stub: no exportable memory on Windows"); }
static void gf__stub_mapping_free(gf__stub_mapping *m) { gf__free(m); }
static gf_result gf__stub_buffer_import(gf_buffer *buf, const gf_external_memory_desc *d) { (void)buf; (void)d; return gf__fail(GF_ERROR_NOT_SUPPORTED, "stub: no imports on Windows"); }
static gf_result gf__stub_buffer_export(gf_buffer *buf, gf_external_type type, gf_external_handle *out) { (void)buf; (void)type; (void)out; return gf__fail(GF_ERROR_NOT_SUPPORTED, "stub: no exports on Windows"); }
static gf_result gf__stub_semaphore_create(gf_semaphore *sem) {
    gf__stub_sem *m = (gf__stub_sem *)gf__calloc(sizeof *m);
    if (!m) return gf__fail(GF_ERROR_OUT_OF_MEMORY, "stub: out of host memory");
    m->timeline = sem->timeline;
    m->fd = -1;
    m->value = &m->own;
    sem->native = m;
    return GF_OK;
}
static gf_result gf__stub_semaphore_import(gf_semaphore *sem, const gf_semaphore_desc *d) { (void)sem; (void)d; return gf__fail(GF_ERROR_NOT_SUPPORTED, "stub: no imports on Windows"); }
static gf_result gf__stub_semaphore_export(gf_semaphore *sem, gf_external_type type, gf_external_handle *out) { (void)sem; (void)type; (void)out; return gf__fail(GF_ERROR_NOT_SUPPORTED, "stub: no exports on Windows"); }
static void gf__stub_semaphore_destroy(gf_semaphore *sem) { gf__free(sem->native); }
#endif
static gf_result gf__stub_semaphore_enqueue(gf_stream *s, gf_semaphore *sem, uint64_t value, gf__stub_kind kind) {
    size_t n = strlen(sem->label) + 1;
    gf__stub_item *it = gf__stub_item_new(kind, n);
    if (it) {
        it->sem = (gf__stub_sem *)sem->native;
        it->sem_value = value;
        it->name = (const char *)memcpy(it + 1, sem->label, n);
    }
    return gf__stub_push(s, it);
}
static gf_result gf__stub_semaphore_signal(gf_stream *s, gf_semaphore *sem, uint64_t value) { return gf__stub_semaphore_enqueue(s, sem, value, GF__STUB_SIGNAL); }
static gf_result gf__stub_semaphore_wait(gf_stream *s, gf_semaphore *sem, uint64_t value) { return gf__stub_semaphore_enqueue(s, sem, value, GF__STUB_SEM_WAIT); }

static void gf__stub_fill_table(gf__backend *t) {
    t->kind = GF_BACKEND_STUB;
    t->name = "stub";
    t->load = gf__stub_load;
    t->device_count = gf__stub_device_count;
    t->device_open = gf__stub_device_open;
    t->device_close = gf__stub_device_close;
    t->trim = gf__stub_trim;
    t->memory_info = gf__stub_memory_info;
    t->buffer_alloc = gf__stub_buffer_alloc;
    t->buffer_free = gf__stub_buffer_free;
    t->host_alloc = gf__stub_host_alloc;
    t->host_free = gf__stub_host_free;
    t->stream_create = gf__stub_stream_create;
    t->stream_destroy = gf__stub_stream_destroy;
    t->stream_synchronize = gf__stub_stream_synchronize;
    t->stream_query = gf__stub_stream_query;
    t->copy = gf__stub_copy;
    t->fill = gf__stub_fill;
    t->prefetch = gf__stub_prefetch;
    t->host_callback = gf__stub_host_callback;
    t->event_create = gf__stub_event_create;
    t->event_destroy = gf__stub_event_destroy;
    t->event_record = gf__stub_event_record;
    t->stream_wait_event = gf__stub_stream_wait_event;
    t->event_synchronize = gf__stub_event_synchronize;
    t->event_query = gf__stub_event_query;
    t->event_failure = gf__stub_event_failure;
    t->event_elapsed_ms = gf__stub_event_elapsed_ms;
    t->module_load = gf__stub_module_load;
    t->module_unload = gf__stub_module_unload;
    t->kernel_get = gf__stub_kernel_get;
    t->launch = gf__stub_launch;
    t->buffer_wrap = gf__stub_buffer_wrap;
    t->fill_wide = gf__stub_fill_wide;
    t->describe_stream = gf__stub_describe_stream;
    t->peer_can_access = gf__stub_peer_can_access;
    t->peer_enable = gf__stub_peer_enable;
    t->copy_peer = gf__stub_copy;               /* host memory on both sides */
    t->stream_wait_peer = gf__stub_stream_wait_event;   /* stub events are host objects */
    t->external_types = gf__stub_external_types;
    t->buffer_import = gf__stub_buffer_import;
    t->buffer_export = gf__stub_buffer_export;
    t->semaphore_create = gf__stub_semaphore_create;
    t->semaphore_import = gf__stub_semaphore_import;
    t->semaphore_export = gf__stub_semaphore_export;
    t->semaphore_destroy = gf__stub_semaphore_destroy;
    t->semaphore_signal = gf__stub_semaphore_signal;
    t->semaphore_wait = gf__stub_semaphore_wait;
}
static gf__backend gf__stub_table;
static const gf__backend *gf__stub_backend(void) { return gf__backend_once(&gf__stub_table, gf__stub_fill_table); }

/* ---- backend headers: the registry's other half ------------------------------------- >>registry */
/* GPUFLOW_<ID> with the implementation pulls in gpuflow_<name>.h from this file's own directory
   (including it yourself as well is fine); a backend not compiled in gets the getter that says
   so. One block per vendor backend. */
GF__UNUSED_DECL static const gf__backend *gf__backend_not_compiled(void) { return NULL; }
#ifdef GPUFLOW_CUDA
#  if defined(__has_include)
#    if !__has_include("gpuflow_cuda.h")
#      error "gpuflow: GPUFLOW_CUDA needs gpuflow_cuda.h in the same directory as gpuflow.h (it ships with gpuflow: copy it beside gpuflow.h)"
#    endif
#  endif
#  include "gpuflow_cuda.h"
#else
#  define gf__cuda_backend gf__backend_not_compiled
#endif
#ifdef GPUFLOW_HIP
#  if defined(__has_include)
#    if !__has_include("gpuflow_hip.h")
#      error "gpuflow: GPUFLOW_HIP needs gpuflow_hip.h in the same directory as gpuflow.h (it ships with gpuflow: copy it beside gpuflow.h)"
#    endif
#  endif
#  include "gpuflow_hip.h"
#else
#  define gf__hip_backend gf__backend_not_compiled
#endif
#ifdef GPUFLOW_OPENCL
#  if defined(__has_include)
#    if !__has_include("gpuflow_opencl.h")
#      error "gpuflow: GPUFLOW_OPENCL needs gpuflow_opencl.h in the same directory as gpuflow.h (it ships with gpuflow: copy it beside gpuflow.h)"
#    endif
#  endif
#  include "gpuflow_opencl.h"
#else
#  define gf__opencl_backend gf__backend_not_compiled
#endif

static const gf__backend *gf__backend_of(gf_backend b) {
#define GF__BACKEND_CASE_ROW(ID, name) case GF_BACKEND_##ID: return gf__##name##_backend();
    switch (b) {
    GF__BACKENDS(GF__BACKEND_CASE_ROW)
    default: return NULL;
    }
#undef GF__BACKEND_CASE_ROW
}

#endif /* GPUFLOW_IMPLEMENTATION */


/*
    zlib/libpng license

    Copyright (c) 2026 the gpuflow authors

    This software is provided 'as-is', without any express or implied warranty. In no event
    will the authors be held liable for any damages arising from the use of this software.

    Permission is granted to anyone to use this software for any purpose, including
    commercial applications, and to alter it and redistribute it freely, subject to the
    following restrictions:

    1. The origin of this software must not be misrepresented; you must not claim that you
       wrote the original software. If you use this software in a product, an acknowledgment
       in the product documentation would be appreciated but is not required.
    2. Altered source versions must be plainly marked as such, and must not be
       misrepresented as being the original software.
    3. This notice may not be removed or altered from any source distribution.
*/
