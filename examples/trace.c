/* trace.c -- profile a pipeline and a flow, and look at their timeline.

   gf_profiler_enable times every operation on the device's streams with timing events (taken
   from the device's event pool, not created per operation). gf_profiler_write_trace writes
   a Chrome trace: open trace.json in https://ui.perfetto.dev or chrome://tracing to see one
   track per stream, one span per copy, fill or kernel, the spans of gf_range_push / _pop
   (nested) around them, each flow task as a span of its name, and arrows where a stream waited
   for another. This example also writes trace.html, a self-contained page that draws the same
   timeline, for a quick look in any browser.

   Two things run at once: a pipeline of chunks on a stream set (each chunk a range, with a
   nested "compute" range around its two kernel passes) that a side stream checks in on, and a
   small flow on a stream pool whose two branches land on two streams, joined by event waits.

   Build and run:
       cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. examples/trace.c -o trace -pthread -ldl && ./trace
*/
#include "example.h"

enum { DEPTH = 3, CHUNKS = 9, CHUNK = 1 << 16 };

/* trace.html: the trace JSON inside a page whose script draws a track per stream: ranges as
   nested bars above the operations they enclose, and an arrow from the operation a waited-for
   event followed to the end of the wait. (Pieces, each under C99's 4095-character literal.) */
static const char html_head[] =
    "<!doctype html><meta charset=utf-8><title>gpuflow trace</title>\n"
    "<style>body{font:13px sans-serif;margin:16px;background:#fff}h3{margin:0 0 8px}"
    "text{font:12px sans-serif}.r{font-size:11px}</style>\n"
    "<h3>gpuflow trace</h3><svg id=t></svg><script>\nconst trace=";
static const char *const html_tail[] = {
    ";\nconst ev=trace.traceEvents,names={},X=ev.filter(e=>e.ph=='X'),proc=ev.find(e=>e.name=='process_name');\n"
    "ev.filter(e=>e.ph=='M'&&e.name=='thread_name').forEach(e=>names[e.tid]=e.args.name);\n"
    "const tids=[...new Set(X.map(e=>e.tid))].sort((a,b)=>a-b),end=Math.max(1,...X.map(e=>e.ts+e.dur));\n"
    "const esc=v=>String(v).replace(/[&<>]/g,c=>'&#'+c.charCodeAt(0)+';');\n"
    "const W=1360,L=130,RH=18,OH=24,G=14,T=30,sx=(W-L-14)/end,px=t=>L+t*sx;\n"
    "const col={copy:'#4e79a7',fill:'#59a14f',launch:'#e15759',callback:'#b07aa1',graph:'#f28e2b',wait:'#9c9590'};\n"
    "const rcol=['#f5cf6e','#fae1a0','#fdefca'];\n"
    "/* a track: a row per level of open ranges, then the row of operations */\n"
    "const rows={},Y={};let y=T;\n"
    "tids.forEach(t=>{const open=[];rows[t]=0;\n"
    "  X.filter(e=>e.tid==t&&e.cat=='range').sort((a,b)=>a.ts-b.ts||b.dur-a.dur).forEach(e=>{\n"
    "    while(open.length&&open[open.length-1]<=e.ts)open.pop();\n"
    "    e.depth=open.length;open.push(e.ts+e.dur);rows[t]=Math.max(rows[t],open.length);});\n"
    "  Y[t]=y;y+=rows[t]*RH+OH+G;});\n"
    "const opY=t=>Y[t]+rows[t]*RH,H=y+34;\n"
    "let s=`<defs><marker id=arrow viewBox='0 0 10 10' refX=9 refY=5 markerWidth=6 markerHeight=6 orient=auto>`+\n"
    "  `<path d='M0,0 L10,5 L0,10 z' fill=#111 /></marker></defs><rect width=${W} height=${H} fill=#fff />`;\n"
    "tids.forEach((t,i)=>{s+=`<rect x=0 y=${Y[t]-G/2} width=${W} height=${rows[t]*RH+OH+G} fill=${i%2?'#fff':'#f4f5f7'} />`+\n"
    "  `<text x=8 y=${opY(t)+OH/2+4} font-weight=bold>${esc(names[t]||t)}</text>`;});\n"
    "/* time axis: a tick every 1, 2 or 5 times a power of ten ms */\n"
    "const ms=end/1000,p10=Math.pow(10,Math.floor(Math.log10(ms/10))),step=[1,2,5,10].map(k=>k*p10).find(v=>ms/v<=12);\n"
    "for(let k=0;k*step<=ms;k++){const x=px(k*step*1000);\n"
    "  s+=`<line x1=${x} x2=${x} y1=${T-8} y2=${y-G/2} stroke=#e2e2e2 /><text x=${x} y=${T-12} text-anchor=middle fill=#777>${+(k*step).toFixed(3)} ms</text>`;}\n",

    "const label=(e,x,w,yy,fill,cls)=>w>e.name.length*(cls?6:6.8)+8?`<text class='${cls}' x=${x+4} y=${yy} fill=${fill}>${esc(e.name)}</text>`:'';\n"
    "/* ranges: the name inside, or beside a narrow one where the row has room */\n"
    "const R=X.filter(e=>e.cat=='range');\n"
    "R.forEach(e=>{const x=px(e.ts),w=Math.max(1,e.dur*sx),yy=Y[e.tid]+e.depth*RH,tw=e.name.length*6+8;\n"
    "  const next=Math.min(W,...R.filter(f=>f.tid==e.tid&&f.depth==e.depth&&f.ts>e.ts).map(f=>px(f.ts)));\n"
    "  const lab=label(e,x,w,yy+RH-7,'#4a3700','r')||(next-x-w>tw?label(e,x+w,tw+1,yy+RH-7,'#4a3700','r'):'');\n"
    "  s+=`<g><title>${esc(e.name)}: ${(e.dur/1000).toFixed(3)} ms</title><rect x=${x} y=${yy} width=${w} height=${RH-3} rx=2 `+\n"
    "    `fill=${rcol[e.depth%3]} stroke=#b8902e stroke-width=0.8 />${lab}</g>`;});\n"
    "X.filter(e=>e.cat!='range').forEach(e=>{const x=px(e.ts),w=Math.max(2,e.dur*sx),yy=opY(e.tid),b=e.args&&e.args.bytes;\n"
    "  s+=`<g><title>${esc(e.name)} (${e.cat}): ${(e.dur/1000).toFixed(3)} ms${b?', '+b+' bytes':''}</title><rect x=${x} y=${yy} `+\n"
    "    `width=${w} height=${OH} fill=${col[e.cat]||'#999'} stroke=#fff stroke-width=0.6 />${label(e,x,w,yy+OH/2+4,'#fff','')}</g>`;});\n"
    "/* arrows: the 's' event sits on the op the waited event followed, the 'f' event on the wait */\n"
    "const at=(tid,ts,ok)=>X.find(e=>e.tid==tid&&Math.abs(e.ts-ts)<0.01&&ok(e));\n"
    "ev.filter(e=>e.ph=='s').forEach(a=>{const b=ev.find(f=>f.ph=='f'&&f.id==a.id);if(!b||!(b.tid in Y))return;\n"
    "  const p=at(a.tid,a.ts,e=>e.cat!='range'),q=at(b.tid,b.ts,e=>e.cat=='wait'),down=Y[b.tid]>Y[a.tid];\n"
    "  const x1=px(p?p.ts+p.dur:a.ts),x2=px(q?q.ts+q.dur:b.ts),y1=opY(a.tid)+(down?OH:0),y2=opY(b.tid)+(down?0:OH),m=(y1+y2)/2;\n"
    "  const d=`M${x1},${y1} C${x1},${m} ${x2},${m} ${x2},${y2}`;\n"
    "  s+=`<path d='${d}' fill=none stroke=#fff stroke-width=5 /><path d='${d}' fill=none stroke=#111 stroke-width=1.8 marker-end=url(#arrow) />`;});\n"
    "/* legend */\n"
    "let lx=L;const ly=y,key=(sw,text)=>{s+=sw+`<text x=${lx+22} y=${ly+11}>${text}</text>`;lx+=text.length*6.6+44;};\n"
    "Object.keys(col).filter(k=>X.some(e=>e.cat==k)).forEach(k=>key(`<rect x=${lx} y=${ly} width=14 height=14 fill=${col[k]} />`,k));\n"
    "key(`<rect x=${lx} y=${ly} width=14 height=14 rx=2 fill=${rcol[0]} stroke=#b8902e />`,'range (gf_range_push; a flow task)');\n"
    "key(`<path d='M${lx},${ly+7} h16' stroke=#111 stroke-width=1.8 marker-end=url(#arrow) />`,'a stream waits for the op the arrow leaves');\n"
    "s+=`<text x=${W-14} y=${ly+11} text-anchor=end fill=#555>${(end/1000).toFixed(2)} ms in all</text>`;\n"
    "if(proc)document.querySelector('h3').textContent='gpuflow trace: '+proc.args.name;\n"
    "const svg=document.getElementById('t');svg.setAttribute('width',W);svg.setAttribute('height',H);svg.innerHTML=s;\n"
    "</script>\n"
};

static int write_html(const char *json_path, const char *html_path) {
    FILE *in = fopen(json_path, "rb"), *out = fopen(html_path, "wb");
    int ch, prev = 0;
    size_t k;
    if (!in || !out) { if (in) fclose(in); if (out) fclose(out); return 0; }
    fputs(html_head, out);
    while ((ch = fgetc(in)) != EOF) {   /* "</" as "<\/": a label cannot end the script */
        if (ch == '/' && prev == '<') fputc('\\', out);
        fputc(prev = ch, out);
    }
    for (k = 0; k < sizeof html_tail / sizeof html_tail[0]; k++) fputs(html_tail[k], out);
    fclose(in);
    return fclose(out) == 0;
}

/* The flow: load --> scale_a --> gather, and load --> scale_b --> gather. A chain stays on one
   stream, so scale_b opens a second one: load -> scale_b and scale_b -> gather cross streams,
   each an event wait (an arrow in the trace). */
typedef struct { gf_kernel *scale; gf_buffer *a, *b; float *host; } job;

static gf_result scale_buf(gf_stream *s, gf_kernel *k, gf_buffer *buf, float a, float b) {
    unsigned n = CHUNK;
    gf_arg args[] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
    return gf_launch(s, k, example_dims(n), args, 4);
}
static gf_result load(gf_stream *s, void *user) {   /* upload, a normalizing pass, a copy for b */
    job *j = (job *)user;
    gf_result r = gf_copy_to_device_async(s, j->a, 0, j->host, CHUNK * sizeof(float));
    if (r == GF_OK) r = scale_buf(s, j->scale, j->a, 0.5f, 0.0f);
    return r != GF_OK ? r : gf_copy_buffer_async(s, j->b, 0, j->a, 0, CHUNK * sizeof(float));
}
static gf_result scale_a(gf_stream *s, void *user) { job *j = (job *)user; return scale_buf(s, j->scale, j->a, 2.0f, 0.0f); }
static gf_result scale_b(gf_stream *s, void *user) { job *j = (job *)user; return scale_buf(s, j->scale, j->b, 3.0f, 0.0f); }
static gf_result gather(gf_stream *s, void *user) {
    job *j = (job *)user;
    gf_result r = gf_copy_to_host_async(s, j->host, j->a, 0, CHUNK * sizeof(float));
    return r != GF_OK ? r : gf_copy_to_host_async(s, j->host + CHUNK, j->b, 0, CHUNK * sizeof(float));
}

int main(void) {
    gf_device *dev;
    gf_stream_set *set;
    gf_stream *side;
    gf_stream_desc side_desc = { .label = "side \"checks\"" };
    gf_stream_pool *pool;
    gf_stream_pool_desc pool_desc = { .count = 2, .strategy = GF_POOL_ROUND_ROBIN, .label = "flow" };
    gf_flow *flow;
    gf_flow_stats fstats;
    gf_task t_load, t_a, t_b, t_gather;
    gf_event *done;
    gf_module *mod;
    gf_kernel *scale;
    gf_module_desc desc = example_module_desc();
    gf_buffer *bufs[DEPTH];
    gf_profile_report report;
    job j;
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
    CHECK(gf_stream_pool_create(dev, &pool_desc, &pool));   /* streams "flow/0", "flow/1" */
    CHECK(gf_event_create(dev, 0, &done));
    for (s = 0; s < DEPTH; s++) CHECK(gf_buffer_create(dev, CHUNK * sizeof(float), &bufs[s]));
    CHECK(gf_host_alloc(dev, (size_t)CHUNKS * CHUNK * sizeof(float), (void **)&host));
    for (i = 0; i < (unsigned)CHUNKS * CHUNK; i++) host[i] = 1.0f;

    j.scale = scale;   /* the flow has buffers and host memory of its own */
    CHECK(gf_buffer_create(dev, CHUNK * sizeof(float), &j.a));
    CHECK(gf_buffer_create(dev, CHUNK * sizeof(float), &j.b));
    CHECK(gf_host_alloc(dev, 2 * CHUNK * sizeof(float), (void **)&j.host));
    for (i = 0; i < 2 * CHUNK; i++) j.host[i] = 1.0f;
    CHECK(gf_flow_create(dev, NULL, &flow));
    CHECK(gf_flow_add(flow, "load", load, &j, &t_load));
    CHECK(gf_flow_add(flow, "scale_a", scale_a, &j, &t_a));
    CHECK(gf_flow_add(flow, "scale_b", scale_b, &j, &t_b));
    CHECK(gf_flow_add(flow, "gather", gather, &j, &t_gather));
    CHECK(gf_flow_depend(flow, t_load, t_a));
    CHECK(gf_flow_depend(flow, t_load, t_b));
    CHECK(gf_flow_depend(flow, t_a, t_gather));
    CHECK(gf_flow_depend(flow, t_b, t_gather));

    for (i = 0; i < CHUNKS; i++) {
        gf_stream *st;
        gf_buffer *buf = bufs[i % DEPTH];
        gf_arg args[] = { GF_ARG_BUFFER(buf), GF_ARG(n), GF_ARG(a), GF_ARG(b) };
        char name[32];
        snprintf(name, sizeof name, "chunk %u", i);
        CHECK(gf_stream_set_next(set, i, &st));
        gf_range_push(st, name);                 /* a range around the chunk's work ... */
        CHECK(gf_copy_to_device_async(st, buf, 0, host + (size_t)i * CHUNK, CHUNK * sizeof(float)));
        gf_range_push(st, "compute");            /* ... and one nested in it around two passes */
        CHECK(gf_launch(st, scale, example_dims(n), args, 4));
        CHECK(gf_launch(st, scale, example_dims(n), args, 4));
        gf_range_pop(st);
        CHECK(gf_copy_to_host_async(st, host + (size_t)i * CHUNK, buf, 0, CHUNK * sizeof(float)));
        gf_range_pop(st);
        if (i % DEPTH == DEPTH - 1) {   /* the side stream checks in after every round */
            CHECK(gf_event_record(done, st));
            CHECK(gf_stream_wait_event(side, done));
            CHECK(gf_fill_async(side, bufs[0], 0, 0, 64));
        }
        if (i == 0) CHECK(gf_flow_run(flow, pool));   /* the flow runs beside the pipeline */
    }
    CHECK(gf_stream_set_synchronize(set));
    CHECK(gf_stream_synchronize(side));
    CHECK(gf_stream_pool_synchronize(pool));

    CHECK(gf_profiler_report(dev, &report));
    CHECK(gf_flow_get_stats(flow, &fstats));
    printf("%llu operations on %d streams, %.3f ms from first to last; the flow: %llu tasks, %llu cross-stream edges\n",
           (unsigned long long)report.total_ops, report.stream_count, report.span_ms,
           (unsigned long long)fstats.tasks_run, (unsigned long long)fstats.cross_edges);
    for (k = 0; k < report.stream_count; k++) {
        const gf_profile_stream *ps = &report.streams[k];
        printf("  %-14s copies %llu, launches %llu, waits %llu, ranges %llu, %8.3f ms busy, longest: %s %.3f ms\n",
               ps->label, (unsigned long long)ps->ops[GF_OP_COPY], (unsigned long long)ps->ops[GF_OP_LAUNCH],
               (unsigned long long)ps->ops[GF_OP_WAIT], (unsigned long long)ps->ops[GF_OP_RANGE], ps->busy_ms,
               ps->longest[0].name, ps->longest[0].duration_ms);
    }
    CHECK(gf_profiler_write_trace(dev, "trace.json"));
    if (!write_html("trace.json", "trace.html")) { fprintf(stderr, "cannot write trace.html\n"); return 1; }
    printf("wrote trace.json (open in https://ui.perfetto.dev) and trace.html\n");

    gf_flow_destroy(flow);
    gf_host_free(dev, j.host);
    gf_buffer_destroy(j.a);
    gf_buffer_destroy(j.b);
    gf_host_free(dev, host);
    for (s = 0; s < DEPTH; s++) gf_buffer_destroy(bufs[s]);
    gf_event_destroy(done);
    gf_stream_pool_destroy(pool);
    gf_stream_destroy(side);
    gf_stream_set_destroy(set);
    gf_module_destroy(mod);
    gf_device_close(dev);
    return 0;
}
