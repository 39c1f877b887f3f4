/* trace.c -- profile a pipeline and look at its timeline.

   gf_profiler_enable times every operation on the device's streams with timing events (taken
   from the device's event pool, not created per operation). gf_profiler_write_trace writes
   a Chrome trace: open trace.json in https://ui.perfetto.dev or chrome://tracing to see one
   track per stream, one span per copy, fill or kernel, and arrows where a stream waited for
   another. This example also writes trace.html, a self-contained page that draws the same
   timeline, for a quick look in any browser.

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/trace.c -o trace -pthread -ldl && ./trace
*/
#include "example.h"

enum { DEPTH = 3, CHUNKS = 9, CHUNK = 1 << 16 };

/* trace.html: the trace JSON inside a page whose script draws a lane per stream. */
static int write_html(const char *json_path, const char *html_path) {
    static const char head[] =
        "<!doctype html><meta charset=utf-8><title>gpuflow trace</title>\n"
        "<style>body{font:13px sans-serif;margin:16px;background:#fff}text{font:12px sans-serif}</style>\n"
        "<h3>gpuflow trace</h3><svg id=t></svg><script>\nconst trace=";
    static const char tail[] =
        ";\nconst ev=trace.traceEvents, names={}, spans=ev.filter(e=>e.ph=='X');\n"
        "ev.filter(e=>e.ph=='M'&&e.name=='thread_name').forEach(e=>names[e.tid]=e.args.name);\n"
        "const tids=[...new Set(spans.map(e=>e.tid))], end=Math.max(...spans.map(e=>e.ts+e.dur));\n"
        "const W=1100, L=150, H=34, sx=(W-L-10)/end, col={copy:'#4e79a7',fill:'#59a14f',launch:'#e15759',\n"
        "  callback:'#b07aa1',graph:'#f28e2b',wait:'#bab0ac'};\n"
        "let s=`<rect width=${W} height=${tids.length*H+40} fill=#fafafa />`;\n"
        "tids.forEach((t,i)=>{s+=`<text x=4 y=${i*H+22}>${names[t]||t}</text><line x1=${L} x2=${W} y1=${i*H+30} y2=${i*H+30} stroke=#ddd />`;});\n"
        "spans.forEach(e=>{const i=tids.indexOf(e.tid);s+=`<rect x=${L+e.ts*sx} y=${i*H+6} width=${Math.max(1,e.dur*sx)} height=${H-10} fill=${col[e.cat]} ><title>${e.name} ${e.dur.toFixed(1)} us</title></rect>`;});\n"
        "const at={};spans.forEach(e=>at[e.tid+':'+e.ts]=e);\n"
        "ev.filter(e=>e.ph=='s').forEach(a=>{const b=ev.find(f=>f.ph=='f'&&f.id==a.id);if(!b)return;\n"
        "  const y1=tids.indexOf(a.tid)*H+H/2,y2=tids.indexOf(b.tid)*H+H/2;\n"
        "  s+=`<line x1=${L+a.ts*sx} y1=${y1} x2=${L+b.ts*sx} y2=${y2} stroke=#333 stroke-dasharray=3,2 />`;});\n"
        "Object.entries(col).forEach(([k,c],i)=>{s+=`<rect x=${L+i*110} y=${tids.length*H+14} width=12 height=12 fill=${c} /><text x=${L+i*110+16} y=${tids.length*H+25}>${k}</text>`;});\n"
        "s+=`<text x=${W-200} y=${tids.length*H+25}>${(end/1000).toFixed(2)} ms in all</text>`;\n"
        "const svg=document.getElementById('t');svg.setAttribute('width',W);svg.setAttribute('height',tids.length*H+40);svg.innerHTML=s;\n"
        "</script>\n";
    FILE *in = fopen(json_path, "rb"), *out = fopen(html_path, "wb");
    int ch;
    if (!in || !out) { if (in) fclose(in); if (out) fclose(out); return 0; }
    fputs(head, out);
    while ((ch = fgetc(in)) != EOF) fputc(ch, out);
    fputs(tail, out);
    fclose(in);
    return fclose(out) == 0;
}

int main(void) {
    gf_device *dev;
    gf_stream_set *set;
    gf_stream *side;
    gf_stream_desc side_desc = { "side \"checks\"", GF_PRIORITY_NORMAL };
    gf_event *done;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();
    gf_buffer *bufs[DEPTH];
    gf_profile_report report;
    float *host;
    unsigned n = CHUNK, i;
    float a = 0.5f, b = 2.0f;
    int s, k;

    CHECK(gf_device_open(GF_BACKEND_AUTO, 0, &dev));
    CHECK(gf_profiler_enable(dev, GF_PROFILE_ON));
    CHECK(gf_module_load(dev, &desc, &mod));
    CHECK(gf_kernel_get(mod, "scale", &scale));
    CHECK(gf_stream_set_create(dev, DEPTH, "pipeline", &set));
    CHECK(gf_stream_create(dev, &side_desc, &side));
    CHECK(gf_event_create(dev, 0, &done));
    for (s = 0; s < DEPTH; s++) CHECK(gf_buffer_create(dev, CHUNK * sizeof(float), &bufs[s]));
    CHECK(gf_host_alloc(dev, (size_t)CHUNKS * CHUNK * sizeof(float), (void **)&host));
    for (i = 0; i < (unsigned)CHUNKS * CHUNK; i++) host[i] = 1.0f;

    for (i = 0; i < CHUNKS; i++) {
        gf_stream *st;
        gf_buffer *buf = bufs[i % DEPTH];
        gf_arg args[] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
        CHECK(gf_stream_set_next(set, i, &st));
        CHECK(gf_copy_to_device_async(st, buf, 0, host + (size_t)i * CHUNK, CHUNK * sizeof(float)));
        CHECK(gf_launch(st, scale, example_dims(n), args, 4));
        CHECK(gf_copy_to_host_async(st, host + (size_t)i * CHUNK, buf, 0, CHUNK * sizeof(float)));
        if (i % DEPTH == DEPTH - 1) {   /* the side stream checks in after every round */
            CHECK(gf_event_record(done, st));
            CHECK(gf_stream_wait_event(side, done));
            CHECK(gf_fill_async(side, bufs[0], 0, 0, 64));
        }
    }
    CHECK(gf_stream_set_synchronize(set));
    CHECK(gf_stream_synchronize(side));

    CHECK(gf_profiler_report(dev, &report));
    printf("%llu operations on %d streams, %.3f ms from first to last\n",
           (unsigned long long)report.total_ops, report.stream_count, report.span_ms);
    for (k = 0; k < report.stream_count; k++) {
        const gf_profile_stream *ps = &report.streams[k];
        printf("  %-16s copies %llu, launches %llu, waits %llu, %8.3f ms busy, longest: %s %.3f ms\n", ps->label,
               (unsigned long long)ps->ops[GF_OP_COPY], (unsigned long long)ps->ops[GF_OP_LAUNCH],
               (unsigned long long)ps->ops[GF_OP_WAIT], ps->busy_ms, ps->longest[0].name, ps->longest[0].duration_ms);
    }
    CHECK(gf_profiler_write_trace(dev, "trace.json"));
    if (!write_html("trace.json", "trace.html")) { fprintf(stderr, "cannot write trace.html\n"); return 1; }
    printf("wrote trace.json (open in https://ui.perfetto.dev) and trace.html\n");

    gf_host_free(dev, host);
    for (s = 0; s < DEPTH; s++) gf_buffer_destroy(bufs[s]);
    gf_event_destroy(done);
    gf_stream_destroy(side);
    gf_stream_set_destroy(set);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}
