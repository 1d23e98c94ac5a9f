/* Annotation events around work of known length, for the overhead
 * correction: state "spin" lasts 1000 ns of busy work (measured by the
 * clock, so never less), state "gap" has no work at all (its true time is
 * the loop's few ns). Usage: known [ITERATIONS] */
#include "critpath.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    cp_begin_sm("known");
    for (long i = 0; i < n; i++) {
        cp_state("spin");
        uint64_t t0 = cp__now();
        while (cp__now() - t0 < 1000) {
        }
        cp_state("gap");
    }
    cp_end_sm("known");
    return 0;
}
