/* A three-stage pipeline annotated with critpath.h: stage 2 is the
 * bottleneck (1 ms of work per item against 0.2 ms in stages 1 and 3).
 *
 *   cc -O2 -pthread -I sdk/c examples/annotated/pipeline.c -o pipeline
 *   CRITPATH_OUT=pipeline.annot ./pipeline && critpath analyze pipeline.annot
 *
 * Each stage is a state machine. It depends on the previous stage for its
 * next item (a cp_recv of the id that stage sent) and, when its output
 * queue is full, on the next stage taking an item; it is in the open waits
 * `idle` and `full` only while it really waits. Usage: pipeline [ITEMS]
 * [STAGE2_US] [STAGE1_AND_3_US]
 */
#include "critpath.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define QCAP 4

struct queue {
    int items[QCAP];
    int head, len;
    pthread_mutex_t m;
    pthread_cond_t not_empty, not_full;
};

static void q_init(struct queue *q) {
    q->head = q->len = 0;
    pthread_mutex_init(&q->m, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
}

/* Annotate a dependence where the thread waits for it: only when the queue
 * is full (or empty) does a put (or get) depend on the other stage. Both
 * return whether they waited. */
static int q_put(struct queue *q, int v) {
    pthread_mutex_lock(&q->m);
    int waited = q->len == QCAP;
    if (waited) cp_wait("full", NULL, NULL);
    while (q->len == QCAP) pthread_cond_wait(&q->not_full, &q->m);
    q->items[(q->head + q->len++) % QCAP] = v;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->m);
    return waited;
}

static int q_get(struct queue *q, int *waited) {
    pthread_mutex_lock(&q->m);
    *waited = q->len == 0;
    if (*waited) cp_wait("idle", NULL, NULL);
    while (q->len == 0) pthread_cond_wait(&q->not_empty, &q->m);
    int v = q->items[q->head];
    q->head = (q->head + 1) % QCAP;
    q->len--;
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->m);
    return v;
}

/* Burns CPU for `us` microseconds of the thread's own CPU time: the same
 * work on a loaded machine (where waits for a CPU come on top). */
static void work(long us) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static int items = 200;
static long stage_us[3] = {200, 1000, 200};
static struct queue q12, q23;

/* Link ids: item i handed from stage s to s+1 is i*8+s+1; the slot it
 * leaves in the queue into stage s (taken by stage s) is i*8+s+4. */
#define HANDOFF(i, s) ((uint64_t)(i) * 8 + (uint64_t)(s) + 1)
#define SLOT(i, s) ((uint64_t)(i) * 8 + (uint64_t)(s) + 4)

static void *stage(void *arg) {
    int s = (int)(long)arg;
    static const char *names[3] = {"stage1", "stage2", "stage3"};
    struct queue *in = s == 1 ? &q12 : &q23, *out = s == 0 ? &q12 : &q23;
    cp_begin_sm(names[s]);
    for (int i = 0; i < items; i++) {
        int item = i;
        if (s > 0) {
            /* Depends on the previous stage's item (waiting when it is not
             * there yet). */
            int waited;
            item = q_get(in, &waited);
            if (waited)
                cp_recv(HANDOFF(item, s - 1), "work");
            else
                cp_state("work");
            cp_send(SLOT(item, s));
        } else {
            cp_state("work");
        }
        work(stage_us[s]);
        if (s < 2) {
            cp_send(HANDOFF(item, s));
            /* The queue holds QCAP items: a put that waited depended on
             * the next stage taking item - QCAP. */
            if (q_put(out, item)) cp_recv(SLOT(item - QCAP, s + 1), "put");
        }
    }
    cp_end_sm(names[s]);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) items = atoi(argv[1]);
    if (argc > 2) stage_us[1] = atol(argv[2]);
    if (argc > 3) stage_us[0] = stage_us[2] = atol(argv[3]);
    q_init(&q12);
    q_init(&q23);
    pthread_t t[3];
    for (long s = 0; s < 3; s++) pthread_create(&t[s], NULL, stage, (void *)s);
    for (int s = 0; s < 3; s++) pthread_join(t[s], NULL);
    printf("pipeline: %d items through 3 stages (stage 2: %ld us per item)\n", items, stage_us[1]);
    return 0;
}
