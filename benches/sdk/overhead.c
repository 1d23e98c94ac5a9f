/* Cost of one annotation event of the C SDK: run with CRITPATH_OUT set and
 * unset. Usage: overhead [EVENTS] */
#include "critpath.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    cp_begin_sm("bench");
    uint64_t t0 = cp__now();
    for (long i = 0; i < n; i++) cp_state((i & 1) ? "a" : "b");
    uint64_t t1 = cp__now();
    cp_end_sm("bench");
    printf("c: %.1f ns/event (%ld events, CRITPATH_OUT %s)\n", (double)(t1 - t0) / n, n, getenv("CRITPATH_OUT") ? "set" : "unset");
    return 0;
}
