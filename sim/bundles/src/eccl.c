/* SIMULATOR: stand-in libeccl.so (gcu.topsrider sim/bundles), not Enflame code.
 * Only the version entry points are real; collectives are simulated by the
 * stand-in torch_gcu wheel on top of gloo. */
#include "eccl.h"
#include "tops_version.h"

int ecclGetVersion(int *version) {
    if (!version) return ecclInvalidArgument;
    *version = TOPS_VERSION_CODE;
    return ecclSuccess;
}

const char *ecclGetVersionString(void) { return TOPS_VERSION_STRING; }

const char eccl_simulator_note[] = "SIMULATED ECCL " TOPS_VERSION_STRING " (gcu.topsrider sim)";
