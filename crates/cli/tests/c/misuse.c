/* Annotations used wrongly, and a program that dies: the program must keep
 * running and the trace say what happened. Usage: misuse unbalanced|killed */
#include "critpath.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "unbalanced";
    if (strcmp(what, "unbalanced") == 0) {
        cp_begin_sm("outer");
        cp_state("work");
        cp_end_sm("never-begun");      /* no such SM on this thread */
        cp_recv(4242, "got");          /* no send of 4242 anywhere */
        cp_begin_sm("inner");
        cp_state("inner-work");
        cp_end_sm("outer");            /* inner is still on top */
        puts("still running");
        return 0;
    }
    cp_begin_sm("doomed");
    cp_state("before-flush");
    cp_flush();
    cp_state("after-flush");
    fflush(stdout);
    raise(SIGKILL);
    return 0;
}
