/* Names longer than the 1024 bytes a name keeps, of 2- and 3-byte UTF-8
 * characters ("x" and 600 e-acutes, 400 euro signs): byte 1024 falls
 * inside a character of each. */
#include "critpath.h"
#include <string.h>

int main(void) {
    static char two[1 + 600 * 2 + 1], three[400 * 3 + 1];
    two[0] = 'x';
    for (int i = 0; i < 600; i++) memcpy(two + 1 + 2 * i, "\xc3\xa9", 2);
    for (int i = 0; i < 400; i++) memcpy(three + 3 * i, "\xe2\x82\xac", 3);
    cp_begin_sm("long");
    cp_state(two);
    cp_state(three);
    cp_end_sm("long");
    return 0;
}
