/* SIMULATOR: stand-in libtopsrt.so (gcu.topsrider sim/bundles), not Enflame code. */
#include "topsrt.h"
#include "tops_version.h"

topsError_t topsRuntimeGetVersion(int *version) {
    if (!version) return topsErrorInvalidValue;
    *version = TOPS_VERSION_CODE;
    return topsSuccess;
}

const char *topsRuntimeGetVersionString(void) { return TOPS_VERSION_STRING; }

/* Marks the library as the simulator's in `strings` output. */
const char tops_simulator_note[] = "SIMULATED TopsRider runtime " TOPS_VERSION_STRING " (gcu.topsrider sim)";
