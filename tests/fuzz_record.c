/* Fuzz target: gf_replay reading a recording (record and replay, issue "For the people who build
   on gpuflow every day"). A cut, corrupt or hostile file must replay to a result: never a
   crash, a sanitizer report, a leak or a hang. The replay runs on the stub, untrusted (what could
   run for ever is bounded), within 64 MiB of device memory, with one stub kernel that takes no
   arguments (a kernel that trusts its arguments would write where a hostile file says).

   Builds (the Makefile's fuzz and test targets):
     clang -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined tests/fuzz_record.c -o fuzz_record -pthread -ldl -lm
         ./fuzz_record -max_total_time=60 CORPUS_DIR tests/replay_corpus
     cc -std=c99 -DFUZZ_REPLAY tests/fuzz_record.c -o fuzz_record_replay -pthread -ldl -lm
         ./fuzz_record_replay DIR|FILE...   replays each input once; prints `N passed, 0 failed`
   The seed corpus (tests/replay_corpus) is written by `record stub --corpus DIR`. */
#define GPUFLOW_IMPLEMENTATION
#include "../gpuflow.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fz_empty(const gf_kernel_ctx *ctx, void *const *args) { (void)ctx; (void)args; }
static const gf_stub_kernel fz_kernels[] = { { "empty", fz_empty, 0, NULL, 0, NULL, 0 } };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gf_replay_desc d;
    gf_replay_report rep;
    memset(&d, 0, sizeof d);
    d.data = data; d.size = size;
    d.backend = GF_BACKEND_STUB;
    d.untrusted = 1;
    d.memory_limit = (size_t)64 << 20;
    d.stub_kernels = fz_kernels; d.stub_kernel_count = 1;
    (void)gf_replay(&d, &rep);
    (void)gf_faults_set(NULL);   /* a recorded fault rule ends with its input */
    return 0;
}

#ifdef FUZZ_REPLAY
#include <dirent.h>
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *d;
    long n;
    if (!f) return 0;
    fseek(f, 0, SEEK_END); n = ftell(f); fseek(f, 0, SEEK_SET);
    d = (unsigned char *)malloc((size_t)n + 1);
    if (!d || fread(d, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(d); return 0; }
    fclose(f);
    LLVMFuzzerTestOneInput(d, (size_t)n);
    free(d);
    return 1;
}
int main(int argc, char **argv)
{
    int i, passed = 0, failed = 0;
    for (i = 1; i < argc; i++) {
        DIR *dir = opendir(argv[i]);
        struct dirent *e;
        if (!dir) { if (run_file(argv[i])) passed++; else failed++; continue; }
        while ((e = readdir(dir)) != NULL) {
            char p[1024];
            if (e->d_name[0] == '.') continue;
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            if (run_file(p)) passed++; else { printf("FAIL cannot read %s\n", p); failed++; }
        }
        closedir(dir);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
#endif
