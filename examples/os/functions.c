/* Function-level states from uprobes: each request calls parse() (2 ms of
 * work) then compute() (8 ms). Recorded with
 *
 *   critpath record --functions ./functions:* -o fn.data -- ./functions
 *
 * the main thread's running time splits into running:parse and
 * running:compute (about 20% and 80% of the path).
 * Usage: functions [REQUESTS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Inlined into each function, so that the time is the caller's. The
 * work is measured in the thread's own CPU time, so a loaded machine
 * stretches it with runnable time but never shortens it. */
#define SPIN(us)                                                                     \
    do {                                                                             \
        struct timespec a_, b_;                                                      \
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a_);                                 \
        do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b_);                              \
        while ((b_.tv_sec - a_.tv_sec) * 1000000L + (b_.tv_nsec - a_.tv_nsec) / 1000 \
               < (us));                                                              \
    } while (0)

__attribute__((noinline)) void parse(void) { SPIN(2000); }
__attribute__((noinline)) void compute(void) { SPIN(8000); }
__attribute__((noinline)) void handle(void) {
    parse();
    compute();
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20;
    for (int i = 0; i < n; i++) handle();
    printf("functions: %d requests\n", n);
    return 0;
}
