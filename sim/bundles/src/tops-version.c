/* SIMULATOR: `tops-version` prints the simulated TopsRider version (gcu.topsrider sim). */
#include <stdio.h>
#include "tops_version.h"

int main(void) {
    printf("TopsRider %s (SIMULATED, gcu.topsrider sim)\n", TOPS_VERSION_STRING);
    return 0;
}
