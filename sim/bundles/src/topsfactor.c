/* SIMULATOR: stand-in libtopsfactor.so (gcu.topsrider sim/bundles), not Enflame code. */
#include "tops_version.h"

int topsFactorGetVersion(int *version) {
    if (!version) return 1;
    *version = TOPS_VERSION_CODE;
    return 0;
}

const char *topsFactorGetVersionString(void) { return TOPS_VERSION_STRING; }

const char topsfactor_simulator_note[] = "SIMULATED TopsFactor " TOPS_VERSION_STRING " (gcu.topsrider sim)";
