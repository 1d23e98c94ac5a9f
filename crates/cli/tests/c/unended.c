/* SMs their threads never end: a worker thread exits with `job` begun,
 * and the process exits with `main-job` begun. Read alone, the file says
 * when each thread ended, so the last states keep their time (b: 20 ms,
 * tail: 15 ms) and a later `job` on another thread is `job` again. */
#include "critpath.h"
#include <pthread.h>
#include <time.h>

static void spin_ms(long ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ms * 1000000L);
}

static void *leaves_job(void *arg) {
    (void)arg;
    cp_begin_sm("job");
    cp_state("a");
    spin_ms(10);
    cp_state("b");
    spin_ms(20);
    return NULL; /* the thread ends with `job` begun */
}

static void *ends_job(void *arg) {
    (void)arg;
    cp_begin_sm("job");
    cp_state("c");
    spin_ms(5);
    cp_end_sm("job");
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, leaves_job, NULL);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, ends_job, NULL);
    pthread_join(t, NULL);
    cp_begin_sm("main-job");
    cp_state("tail");
    spin_ms(15);
    return 0; /* the process ends with `main-job` begun */
}
