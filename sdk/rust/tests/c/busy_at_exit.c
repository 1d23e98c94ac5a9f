/* Two threads record events as fast as they can while main returns: the
 * exit writer writes their whole events while they go on recording. */
#include <time.h>
#include "critpath.h"

static void *busy(void *arg) {
    (void)arg;
    cp_begin_sm("busy");
    for (unsigned long i = 0;; i++) {
        cp_state((i & 1) ? "a" : "bb");
        if ((i & 1023) == 0) cp_send(i);
    }
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, busy, NULL);
    struct timespec d = {0, 30 * 1000 * 1000};
    nanosleep(&d, NULL);
    cp_begin_sm("main");
    cp_state("report");
    return 0;
}
